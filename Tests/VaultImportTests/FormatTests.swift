import Foundation
import Testing
import VaultCore
@testable import VaultImport

/// vault's JSON, KeePass XML, pass bodies, Bitwarden JSON and 1PUX's export.data: samples written by hand from each
/// format's public documentation (and, for KeePass, from what keepassxc-cli 2.7.4 writes); the real tools' own output
/// is imported in VaultCLITests' ImportCLITests.
@Suite struct VaultJSONTests {
    @Test func everythingComesBack() throws {
        let id = try #require(DocumentID(bytes: Array(0..<16).map { UInt8($0 * 17) }))
        let entries = [
            versions("Web/GitHub", [
                ([field("url", "https://github.com"), field("password", "new \"pw\"\n\u{1}", secret: true),
                  EntryRecord.Field(name: "key", isSecret: true, value: SecureBytes([0xFF, 0x00, 0x80]))], 1_700_000_300_123),
                ([field("password", "old", secret: true)], 1_700_000_200_000),
            ], created: 1_700_000_000_000, conflicts: [1], id: id),
        ]
        let data = try VaultJSON.write(exportSource(entries), exported: 1_800_000_000_000)
        let text = String(decoding: data.unprotectedBytes, as: UTF8.self)
        #expect(text.contains("\"encoding\":\"base64\",\"name\":\"key\",\"secret\":true,\"value\":\"/wCA\""))
        #expect(text.contains("\"id\":\"00112233445566778899aabbccddeeff\""))
        #expect(try JSONSerialization.jsonObject(with: Data(data.unprotectedBytes)) is [String: Any])
        let back = try VaultJSON.read(data.unprotectedBytes).entries
        #expect(back.count == 1)
        let entry = back[0]
        #expect(entry.path == ["Web/GitHub"] && entry.created == 1_700_000_000_000 && entry.current.modified == 1_700_000_300_123)
        #expect(entry.current.names == ["url", "password", "key"])
        #expect(entry.current.fields.map(\.isSecret) == [false, true, true])
        #expect(entry.current.text("password") == "new \"pw\"\n\u{1}")
        #expect(entry.current.field("key")!.unprotectedBytes == [0xFF, 0x00, 0x80])
        #expect(entry.history.count == 1 && entry.history[0].conflict && entry.history[0].modified == 1_700_000_200_000)
    }

    @Test func anotherFormatOrABrokenEntryIsNamed() {
        #expect(importError { _ = try VaultJSON.read(bytes("{\"items\": []}")) }?.description == "not an export of vault (no \"format\": \"vault-export\")")
        #expect(importError { _ = try VaultJSON.read(bytes("{\"format\":\"vault-export\",\"version\":2,\"entries\":[]}")) }?.description
                == "an export of vault of version 2; this vault reads version 1")
        let bad = "{\"format\":\"vault-export\",\"version\":1,\"entries\":[{\"name\":\"a\",\"fields\":[]},{\"name\":\"b\",\"fields\":[{\"name\":\"password\",\"value\":5}]}]}"
        #expect(importError { _ = try VaultJSON.read(bytes(bad)) } == .malformed(location: "entry 2 ('b'), field 1 ('password')", reason: "a field needs a \"value\" string"))
        let time = "{\"format\":\"vault-export\",\"version\":1,\"entries\":[{\"name\":\"a\",\"fields\":[],\"modified\":\"yesterday\"}]}"
        #expect(importError { _ = try VaultJSON.read(bytes(time)) } == .malformed(location: "entry 1 ('a')", reason: "\"modified\" is not an ISO 8601 time"))
        #expect(importError { _ = try VaultJSON.read(bytes("{\"format\": \n\"vault-export\", secret}")) } == .malformed(location: "the file", reason: "not valid JSON (line 2)"))
    }
}

@Suite struct KeePassXMLTests {
    static let sample = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <KeePassFile>
        \t<Meta><Generator>KeePassXC</Generator><RecycleBinUUID>cmVjeWNsZWJpbnV1aWQxMg==</RecycleBinUUID><Binaries><Binary ID="0" Compressed="True">H4sIAAAAAAACA9PVBQInV3dPPwVv10gQR5crMSmZCwBD12B3GAAAAA==</Binary><Binary ID="1">AAH/cmF3</Binary></Binaries></Meta>
        \t<Root>
        \t\t<Group><UUID>cm9vdHJvb3Ryb290cm9vdA==</UUID><Name>Passwords</Name>
        \t\t\t<Group><UUID>d2Vid2Vid2Vid2Vid2ViMQ==</UUID><Name>Web</Name>
        \t\t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5MQ==</UUID>
        \t\t\t\t\t<Times><LastModificationTime>2026-11-26T16:18:04Z</LastModificationTime><CreationTime>2026-11-26T16:18:03Z</CreationTime></Times>
        \t\t\t\t\t<String><Key>Notes</Key><Value>line1
        line2</Value></String>
        \t\t\t\t\t<String><Key>Password</Key><Value ProtectInMemory="True">x&amp;y&lt;z&gt;"</Value></String>
        \t\t\t\t\t<String><Key>Title</Key><Value>GitHub</Value></String>
        \t\t\t\t\t<String><Key>URL</Key><Value/></String>
        \t\t\t\t\t<String><Key>UserName</Key><Value>alice</Value></String>
        \t\t\t\t\t<String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&amp;period=30&amp;digits=6&amp;issuer=GitHub</Value></String>
        \t\t\t\t\t<String><Key>PIN</Key><Value ProtectInMemory="True">1234</Value></String>
        \t\t\t\t\t<String><Key>Recovery</Key><Value>abc</Value></String>
        \t\t\t\t\t<Binary><Key>key.pem</Key><Value Ref="0"/></Binary><Binary><Key>raw</Key><Value Ref="1"/></Binary><Binary><Key>gone</Key><Value Ref="9"/></Binary>
        \t\t\t\t\t<History>
        \t\t\t\t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5MQ==</UUID><Times><LastModificationTime>AAfw1g4AAAA=</LastModificationTime></Times>
        \t\t\t\t\t\t\t<String><Key>Password</Key><Value ProtectInMemory="True">first</Value></String><String><Key>Title</Key><Value>GitHub</Value></String></Entry>
        \t\t\t\t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5MQ==</UUID><Times><LastModificationTime>2026-11-26T16:18:03Z</LastModificationTime></Times>
        \t\t\t\t\t\t\t<String><Key>Password</Key><Value ProtectInMemory="True">second</Value></String><String><Key>Title</Key><Value>GitHub</Value></String></Entry>
        \t\t\t\t\t</History>
        \t\t\t\t</Entry>
        \t\t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5Mg==</UUID>
        \t\t\t\t\t<String><Key>Title</Key><Value>Legacy</Value></String>
        \t\t\t\t\t<String><Key>TOTP Seed</Key><Value>jbsw y3dp ehpk 3pxp</Value></String>
        \t\t\t\t\t<String><Key>TOTP Settings</Key><Value>30;8</Value></String>
        \t\t\t\t</Entry>
        \t\t\t</Group>
        \t\t\t<Group><UUID>cmVjeWNsZWJpbnV1aWQxMg==</UUID><Name>Recycle Bin</Name>
        \t\t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5Mw==</UUID><String><Key>Title</Key><Value>Gone</Value></String></Entry>
        \t\t\t</Group>
        \t\t\t<Entry><UUID>ZW50cnllbnRyeWVudHJ5NA==</UUID><String><Key>Title</Key><Value>Top</Value></String>
        \t\t\t\t<String><Key>TimeOtp-Secret-Base32</Key><Value>JBSWY3DPEHPK3PXP</Value></String>
        \t\t\t\t<String><Key>TimeOtp-Algorithm</Key><Value>HMAC-SHA-256</Value></String>
        \t\t\t\t<String><Key>TimeOtp-Length</Key><Value>8</Value></String></Entry>
        \t\t</Group>
        \t\t<DeletedObjects/>
        \t</Root>
        </KeePassFile>
        """

    @Test func groupsFieldsProtectionHistoryTimesAndTOTPForms() throws {
        let parsed = try KeePassXML.read(bytes(Self.sample))
        #expect(parsed.entries.map(\.name) == ["Web/GitHub", "Web/Legacy", "Top"])
        let github = parsed.entries[0]
        // Attachments: binary fields after the strings (gzip or not), secret; one that refers to nothing is skipped.
        #expect(github.current.names == ["password", "username", "otp", "notes", "PIN", "Recovery", "key.pem", "raw"])
        #expect(github.current.text("password") == "x&y<z>\"" && github.current.text("notes") == "line1\nline2")
        #expect(github.current.fields.map(\.isSecret) == [true, false, true, false, true, false, true, true])
        #expect(github.current.text("key.pem") == "-----BEGIN KEY-----\nabc\n")
        #expect(github.current.field("raw")?.unprotectedBytes == [0, 1, 0xFF, 0x72, 0x61, 0x77])
        #expect(github.history.allSatisfy { $0.field("key.pem") == nil })
        #expect(github.created == 1_795_709_883_000 && github.current.modified == 1_795_709_884_000)
        // History newest first; the first item's time is KDBX's base64 seconds since year 1 (2020-09-13T12:26:40Z).
        #expect(github.history.map { $0.text("password") } == ["second", "first"])
        #expect(github.history[1].modified == 1_600_000_000_000)
        #expect(parsed.entries[1].current.text("otp") == "otpauth://totp/Legacy?secret=JBSWY3DPEHPK3PXP&period=30&digits=8")
        #expect(parsed.entries[2].current.text("otp") == "otpauth://totp/Top?secret=JBSWY3DPEHPK3PXP&digits=8&algorithm=SHA256")
        #expect(parsed.skipped == [
            SkippedItem(item: "line 7 ('Web/GitHub') attachment 'gone'", reason: "its content is missing (attachment 9 is not in <Meta><Binaries>)"),
            SkippedItem(item: "line 33 ('Recycle Bin/Gone')", reason: "in the recycle bin"),
        ])
    }

    @Test func attachmentsOverTheBoundAreSkippedWithTheirReason() throws {
        // 1 MiB + 1 zero bytes, gzip: inflating stops at the bound.
        let large = "H4sIAAAAAAACA+3BMQEAAADCoPVPbQhfoA" + String(repeating: "A", count: 1354) + "TgMoi6TGAQAQAA=="
        let plain = Data(repeating: 7, count: (1 << 20) + 1).base64EncodedString()
        let xml = """
            <KeePassFile><Meta><Binaries><Binary ID="0" Compressed="True">\(large)</Binary><Binary ID="1">\(plain)</Binary><Binary ID="2" Compressed="True">bm90Z3ppcA==</Binary></Binaries></Meta>
            <Root><Group><Name>Root</Name><Entry><String><Key>Title</Key><Value>E</Value></String><String><Key>Password</Key><Value>p</Value></String>
            <Binary><Key>big.gz</Key><Value Ref="0"/></Binary><Binary><Key>big.bin</Key><Value Ref="1"/></Binary><Binary><Key>bad</Key><Value Ref="2"/></Binary>
            <Binary><Key>inline</Key><Value>aGk=</Value></Binary></Entry></Group></Root></KeePassFile>
            """
        let parsed = try KeePassXML.read(bytes(xml))
        #expect(parsed.entries.first?.current.names == ["password", "inline"])
        #expect(parsed.entries.first?.current.text("inline") == "hi")
        #expect(parsed.skipped.map(\.reason) == [
            "larger than 1 MiB (an attachment is imported up to that): keep the file beside the vault",
            "larger than 1 MiB (1025 KiB, an attachment is imported up to that): keep the file beside the vault",
            "its content is not gzip",
        ])
        #expect(parsed.skipped.first?.item == "line 2 ('E') attachment 'big.gz'")
    }

    @Test func tagsGoBackAsKeePassTags() throws {
        let entries = [versions("t", [([field("password", "p", secret: true), field("tags", "work;vpn")], 1_700_000_000_000)])]
        let result = try KeePassXML.write(exportSource(entries), now: 1_800_000_000_000)
        let text = String(decoding: result.data.unprotectedBytes, as: UTF8.self)
        #expect(text.contains("<Tags>work;vpn</Tags>") && !text.contains("<Key>tags</Key>"))
        let back = try KeePassXML.read(result.data.unprotectedBytes)
        #expect(back.entries[0].current.names == ["password", "tags"] && back.entries[0].current.text("tags") == "work;vpn")
    }

    @Test func brokenXMLADoctypeAndEncryptedValuesAreRefused() {
        #expect(importError { _ = try KeePassXML.read(bytes("<KeePassFile>\n<Root>\n<Group></Root>")) } == .malformed(location: "line 3", reason: "not well-formed XML"))
        let doctype = "<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY a \"aaaa\">]>\n<KeePassFile/>"
        guard case .unsupported(let reason, _)? = importError({ _ = try KeePassXML.read(bytes(doctype)) }) else { Issue.record("accepted"); return }
        #expect(reason.hasPrefix("line 2: a document type declaration"))
        let inner = "<KeePassFile><Root><Group><Entry><String><Key>Password</Key><Value Protected=\"True\">c2VjcmV0</Value></String></Entry></Group></Root></KeePassFile>"
        guard case .unsupported(let why, _)? = importError({ _ = try KeePassXML.read(bytes(inner)) }) else { Issue.record("accepted"); return }
        #expect(why.contains("Protected=\"True\""))
        #expect(importError { _ = try KeePassXML.read(bytes("<html/>")) }?.description == "not a KeePass XML file (no <KeePassFile>)")
    }

    @Test func theExportReadsBackWithGroupsHistoryAndProtection() throws {
        let id = try #require(DocumentID(bytes: Array(0..<16).map { UInt8($0 * 17) }))
        let entries = [
            versions("Web/GitHub", [
                ([field("password", "x&y<z>\"\r\n", secret: true), field("username", "alice"), field("Title", "custom"),
                  field("pin", "1234", secret: true), EntryRecord.Field(name: "raw", isSecret: false, value: SecureBytes([0xFF]))], 1_700_000_300_000),
                ([field("password", "older", secret: true)], 1_700_000_200_000),
                ([field("password", "oldest", secret: true)], 1_700_000_100_000),
            ], created: 1_700_000_000_000, id: id),
            versions("top", [([field("password", "t", secret: true), EntryRecord.Field(name: "raw", isSecret: true, value: SecureBytes([0xFF])),
                                EntryRecord.Field(name: "bad\u{1}name", isSecret: false, value: SecureBytes([0x41]))], 1_700_000_000_000)]),
        ]
        let result = try KeePassXML.write(exportSource(entries), now: 1_800_000_000_000)
        // A value that is not text is an attachment (the same bytes once in <Binaries>); a name XML cannot carry is left out.
        #expect(result.omitted == [SkippedItem(item: "'top' field 'bad\u{1}name'", reason: "a name XML cannot carry; --format json keeps it")])
        let xml = String(decoding: result.data.unprotectedBytes, as: UTF8.self)
        #expect(xml.contains("\t\t<Binaries>\n\t\t\t<Binary ID=\"0\" Compressed=\"False\">/w==</Binary>\n\t\t</Binaries>\n\t</Meta>"))
        #expect(xml.components(separatedBy: "<Value Ref=\"0\"/>").count == 3 && !xml.contains("Ref=\"1\""))
        let back = try KeePassXML.read(result.data.unprotectedBytes)
        #expect(back.entries.map(\.name) == ["top", "Web/GitHub"])
        #expect(back.entries[0].current.field("raw").map(\.unprotectedBytes) == [0xFF])
        let github = back.entries[1]
        #expect(github.current.names == ["password", "username", "Title (2)", "pin", "raw"])
        #expect(github.current.field("raw").map { $0.isSecret && $0.unprotectedBytes == [0xFF] } == true)
        #expect(github.current.text("password") == "x&y<z>\"\r\n")
        #expect(github.current.field("pin")!.isSecret && !github.current.field("Title (2)")!.isSecret)
        #expect(github.history.map { $0.text("password") } == ["older", "oldest"])
        #expect(github.created == 1_700_000_000_000 && github.current.modified == 1_700_000_300_000)
        #expect(String(decoding: result.data.unprotectedBytes, as: UTF8.self).contains("<UUID>ABEiM0RVZneImaq7zN3u/w==</UUID>"))
    }
}

@Suite struct PassStoreTests {
    func parse(_ text: String) -> PortableVersion { PassStore.parse(SecureBytes(string: text), values: ValueArena()) }

    @Test func linesBecomeFields() {
        let version = parse("s3cret\nlogin: alice\nURL: https://x.example\nWebsite: https://y.example\npin: 1234\notpauth://totp/x?secret=JBSWY3DPEHPK3PXP\n\nfree text: more words\nhttps://not.a.field\n")
        #expect(version.names == ["password", "username", "url", "Website", "pin", "otp", "free text", "notes"])
        #expect(version.text("password") == "s3cret" && version.field("password")!.isSecret && version.field("otp")!.isSecret)
        // key: value lines are secret unless the key is a known non-secret one.
        #expect(version.fields.map(\.isSecret) == [true, false, false, false, true, true, true, false])
        let more = parse("pw\nEmail: a@example.org\nrecovery code: 1111\nLogin: bob\n")
        #expect(more.names == ["password", "Email", "recovery code", "username"] && more.fields.map(\.isSecret) == [true, false, true, false])
        #expect(version.text("notes") == "https://not.a.field")
        #expect(parse("otpauth://totp/only?secret=JBSWY3DPEHPK3PXP\n").names == ["otp"])  // pass otp insert
        #expect(parse("pw\r\nuser: bob\r\n").text("username") == "bob")
        #expect(parse("pw\n---\nusername: carol\nkey: value\n").names == ["password", "username", "key"])  // gopass YAML
        #expect(parse("GOPASS-SECRET-1.0\nPassword: pw\nUser: dave\n\nbody text\n").names == ["password", "username", "notes"])
        #expect(parse("").names == [])
    }
}

@Suite struct BitwardenJSONTests {
    static let sample = """
        {"encrypted": false,
         "folders": [{"id": "f1", "name": "Work/Dev"}],
         "items": [
          {"id": "i1", "organizationId": null, "folderId": "f1", "type": 1, "reprompt": 0, "name": "GitHub", "notes": "n",
           "favorite": false, "fields": [{"name": "pin", "value": "1234", "type": 1, "linkedId": null},
                                        {"name": "team", "value": "core", "type": 0, "linkedId": null},
                                        {"name": "remember", "value": "true", "type": 2, "linkedId": null},
                                        {"name": "user again", "value": null, "type": 3, "linkedId": 100}],
           "login": {"uris": [{"match": null, "uri": "https://github.com"}, {"match": 3, "uri": "https://gh.io"}],
                     "username": "alice", "password": "new", "totp": "JBSWY3DPEHPK3PXP", "fido2Credentials": []},
           "passwordHistory": [{"lastUsedDate": "2024-01-01T00:00:00.000Z", "password": "older"},
                               {"lastUsedDate": "2024-06-01T00:00:00.000Z", "password": "old"}],
           "revisionDate": "2024-07-01T10:00:00.000Z", "creationDate": "2023-01-01T00:00:00.000Z", "deletedDate": null},
          {"id": "i2", "folderId": null, "type": 2, "name": "Note", "notes": "just text", "secureNote": {"type": 0}},
          {"id": "i3", "folderId": null, "type": 3, "name": "Visa", "notes": null,
           "card": {"cardholderName": "Alice", "brand": "Visa", "number": "4111111111111111", "expMonth": "7", "expYear": "2030", "code": "123"}},
          {"id": "i4", "folderId": null, "type": 4, "name": "Me", "identity": {"firstName": "Alice", "ssn": "000-00-0000", "username": "al"}},
          {"id": "i5", "folderId": null, "type": 1, "name": "Steam", "login": {"username": "s", "password": "p", "totp": "steam://JBSWY3DPEHPK3PXP"}},
          {"id": "i6", "folderId": null, "type": 1, "name": "Trashed", "login": {"password": "x"}, "deletedDate": "2024-01-01T00:00:00.000Z"}
         ]}
        """

    @Test func loginsNotesCardsIdentitiesFoldersFieldsAndHistory() throws {
        let parsed = try BitwardenJSON.read(bytes(Self.sample))
        #expect(parsed.entries.map(\.name) == ["Work/Dev/GitHub", "Note", "Visa", "Me", "Steam"])
        let github = parsed.entries[0]
        #expect(github.current.names == ["password", "username", "url", "url (2)", "otp", "notes", "pin", "team", "remember"])
        #expect(github.current.field("pin")!.isSecret && !github.current.field("team")!.isSecret)
        #expect(github.history.map { $0.text("password") } == ["old", "older"])
        #expect(github.history[0].text("username") == "alice")
        #expect(github.created == 1_672_531_200_000 && github.current.modified == 1_719_828_000_000)
        #expect(parsed.entries[2].current.names == ["cardholder", "brand", "number", "expiry", "code"])
        #expect(parsed.entries[2].current.text("expiry") == "7/2030" && parsed.entries[2].current.field("number")!.isSecret)
        #expect(parsed.entries[3].current.names == ["username", "firstName", "ssn"] && parsed.entries[3].current.field("ssn")!.isSecret)
        #expect(parsed.entries[4].current.text("otp") == "otpauth://totp/Steam?secret=JBSWY3DPEHPK3PXP&encoder=steam")
        #expect(parsed.skipped == [SkippedItem(item: "item 6 ('Trashed')", reason: "in Bitwarden's trash")])
    }

    @Test func theEncryptedExportAndOtherJSONAreRefused() {
        let encrypted = "{\"encrypted\": true, \"passwordProtected\": true, \"salt\": \"x\", \"kdfType\": 0, \"kdfIterations\": 600000, \"data\": \"2.abc\"}"
        guard case .unsupported(let reason, let hint)? = importError({ _ = try BitwardenJSON.read(bytes(encrypted)) }) else { Issue.record("accepted"); return }
        #expect(reason.hasPrefix("an encrypted Bitwarden export"))
        #expect(hint.contains("'.json'"))
        #expect(importError { _ = try BitwardenJSON.read(bytes("[1,2]")) } == .malformed(location: "the file", reason: "the JSON is not an object"))
        #expect(importError { _ = try BitwardenJSON.read(bytes("{\"items\": [{\"type\": 1, \"name\": \"x\"}]}")) }
                == .malformed(location: "item 1 ('x')", reason: "a type-1 item without its \"login\" object"))
    }
}

@Suite struct OnePUXTests {
    static let exportData = """
        {"accounts": [{"attrs": {"accountName": "Alice", "name": "Alice", "email": "alice@example.com", "uuid": "A", "domain": "https://my.1password.com/"},
          "vaults": [{"attrs": {"uuid": "v1", "desc": "", "avatar": "", "name": "Personal", "type": "P"},
           "items": [
            {"uuid": "i1", "favIndex": 0, "createdAt": 1600000000, "updatedAt": 1700000000, "state": "active", "categoryUuid": "001",
             "details": {"loginFields": [{"value": "alice", "id": "", "name": "username", "fieldType": "T", "designation": "username"},
                                         {"value": "pw", "id": "", "name": "password", "fieldType": "P", "designation": "password"},
                                         {"value": "✓", "id": "", "name": "remember", "fieldType": "C"}],
                         "notesPlain": "notes here",
                         "sections": [{"title": "Security", "name": "s", "fields": [
                            {"title": "one-time password", "id": "TOTP_1", "value": {"totp": "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP"}},
                            {"title": "recovery", "id": "r", "value": {"concealed": "code-1"}},
                            {"title": "since", "id": "d", "value": {"date": 1600000000}},
                            {"title": "expires", "id": "m", "value": {"monthYear": 203007}},
                            {"title": "scan", "id": "f", "value": {"file": {"fileName": "x.png", "documentId": "d1"}}}]}],
                         "passwordHistory": [{"value": "older", "time": 1650000000}]},
             "overview": {"title": "GitHub", "url": "https://github.com", "urls": [{"label": "", "url": "https://github.com"}, {"label": "", "url": "https://gh.io"}], "tags": ["dev"]}},
            {"uuid": "i2", "createdAt": 1, "updatedAt": 2, "state": "archived", "categoryUuid": "001", "details": {}, "overview": {"title": "Old"}},
            {"uuid": "i3", "createdAt": 1, "updatedAt": 2, "state": "active", "categoryUuid": "005", "details": {"password": "just-a-password"}, "overview": {"title": "Router"}}
           ]}]}]}
        """

    @Test func itemsWithVaultsSectionsAndHistory() throws {
        let parsed = try OnePUX.read(exportData: bytes(Self.exportData))
        #expect(parsed.entries.map(\.name) == ["Personal/GitHub", "Personal/Router"])
        let github = parsed.entries[0]
        #expect(github.current.names == ["password", "username", "url", "url (2)", "otp", "recovery", "since", "expires", "remember", "notes", "tags"])
        #expect(github.current.field("recovery")!.isSecret && github.current.text("since") == "2020-09-13" && github.current.text("expires") == "2030-07")
        #expect(github.created == 1_600_000_000_000 && github.current.modified == 1_700_000_000_000)
        #expect(github.history.map { $0.text("password") } == ["older"] && github.history[0].modified == 1_650_000_000_000)
        #expect(parsed.entries[1].current.text("password") == "just-a-password")
        #expect(parsed.skipped == [
            SkippedItem(item: "vault 'Personal' item 1 ('GitHub') field 'scan'", reason: "attachments are not imported"),
            SkippedItem(item: "vault 'Personal' item 2 ('Old')", reason: "archived in 1Password"),
        ])
    }
}

@Suite struct ImportPlanTests {
    func record(_ name: String, _ fields: [(String, String, Bool)]) -> EntryRecord {
        let stamp = HybridTimestamp(milliseconds: 1, counter: 0, replica: ReplicaID(rawValue: 1))
        return EntryRecord(id: DocumentID.random(), name: name, version: 0, created: stamp, modified: stamp, conflict: false,
                           fields: fields.map { EntryRecord.Field(name: $0.0, isSecret: $0.2, value: SecureBytes(string: $0.1)) })
    }

    let values = ValueArena()

    func entry(_ path: [String], _ fields: [(String, String)]) -> PortableEntry {
        PortableEntry(path: path, current: PortableVersion(fields: fields.map { values.field($0.0, $0.1, secret: $0.0 == "password") }), origin: path.joined(separator: "/"))
    }

    @Test func addedUpdatedUnchangedSkippedAndDuplicateNames() throws {
        let source = ParsedSource(entries: [
            entry(["a"], [("password", "1")]),
            entry(["b"], [("password", "2"), ("username", "u")]),
            entry(["c"], [("password", "3")]),
            entry(["a"], [("password", "4")]),
            entry(["a (2)"], [("password", "5")]),
            entry(["a"], [("password", "6")]),
            entry(["empty"], []),
            entry([String(repeating: "x", count: 5000)], [("password", "7")]),
        ], skipped: [SkippedItem(item: "x", reason: "y")], values: values)
        let vault = ["b": record("b", [("password", "2", true), ("username", "u", false), ("extra", "kept", false)]),
                     "c": record("c", [("password", "old", true)])]
        let plan = try ImportPlan.make(source, prefix: "imp") { name in vault[String(name.dropFirst(4))].map { [$0] } }
        #expect(plan.added == ["imp/a", "imp/a (3)", "imp/a (2)", "imp/a (4)"])
        #expect(plan.unchanged == ["imp/b"] && plan.updated == ["imp/c"])
        #expect(plan.skipped.map(\.item) == ["x", "empty", String(repeating: "x", count: 5000)])
        #expect(plan.changes.count == 5)
        if case let .setField(entry, field, value, secret) = plan.changes[1] {
            #expect(entry == "imp/c" && field == "password" && value == SecureBytes(string: "3") && secret == true)
        } else {
            Issue.record("\(plan.changes[1])")
        }
        // A secret flag that differs is a change too.
        let flagOnly = try ImportPlan.make(ParsedSource(entries: [entry(["c"], [("password", "old")])], values: values), prefix: nil) { _ in
            [record("c", [("password", "old", false)])]
        }
        #expect(flagOnly.updated == ["c"])
    }

    /// Versions of a vault entry, current first, each (fields, modified milliseconds).
    func history(_ name: String, _ list: [([(String, String, Bool)], UInt64)]) -> [EntryRecord] {
        versions(name, list.map { version in (version.0.map { field($0.0, $0.1, secret: $0.2) }, version.1) })
    }

    @Test func anEntryChangedOrDeletedInTheVaultSinceTheSourceIsKeptUnlessOverwrite() throws {
        func timed(_ path: String, _ password: String, _ modified: UInt64?) -> PortableEntry {
            var entry = entry([path], [("password", password), ("url", "https://x")])
            entry.current.modified = modified
            return entry
        }
        let source = ParsedSource(entries: [
            timed("newer-in-vault", "src", 1_000), timed("newer-in-source", "src", 5_000),
            timed("untimed-imported-then-changed", "src", nil), timed("untimed-new-in-source", "src2", nil),
            timed("deleted-after", "src", 1_000), timed("deleted-before", "src", 9_000), timed("deleted-untimed", "src", nil),
        ], values: values)
        let vault: [String: [EntryRecord]] = [
            "newer-in-vault": history("newer-in-vault", [([("password", "mine", true), ("url", "https://x", false)], 2_000)]),
            "newer-in-source": history("newer-in-source", [([("password", "mine", true), ("url", "https://x", false)], 2_000)]),
            // Imported once (version 1 holds the source's fields), then changed here.
            "untimed-imported-then-changed": history("untimed-imported-then-changed", [
                ([("password", "mine", true), ("url", "https://y", false)], 3_000), ([("password", "src", true), ("url", "https://x", false)], 2_000)]),
            "untimed-new-in-source": history("untimed-new-in-source", [
                ([("password", "mine", true), ("url", "https://x", false)], 3_000), ([("password", "src", true), ("url", "https://x", false)], 2_000)]),
        ]
        let deleted: [String: UInt64] = ["deleted-after": 2_000, "deleted-before": 2_000, "deleted-untimed": 2_000]
        let plan = try ImportPlan.make(source, prefix: nil, deleted: deleted) { vault[$0] }
        #expect(plan.kept == [
            ImportPlan.Kept(name: "newer-in-vault", fields: ["password"], deleted: false),
            ImportPlan.Kept(name: "untimed-imported-then-changed", fields: ["password", "url"], deleted: false),
            ImportPlan.Kept(name: "deleted-after", fields: [], deleted: true),
            ImportPlan.Kept(name: "deleted-untimed", fields: [], deleted: true),
        ])
        #expect(plan.updated == ["newer-in-source", "untimed-new-in-source"] && plan.added == ["deleted-before"])
        // --overwrite: every one updated or added.
        let forced = try ImportPlan.make(source, prefix: nil, overwrite: true, deleted: deleted) { vault[$0] }
        #expect(forced.kept.isEmpty && forced.updated.count == 4 && forced.added == ["deleted-after", "deleted-before", "deleted-untimed"])
    }

    @Test func aFieldNameAVaultCannotHoldNamesTheItem() {
        let values = ValueArena()
        let bad = PortableEntry(path: ["x"], current: PortableVersion(fields: [values.field("a\u{7}", "v")]), origin: "line 3 ('x')")
        #expect(importError { _ = try ImportPlan.make(ParsedSource(entries: [bad], values: values), prefix: nil) { _ in nil } }
                == .malformed(location: "line 3 ('x')", reason: "a field name a vault cannot hold (invalid field name: a field name has no control characters)"))
    }
}
