/// A table of values by ``DocumentID`` whose copy costs one shard, not the whole table: the values are in
/// ``shardCount`` dictionaries picked by the id's bits, and a change to a copy copies the array of shards (a retain
/// each) and the one shard it changes. A document is copied on every write and changes one entry or a few: with one
/// dictionary, each put copied (and later freed) the whole table, a third of a put's time at 100,000 entries.
///
/// The API is the part of `Dictionary`'s that documents use. Iteration goes shard by shard, each in its
/// dictionary's order: a copy keeps the order (a dictionary's copy keeps its layout), and a change moves at most the
/// entries of its shard.
struct IDTable<Value>: Sequence, ExpressibleByDictionaryLiteral {
    typealias Shard = [DocumentID: Value]
    typealias Element = (key: DocumentID, value: Value)

    /// Enough that a shard of a large vault is small (100,000 entries: about 390 a shard), few enough that copying
    /// the array of them is cheap next to the rest of a write.
    static var shardBits: Int { 8 }
    static var shardCount: Int { 1 << shardBits }

    /// Empty (no allocation) until the first value, then ``shardCount`` shards.
    private var shards: [Shard]
    /// The values in all shards.
    private(set) var count: Int

    init() {
        shards = []
        count = 0
    }

    init(dictionaryLiteral elements: (DocumentID, Value)...) {
        self.init()
        for (id, value) in elements { self[id] = value }
    }

    /// The shard of `id`: its bits mixed (ids are random, but a test may make them by counting).
    @inline(__always)
    private static func shard(of id: DocumentID) -> Int {
        Int(truncatingIfNeeded: ((id.high ^ id.low) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - shardBits))
    }

    var isEmpty: Bool { count == 0 }

    subscript(id: DocumentID) -> Value? {
        get { shards.isEmpty ? nil : shards[Self.shard(of: id)][id] }
        _modify {
            if shards.isEmpty { shards = Array(repeating: [:], count: Self.shardCount) }
            let shard = Self.shard(of: id)
            let before = shards[shard].count
            defer { count += shards[shard].count - before }
            yield &shards[shard][id]
        }
    }

    /// Sets the value of `id` and returns the one it replaces (`nil`: there was none).
    @discardableResult
    mutating func updateValue(_ value: Value, forKey id: DocumentID) -> Value? {
        var old: Value? = value
        swap(&old, &self[id])
        return old
    }

    /// Removes the value of `id` and returns it (`nil`: there was none).
    @discardableResult
    mutating func removeValue(forKey id: DocumentID) -> Value? {
        guard self[id] != nil else { return nil }
        var old: Value?
        swap(&old, &self[id])
        return old
    }

    /// Room for `capacity` values in all, spread evenly (with a margin: random ids do not fill shards exactly); none
    /// below 8 a shard (a small vault's shards grow as they fill, instead of 256 allocations up front).
    mutating func reserveCapacity(_ capacity: Int) {
        guard capacity >= 8 * Self.shardCount else { return }
        if shards.isEmpty { shards = Array(repeating: [:], count: Self.shardCount) }
        let each = capacity / Self.shardCount
        let room = each + each / 4 + 4
        for index in shards.indices { shards[index].reserveCapacity(room) }
    }

    /// The same ids with `transform`'s values (each shard's layout, and so the order, kept).
    func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> IDTable<T> {
        var mapped = IDTable<T>()
        mapped.shards = try shards.map { try $0.mapValues(transform) }
        mapped.count = count
        return mapped
    }

    var underestimatedCount: Int { count }

    func makeIterator() -> Iterator { Iterator(shards) }

    struct Iterator: IteratorProtocol {
        private let shards: [Shard]
        private var shard = 0
        private var current: Shard.Iterator

        fileprivate init(_ shards: [Shard]) {
            self.shards = shards
            current = Shard().makeIterator()
        }

        mutating func next() -> Element? {
            while true {
                if let element = current.next() { return element }
                guard shard < shards.count else { return nil }
                current = shards[shard].makeIterator()
                shard += 1
            }
        }
    }

    /// The ids, in the table's order.
    var keys: LazyMapSequence<IDTable, DocumentID> { lazy.map(\.key) }
    /// The values, in the table's order.
    var values: LazyMapSequence<IDTable, Value> { lazy.map(\.value) }
}

extension IDTable: Sendable where Value: Sendable {}
extension IDTable.Iterator: Sendable where Value: Sendable {}
