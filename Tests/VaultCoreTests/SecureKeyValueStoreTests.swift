import Foundation
import Testing

@testable import VaultCore

@Suite("FormatOneStore")
struct SecureKeyValueStoreTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("test.vault") }

    // MARK: Round trips

    @Test("strings round-trip, in memory and after reopening")
    func stringRoundTrip() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        let values = ["username": "alice", "empty": "", "unicode": "pässwörd ✓ 🔑", "newline": "a\nb\0c"]
        for (key, value) in values { try store.put(value, forKey: key) }
        for (key, value) in values { #expect(try store.getString(key) == value) }
        #expect(try store.getString("missing") == nil)
        store.close()

        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        for (key, value) in values { #expect(try reopened.getString(key) == value) }
        #expect(try reopened.count == values.count)
    }

    @Test("binary values: all 256 byte values, the empty value, Data, [UInt8] and SecureBytes")
    func binaryRoundTrip() throws {
        let everyByte = [UInt8]((0...255).map { UInt8($0) })
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put(everyByte, forKey: "all-bytes")
        try store.put(Data(everyByte.reversed()), forKey: "reversed")
        try store.put([UInt8](), forKey: "empty")
        try store.put(SecureBytes([0xFF, 0x00, 0xFE]), forKey: "secure")
        store.close()

        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.getData("all-bytes") == Data(everyByte))
        #expect(try reopened.getData("reversed") == Data(everyByte.reversed()))
        #expect(try reopened.getData("empty") == Data())
        #expect(try reopened.getBytes("empty")?.count == 0)
        #expect(try reopened.getBytes("secure") == SecureBytes([0xFF, 0x00, 0xFE]))
        #expect(try reopened.getBytes("all-bytes")?.unprotectedBytes == everyByte)
        #expect(try reopened.getData("missing") == nil)
        #expect(try reopened.getBytes("missing") == nil)
        #expect(try reopened.attributes(forKey: "all-bytes")?.byteCount == 256)
    }

    struct Account: Codable, Equatable {
        var user: String
        var port: Int
        var scopes: [String]
        var expires: Date?
    }

    @Test("Codable values round-trip through putJSON(_:forKey:) and getJSON(_:as:)")
    func codableRoundTrip() throws {
        let account = Account(user: "alice", port: 8443, scopes: ["read", "write"], expires: nil)
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.putJSON(account, forKey: "account")
        try store.putJSON(42, forKey: "answer")
        try store.putJSON(["a": 1, "b": 2], forKey: "map")
        store.close()

        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.getJSON("account", as: Account.self) == account)
        #expect(try reopened.getJSON("answer", as: Int.self) == 42)
        #expect(try reopened.getJSON("map", as: [String: Int].self) == ["a": 1, "b": 2])
        #expect(try reopened.getJSON("missing", as: Account.self) == nil)
        // Stored as JSON with sorted keys.
        #expect(try reopened.getString("map") == #"{"a":1,"b":2}"#)
        #expect(throws: VaultError.typeMismatch(key: "answer", reason: "does not decode as Account")) {
            try reopened.getJSON("answer", as: Account.self)
        }
    }

    @Test("a put replaces the value and keeps the creation time")
    func overwrite() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("one", forKey: "k")
        let first = try #require(try store.attributes(forKey: "k"))
        Thread.sleep(forTimeInterval: 0.01)
        try store.put("two", forKey: "k")
        let second = try #require(try store.attributes(forKey: "k"))
        #expect(try store.getString("k") == "two")
        #expect(try store.keys() == ["k"])
        #expect(second.created == first.created)
        #expect(second.modified > first.modified)
        #expect(second.byteCount == 3)
    }

    @Test("getString on a value that is not UTF-8 throws typeMismatch")
    func getStringOnBinary() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put([0xC3, 0x28, 0xFF], forKey: "binary")
        #expect(throws: VaultError.typeMismatch(key: "binary", reason: "the value is not valid UTF-8")) {
            try store.getString("binary")
        }
        #expect(try store.getData("binary") == Data([0xC3, 0x28, 0xFF]))
    }

    // MARK: keys, remove, removeAll, update

    @Test("keys() is sorted whatever the insertion order")
    func keysSorted() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        for key in ["zulu", "alpha", "Mike", "bravo", "ä-umlaut", "10", "9"] { try store.put("v", forKey: key) }
        let expected = ["10", "9", "Mike", "alpha", "bravo", "zulu", "ä-umlaut"]
        #expect(try store.keys() == expected)
        store.close()
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.keys() == expected)
    }

    /// keys() keeps its sorted list until the contents change (the agent answers every `list` from it).
    @Test("keys() sees every change: its own writes, removals and another store's write after reload")
    func keysAfterChanges() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "b")
        #expect(try store.keys() == ["b"])
        try store.put("v", forKey: "a")
        #expect(try store.keys() == ["a", "b"])
        try store.put("w", forKey: "a")  // a value change, no name change
        #expect(try store.keys() == ["a", "b"])
        #expect(try store.remove("b"))
        #expect(try store.keys() == ["a"])
        let other = testStore(path)
        try other.open(with: testPassphrase)
        try other.put("v", forKey: "0-other")
        #expect(try store.keys() == ["a"])  // not reloaded yet: the state this store holds
        try store.reload()
        #expect(try store.keys() == ["0-other", "a"])
        try store.removeAll()
        #expect(try store.keys() == [])
    }

    @Test("a batch's requirements are checked on the file under the lock: one that fails writes nothing")
    func requirements() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "a")
        let before = try readBytes(path)
        #expect(throws: VaultError.entryExists(key: "a", path: path)) {
            try store.update { changes in
                try changes.put("x", forKey: "b")
                changes.require("a", exists: false)
            }
        }
        #expect(throws: VaultError.noSuchEntry(key: "zz", path: path)) {
            try store.update { changes in
                changes.remove("a")
                changes.require("zz", exists: true)
            }
        }
        #expect(throws: VaultError.noSuchEntry(key: "zz", path: path)) {
            try store.update { try $0.copy("zz", to: "c") }
        }
        #expect(try readBytes(path) == before)
        // Another store wrote "b" after this one read the file: the requirement sees the file, not the cache.
        let other = testStore(path)
        try other.open(with: testPassphrase)
        try other.put("theirs", forKey: "b")
        #expect(throws: VaultError.entryExists(key: "b", path: path)) {
            try store.update { changes in
                changes.require("b", exists: false)
                try changes.put("mine", forKey: "b")
            }
        }
        #expect(try other.getString("b") == "theirs")
    }

    @Test("copy reads the value before the batch; keepCreated keeps the source's creation time (a move)")
    func copyAndMove() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("one", forKey: "a")
        try store.put("two", forKey: "b")
        let created = try #require(try store.attributes(forKey: "a")).created
        usleep(5_000)
        try store.update { changes in
            try changes.copy("a", to: "moved", keepCreated: true)
            changes.remove("a")
            try changes.copy("b", to: "copied")
            try changes.put("changed", forKey: "b")  // the copy still has the value from before the batch
        }
        #expect(try store.keys() == ["b", "copied", "moved"])
        #expect(try store.getString("moved") == "one")
        #expect(try store.getString("copied") == "two")
        #expect(try store.getString("b") == "changed")
        #expect(try store.attributes(forKey: "moved")?.created == created)
        #expect(try store.attributes(forKey: "copied")?.created != created)
        // Onto an existing name: the value and, for a move, the creation time of the source.
        try store.update { changes in
            try changes.copy("moved", to: "b", keepCreated: true)
            changes.remove("moved")
        }
        #expect(try store.getString("b") == "one")
        #expect(try store.attributes(forKey: "b")?.created == created)
        store.close()
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.keys() == ["b", "copied"])
        #expect(try reopened.attributes(forKey: "b")?.created == created)
    }

    @Test("SecretGenerator: the length, only the alphabet, every symbol reachable; words from the list")
    func secretGenerator() throws {
        let digits = Array("0123456789".utf8)
        let secret = SecretGenerator.characters(count: 4096, from: digits)
        #expect(secret.count == 4096)
        #expect(Set(secret.unprotectedBytes) == Set(digits))
        let words = SecretGenerator.words(count: 8, from: ["alpha", "be"], separator: "+")
        let parts = String(decoding: words.unprotectedBytes, as: UTF8.self).split(separator: "+")
        #expect(parts.count == 8 && parts.allSatisfy { $0 == "alpha" || $0 == "be" })
        #expect(abs(SecretGenerator.entropyBits(count: 6, choices: 7776) - 77.548) < 0.001)
    }

    @Test("remove returns whether there was an entry; removing a missing key writes nothing")
    func remove() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "a")
        try store.put("w", forKey: "b")
        let generation = try #require(store.generation)
        #expect(try store.remove("missing") == false)
        #expect(store.generation == generation)
        #expect(try store.remove("a") == true)
        #expect(store.generation == generation + 1)
        #expect(try store.remove("a") == false)
        #expect(try store.keys() == ["b"])
        #expect(try store.contains("a") == false)
        store.close()
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.keys() == ["b"])
    }

    @Test("removeAll leaves an empty vault that still opens with the same passphrase")
    func removeAll() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        for index in 0..<20 { try store.put("value \(index)", forKey: "key\(index)") }
        try store.removeAll()
        #expect(try store.keys() == [])
        #expect(try store.count == 0)
        store.close()
        #expect(try readBytes(path).count == Layout.emptyFileByteCount)
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase, createIfMissing: false)
        #expect(try reopened.keys() == [])
        #expect(openError(path, passphrase: otherPassphrase) == .wrongPassphrase(path: path))
    }

    @Test("update applies several puts and removes in one write")
    func batchUpdate() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("old", forKey: "gone")
        let generation = try #require(store.generation)
        try store.update { changes in
            try changes.put("alice", forKey: "user")
            try changes.put(SecureBytes(string: "s3cret"), forKey: "password")
            changes.remove("gone")
            try changes.put("first", forKey: "twice")
            try changes.put("second", forKey: "twice")
        }
        #expect(store.generation == generation + 1)
        #expect(try store.keys() == ["password", "twice", "user"])
        #expect(try store.getString("twice") == "second")
    }

    @Test("one batch of 100,000 puts is one write (more values than the kernel allows mappings)")
    func largeBatch() throws {
        // One guarded mapping per pending value made this abort past vm.max_map_count (65,530 by default).
        let count = 100_000
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("kept", forKey: "existing")
        try store.update { changes in
            for index in 0..<count { try changes.put("value-\(index)", forKey: "entry-\(index)") }
            try changes.put("replaced", forKey: "existing")
        }
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase, createIfMissing: false)
        #expect(try reopened.keys().count == count + 1)
        #expect(try reopened.getString("entry-0") == "value-0")
        #expect(try reopened.getString("entry-65531") == "value-65531")
        #expect(try reopened.getString("entry-\(count - 1)") == "value-\(count - 1)")
        #expect(try reopened.getString("existing") == "replaced")
    }

    @Test("random puts, batches and removes match a dictionary, in memory and after reopening")
    func randomOperationsMatchAModel() throws {
        // Writes reuse the region of the plaintext they replace and the region of the last batch's values: values
        // that grow past the spare region, shrink, and vanish must still read back exactly.
        var random = SplitMix64(seed: 0x5eed_2026)
        let store = testStore(path)
        try store.create(with: testPassphrase)
        var model = [String: [UInt8]]()
        func randomValue() -> [UInt8] {
            let sizes = [0, 1, 31, 255, 4_000, 20_000]
            return (0..<sizes[Int(random.next() % UInt64(sizes.count))]).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        for step in 0..<300 {
            let name = "entry-\(random.next() % 40)"
            switch random.next() % 4 {
            case 0, 1:
                let value = randomValue()
                try store.put(value, forKey: name)
                model[name] = value
            case 2:
                #expect(try store.remove(name) == (model.removeValue(forKey: name) != nil))
            default:
                let other = "entry-\(random.next() % 40)", first = randomValue(), second = randomValue()
                try store.update { changes in
                    try changes.put(SecureBytes(first), forKey: name)
                    changes.remove(other)
                    try changes.put(SecureBytes(second), forKey: "batch-\(step % 7)")
                }
                model[name] = first
                model[other] = nil
                model["batch-\(step % 7)"] = second
            }
            #expect(try store.keys() == model.keys.sorted(), "step \(step)")
            for (key, value) in model { #expect(try store.getBytes(key)?.unprotectedBytes == value, "step \(step), \(key)") }
        }
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase, createIfMissing: false)
        #expect(try reopened.keys() == model.keys.sorted())
        for (key, value) in model { #expect(try reopened.getBytes(key)?.unprotectedBytes == value) }
    }

    @Test("canonically equivalent names are one entry (names compare as Swift Strings)")
    func canonicalEquivalence() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("precomposed", forKey: "caf\u{E9}")
        try store.put("decomposed", forKey: "cafe\u{301}")
        #expect(try store.keys().count == 1)
        #expect(try store.getString("caf\u{E9}") == "decomposed")
        // The name keeps the bytes it was first stored with.
        #expect(try store.keys().first?.utf8.elementsEqual("caf\u{E9}".utf8) == true)
    }

    // MARK: Entry names

    @Test("invalid entry names are refused with invalidEntryName and nothing is written")
    func invalidKeys() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        let generation = store.generation
        let bad: [(String, String)] = [
            ("", "the name is empty"),
            ("line\nbreak", "the name contains a control character"),
            ("nul\0byte", "the name contains a control character"),
            ("tab\tname", "the name contains a control character"),
            ("del\u{7F}", "the name contains a control character"),
            ("c1\u{85}next-line", "the name contains a control character"),
            ("csi\u{9B}31m", "the name contains a control character"),
            (String(repeating: "x", count: 4097), "the name is longer than 4096 bytes"),
            (String(repeating: "é", count: 2049), "the name is longer than 4096 bytes"),  // 4098 bytes
        ]
        for (name, reason) in bad {
            #expect(throws: VaultError.invalidEntryName(reason: reason)) { try store.put("v", forKey: name) }
            #expect(throws: VaultError.invalidEntryName(reason: reason)) { try store.update { try $0.put("v", forKey: name) } }
        }
        #expect(store.generation == generation)
        // The limits themselves are fine.
        let longest = String(repeating: "x", count: 4096)
        try store.put("v", forKey: longest)
        try store.put("v", forKey: "🔑 name with spaces / and slashes")
        #expect(try store.keys() == ["x" + String(repeating: "x", count: 4095), "🔑 name with spaces / and slashes"])
    }

    // MARK: Open, create, close

    @Test("open(with:) creates a missing vault (the tutorials' behaviour) and opens it next time")
    func openCreatesMissingVault() throws {
        let store = testStore(path)
        #expect(store.exists == false)
        try store.open(with: testPassphrase)
        #expect(store.isOpen)
        #expect(store.exists)
        #expect(store.generation == 1)
        #expect(store.kdfParameters == .insecureForTesting)
        try store.put("v", forKey: "k")
        store.close()
        #expect(!store.isOpen)

        let again = testStore(path)
        try again.open(with: testPassphrase)
        #expect(try again.getString("k") == "v")
    }

    @Test("open(with:) creates the vault and its directory when the directory does not exist")
    func openCreatesMissingDirectory() throws {
        let nested = directory.file("new/sub/test.vault")
        let store = testStore(nested)
        try store.open(with: testPassphrase)
        #expect(store.isOpen)
        #expect(permissions(directory.file("new")) == 0o700)
        #expect(permissions(directory.file("new/sub")) == 0o700)
        #expect(permissions(nested) == 0o600)
    }

    @Test("open(with:createIfMissing: false) throws vaultNotFound and creates nothing")
    func openWithoutCreate() throws {
        let store = testStore(path)
        #expect(throws: VaultError.vaultNotFound(path: path)) {
            try store.open(with: testPassphrase, createIfMissing: false)
        }
        #expect(!store.isOpen)
        #expect(directory.listing() == [])
        // Also when the directory itself is missing.
        let nested = directory.file("missing/test.vault")
        #expect(throws: VaultError.vaultNotFound(path: nested)) {
            try testStore(nested).open(with: testPassphrase, createIfMissing: false)
        }
    }

    @Test("create on an existing vault throws vaultAlreadyExists and leaves the file alone")
    func createExisting() throws {
        try makeVault(path, entries: [("k", "v")])
        let before = try readBytes(path)
        let store = testStore(path)
        #expect(throws: VaultError.vaultAlreadyExists(path: path)) { try store.create(with: otherPassphrase) }
        #expect(!store.isOpen)
        #expect(try readBytes(path) == before)
    }

    @Test("a wrong passphrase throws exactly wrongPassphrase(path:)")
    func wrongPassphraseError() throws {
        try makeVault(path, entries: [("k", "v")])
        let store = testStore(path)
        #expect(throws: VaultError.wrongPassphrase(path: path)) { try store.open(with: otherPassphrase) }
        #expect(throws: VaultError.wrongPassphrase(path: path)) { try store.open(with: SecureBytes(string: "")) }
        #expect(throws: VaultError.wrongPassphrase(path: path)) { try store.open(with: "correct horse battery") }
        #expect(!store.isOpen)
        try store.open(with: "correct horse battery staple")  // the String overload
        #expect(try store.getString("k") == "v")
    }

    @Test("the error text names the path and never contains the passphrase")
    func errorTextHasNoSecret() throws {
        try makeVault(path)
        let error = try #require(openError(path, passphrase: otherPassphrase))
        #expect(error.description == "cannot open vault '\(path)': incorrect passphrase (or the file was tampered with)")
        #expect(!error.description.contains("stapler"))
        // Its hint is the CLI's: ErrorPresentationTests.
    }

    @Test("a closed or never-opened store throws notOpen for every operation")
    func notOpen() throws {
        try makeVault(path, entries: [("k", "v")])
        let store = testStore(path)
        try store.open(with: testPassphrase)
        store.close()
        let never = testStore(path)
        for candidate in [store, never] {
            #expect(throws: VaultError.notOpen) { try candidate.getString("k") }
            #expect(throws: VaultError.notOpen) { try candidate.getData("k") }
            #expect(throws: VaultError.notOpen) { try candidate.getBytes("k") }
            #expect(throws: VaultError.notOpen) { try candidate.getJSON("k", as: Int.self) }
            #expect(throws: VaultError.notOpen) { try candidate.keys() }
            #expect(throws: VaultError.notOpen) { try candidate.contains("k") }
            #expect(throws: VaultError.notOpen) { try candidate.count }
            #expect(throws: VaultError.notOpen) { try candidate.attributes(forKey: "k") }
            #expect(throws: VaultError.notOpen) { try candidate.put("v", forKey: "k") }
            #expect(throws: VaultError.notOpen) { try candidate.remove("k") }
            #expect(throws: VaultError.notOpen) { try candidate.removeAll() }
            #expect(throws: VaultError.notOpen) { try candidate.changeEncryptionKey(with: otherPassphrase) }
            #expect(candidate.generation == nil)
            #expect(candidate.kdfParameters == nil)
        }
    }

    @Test("init(databaseFileName:) refuses names that are not plain file names")
    func databaseFileName() throws {
        for name in ["", ".", "..", "a/b", "/abs.vault"] {
            #expect(throws: VaultError.invalidFileName(name)) {
                try SecureKeyValueStore(databaseFileName: name, options: .insecureForTesting)
            }
        }
        let store = try SecureKeyValueStore(databaseFileName: "app.vault", options: .insecureForTesting)
        #expect(store.path == SecureKeyValueStore.defaultDirectory + "/app.vault")
        #expect(SecureKeyValueStore.defaultDirectory.hasSuffix("/vault"))
    }

    // MARK: changeEncryptionKey

    @Test("changeEncryptionKey: old passphrase fails, new works, entries and creation times intact, generation + 1")
    func changeEncryptionKey() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("alice", forKey: "user")
        try store.put([0, 1, 2, 255], forKey: "binary")
        let created = try #require(try store.attributes(forKey: "user")?.created)
        let generation = try #require(store.generation)
        let before = try readBytes(path)

        try store.changeEncryptionKey(with: otherPassphrase)
        #expect(store.generation == generation + 1)
        #expect(try store.getString("user") == "alice")  // still open
        store.close()

        let after = try readBytes(path)
        #expect(after[Layout.salt] != before[Layout.salt])  // new salt
        #expect(after[Layout.wrappedKey] != before[Layout.wrappedKey])
        #expect(load(after, at: Layout.generation, as: UInt64.self) == generation + 1)

        #expect(openError(path, passphrase: testPassphrase) == .wrongPassphrase(path: path))
        let reopened = testStore(path)
        try reopened.open(with: otherPassphrase, createIfMissing: false)
        #expect(try reopened.keys() == ["binary", "user"])
        #expect(try reopened.getString("user") == "alice")
        #expect(try reopened.getData("binary") == Data([0, 1, 2, 255]))
        #expect(try reopened.attributes(forKey: "user")?.created == created)
        #expect(reopened.generation == generation + 1)

        // The String overload (the tutorials' signature), back to the first passphrase.
        try reopened.changeEncryptionKey(with: "correct horse battery staple")
        #expect(openError(path, passphrase: otherPassphrase) == .wrongPassphrase(path: path))
        #expect(openError(path, passphrase: testPassphrase) == nil)
    }

    @Test("changeEncryptionKey can change the KDF parameters, within the policy only")
    func changeEncryptionKeyParameters() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "k")
        let cheap2 = Argon2id.Parameters(opsLimit: 2, memLimitBytes: 16 << 10)
        try store.changeEncryptionKey(with: otherPassphrase, parameters: cheap2)
        #expect(store.kdfParameters == cheap2)
        let bytes = try readBytes(path)
        #expect(load(bytes, at: Layout.opsLimit, as: UInt64.self) == 2)
        #expect(load(bytes, at: Layout.memLimit, as: UInt64.self) == 16 << 10)

        let tooBig = Argon2id.Parameters(opsLimit: 5, memLimitBytes: 16 << 10)
        let generation = store.generation
        #expect(throws: VaultError.kdfParametersOutOfRange(path: path, opsLimit: 5, memLimitBytes: 16 << 10)) {
            try store.changeEncryptionKey(with: testPassphrase, parameters: tooBig)
        }
        #expect(store.generation == generation)
        #expect(openError(path, passphrase: otherPassphrase) == nil)
    }

    // MARK: Several stores on one file

    @Test("two stores on the same file: interleaved puts lose nothing")
    func noLostUpdates() throws {
        try makeVault(path)
        let first = testStore(path)
        let second = testStore(path)
        try first.open(with: testPassphrase)
        try second.open(with: testPassphrase)
        for index in 0..<10 {
            try first.put("first \(index)", forKey: "a\(index)")
            try second.put("second \(index)", forKey: "b\(index)")
        }
        // Reads do not re-read the file: first has not seen second's last put yet...
        #expect(try first.contains("b9") == false)
        // ...until its next write, which re-reads under the lock.
        try first.put("again", forKey: "a0")
        #expect(try first.contains("b9"))
        #expect(try first.remove("b0") == true)

        let fresh = testStore(path)
        try fresh.open(with: testPassphrase)
        let expected = ((0..<10).map { "a\($0)" } + (1..<10).map { "b\($0)" }).sorted()
        #expect(try fresh.keys() == expected)
        #expect(try fresh.getString("a0") == "again")
        #expect(try fresh.getString("b5") == "second 5")
        #expect(fresh.generation == 1 + 20 + 2)
    }

    @Test("remove, removeAll and reload see what another store wrote since this one read the file")
    func staleStateAcrossStores() throws {
        try makeVault(path)
        let first = testStore(path)
        let second = testStore(path)
        try first.open(with: testPassphrase)
        try second.open(with: testPassphrase)
        try second.put("v", forKey: "theirs")
        #expect(try first.contains("theirs") == false)
        // remove decides under the lock, on the file as it is now.
        #expect(try first.remove("theirs") == true)
        try second.put("w", forKey: "again")
        try first.reload()
        #expect(try first.keys() == ["again"])
        try second.put("x", forKey: "late")
        try first.removeAll()
        let fresh = testStore(path)
        try fresh.open(with: testPassphrase)
        #expect(try fresh.keys() == [])
    }

    @Test("a store open while another changed the passphrase must reopen: keyChanged, nothing written")
    func writeAfterPassphraseChangeElsewhere() throws {
        try makeVault(path, entries: [("k", "v")])
        let first = testStore(path)
        let second = testStore(path)
        try first.open(with: testPassphrase)
        try second.open(with: testPassphrase)
        try second.changeEncryptionKey(with: otherPassphrase)  // a new data key: first's is retired
        let changed = try readBytes(path)
        #expect(throws: VaultError.keyChanged(path: path)) { try first.put("w", forKey: "k2") }
        #expect(throws: VaultError.keyChanged(path: path)) { try first.reload() }
        #expect(try readBytes(path) == changed)
        #expect(openError(path, passphrase: testPassphrase) == .wrongPassphrase(path: path))
        let fresh = testStore(path)
        try fresh.open(with: otherPassphrase)
        #expect(try fresh.keys() == ["k"])
        try fresh.put("w", forKey: "k2")
        #expect(try fresh.keys() == ["k", "k2"])
    }

    @Test("a store refuses to write over a different vault that replaced its file")
    func replacedByAnotherVault() throws {
        try makeVault(path, entries: [("k", "v")])
        let store = testStore(path)
        try store.open(with: testPassphrase)
        let otherPath = directory.file("other.vault")
        try makeVault(otherPath, entries: [("x", "y")])
        #expect(rename(otherPath, path) == 0)
        let replaced = try readBytes(path)
        // Another salt and a key that does not open it: to this store, the vault was re-keyed.
        #expect(throws: VaultError.keyChanged(path: path)) { try store.put("w", forKey: "k2") }
        #expect(try readBytes(path) == replaced)
    }

    // MARK: Options and presets

    @Test("Options() defaults: moderate for new vaults, the standard policy, a 10 s lock timeout")
    func defaultOptions() {
        let options = VaultStoreOptions()
        #expect(options.kdfParametersForNewVaults == .moderate)
        #expect(options.kdfPolicy == .standard)
        #expect(options.lockTimeoutSeconds == 10)
        #expect(FormatOneStore(path: "/nonexistent/x.vault").options.kdfParametersForNewVaults == .moderate)
        let testing = VaultStoreOptions.insecureForTesting
        #expect(testing.kdfParametersForNewVaults == .insecureForTesting)
        #expect(testing.kdfPolicy == .insecureForTesting)
    }

    @Test("a vault made with the interactive preset opens with the standard policy")
    func interactivePreset() throws {
        let store = FormatOneStore(path: path, options: .init(kdfParametersForNewVaults: .interactive))
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "k")
        store.close()
        let bytes = try readBytes(path)
        #expect(load(bytes, at: Layout.opsLimit, as: UInt64.self) == 2)
        #expect(load(bytes, at: Layout.memLimit, as: UInt64.self) == 64 << 20)

        let reopened = FormatOneStore(path: path)  // Options(): the standard policy
        try reopened.open(with: testPassphrase, createIfMissing: false)
        #expect(reopened.kdfParameters == .interactive)
        #expect(try reopened.getString("k") == "v")
    }

    @Test("the standard policy refuses a vault made with the insecure test parameters, before the KDF")
    func standardPolicyRefusesTestParameters() throws {
        try makeVault(path, entries: [("k", "v")])
        #expect(
            openError(path, options: VaultStoreOptions())
                == .kdfParametersOutOfRange(path: path, opsLimit: 1, memLimitBytes: 8 << 10))
        // Nor can the standard options create one.
        let other = directory.file("other.vault")
        let store = FormatOneStore(path: other)
        #expect(throws: VaultError.kdfParametersOutOfRange(path: other, opsLimit: 1, memLimitBytes: 8 << 10)) {
            try store.create(with: testPassphrase, parameters: .insecureForTesting)
        }
        #expect(!store.exists)
    }
}

/// A small seeded generator (SplitMix64), so a failing sequence can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
