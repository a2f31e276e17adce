import VaultSodium

/// The name people know a replica by (`alice@laptop`: the user and host that made it, or one given with
/// `vault replica name`), with the packed time of the replica's clock when it was given: a merge keeps the later
/// one per replica. Informative: nothing is decided by it.
public struct ReplicaName: Sendable, Equatable {
    /// 1 to 64 bytes of UTF-8 without control characters (``isValid(_:)``).
    public let name: String
    /// Packed time (milliseconds << 16 | counter) of the naming replica's clock when it took the name.
    public let time: UInt64

    public init(name: String, time: UInt64) {
        self.name = name
        self.time = time
    }

    /// The longest name, in UTF-8 bytes.
    public static let maximumByteCount = 64

    /// Whether `name` can name a replica: 1 to 64 bytes of UTF-8 without control characters (C0, DEL, C1), as an
    /// entry's name.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumByteCount
            && !name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// The later of two names of one replica (on the same time, the greater name, so that every order of merging
    /// picks the same).
    static func later(_ a: ReplicaName, _ b: ReplicaName) -> ReplicaName { Self.later(a, b, a.name, b.name) }
}

/// A name given at a time, the later one kept by a merge: a replica's name (``ReplicaName``), a recipient's label
/// (``RecipientLabel``).
protocol TimedName {
    var time: UInt64 { get }
}

extension TimedName {
    /// The later of `a` and `b` (texts `aText`, `bText`); on the same time, the greater text as bytes, so that every
    /// order of merging picks the same.
    static func later(_ a: Self, _ b: Self, _ aText: String, _ bText: String) -> Self {
        if a.time != b.time { return a.time > b.time ? a : b }
        return aText.utf8.lexicographicallyPrecedes(bText.utf8) ? b : a
    }
}

extension ReplicaName: TimedName {}

extension KeyStanza {
    /// The replicas' names, sealed under a key derived from the data key (``ReplicaNamesStanza``): opens nothing.
    static let replicaNames: UInt16 = 5
}

/// The `replica_names` stanza (type 5, docs/FORMAT.md "Replica names"): the names of the replicas, in the header so
/// that a reader of version 2 or 3 that predates it skips it and writes it back (an unknown stanza), sealed so that
/// the header shows no user or host name:
///
/// ```
/// stanza_body = nonce (24) || SecretBox(names_key, nonce, names)
/// names_key   = BLAKE2b-256(key = data_key, "vault v3 replica names")
/// names       = count u16 || (replica_id u64 || time u64 || name_length u8 || name)*   replica ids increasing
/// ```
enum ReplicaNamesStanza {
    static let context = Array("vault v3 replica names".utf8)

    /// The stanza of `names`, under `dataKey`, with a fresh nonce.
    static func seal(_ names: [ReplicaID: ReplicaName], dataKey: SecureBytes) throws -> KeyStanza {
        var plain: [UInt8] = []
        plain.appendLittleEndian(UInt16(names.count))
        for (replica, name) in names.sorted(by: { $0.key < $1.key }) {
            plain.appendLittleEndian(replica.rawValue)
            plain.appendLittleEndian(name.time)
            plain.append(UInt8(name.name.utf8.count))
            plain += name.name.utf8
        }
        return KeyStanza(type: KeyStanza.replicaNames, body: try SealedStanza.seal(plain, key: VaultDocument.subkey(dataKey, context)))
    }

    /// The names in `body`, or `nil` when it does not open under `dataKey` or is not well formed (a reader then keeps
    /// it as a stanza of a type it does not know, written back unchanged: the names are informative).
    static func open(_ body: [UInt8], dataKey: SecureBytes) -> [ReplicaID: ReplicaName]? {
        guard let plain = SealedStanza.open(body, key: VaultDocument.subkey(dataKey, context)), plain.count >= 2 else { return nil }
        return plain.withUnsafeBytes { bytes -> [ReplicaID: ReplicaName]? in
            var reader = ByteReader(bytes)
            let count = Int(reader.readUInt16())
            var names: [ReplicaID: ReplicaName] = [:]
            var previous: UInt64?
            for _ in 0..<count {
                guard reader.remaining >= 17 else { return nil }
                let replica = reader.readUInt64(), time = reader.readUInt64()
                let length = Int(reader.readUInt8())
                guard reader.remaining >= length, previous.map({ replica > $0 }) ?? true else { return nil }
                let name = String(decoding: reader.readBytes(length), as: UTF8.self)
                guard ReplicaName.isValid(name), name.utf8.count == length else { return nil }
                names[ReplicaID(rawValue: replica)] = ReplicaName(name: name, time: time)
                previous = replica
            }
            return reader.remaining == 0 ? names : nil
        }
    }
}

extension VaultDocument {
    /// Takes the names from this document's `replica_names` stanza (the first one that opens under `dataKey`), which
    /// then leaves ``stanzas``: a seal writes it anew from ``replicaNames``.
    func takeReplicaNames(dataKey: SecureBytes) {
        guard let index = stanzas.firstIndex(where: { $0.type == KeyStanza.replicaNames }),
              let names = ReplicaNamesStanza.open(stanzas[index].body, dataKey: dataKey) else { return }
        replicaNames = names
        stanzas.removeAll { $0.type == KeyStanza.replicaNames }
    }

    /// The stanzas a seal writes under `dataKey`: ``stanzas`` and, when any replica has a name, the names, and when
    /// any recipient has a label, the labels.
    func stanzasToSeal(dataKey: SecureBytes) throws -> [KeyStanza] {
        var sealed = stanzas
        if !replicaNames.isEmpty { sealed.append(try ReplicaNamesStanza.seal(replicaNames, dataKey: dataKey)) }
        let labels = sealedRecipientLabels
        if !labels.isEmpty { sealed.append(try RecipientLabelsStanza.seal(labels, dataKey: dataKey)) }
        return sealed
    }

    /// The name of `replica`, or `nil` when it has none.
    public func name(of replica: ReplicaID) -> String? { replicaNames[replica]?.name }

    /// Gives `replica` the name `name` (when it has another or none), at a time after the one it had, its own
    /// clock and `now`. Returns whether the name changed.
    @discardableResult
    func setName(_ name: String, of replica: ReplicaID, now: UInt64) -> Bool {
        guard ReplicaName.isValid(name), replicaNames[replica]?.name != name else { return false }
        replicaNames[replica] = ReplicaName(name: name, time: nameTime(by: replica, now: now, after: replicaNames[replica]?.time))
        return true
    }

    /// The time a name given now by `replica` takes: its clock's (or `now`, when later) and after `previous` (the time
    /// of the name it replaces).
    func nameTime(by replica: ReplicaID, now: UInt64, after previous: UInt64?) -> UInt64 {
        let clock = max(replicas[replica]?.packed ?? 0, min(now, HybridTimestamp.maximumMilliseconds) << 16)
        return max(clock, previous.map { $0 &+ 1 } ?? 0)
    }

    /// Both documents' names, the later one per replica.
    static func unitedNames(_ a: [ReplicaID: ReplicaName], _ b: [ReplicaID: ReplicaName]) -> [ReplicaID: ReplicaName] {
        a.merging(b, uniquingKeysWith: ReplicaName.later)
    }
}
