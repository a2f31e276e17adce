import Testing

@testable import VaultCore

/// The sharded table of a document's entries (``IDTable``) against a `Dictionary` doing the same.
@Suite("IDTable")
struct IDTableTests {
    @Test func randomChangesMatchADictionaryAndCopiesStayApart() {
        var generator = SystemRandomNumberGenerator()
        // Random ids, and ids made by counting (all in few shards unless the mix spreads them).
        let ids = (0..<600).map { _ in DocumentID.random() } + (0..<600).map { DocumentID(high: 0, low: UInt64($0)) }
        var table = IDTable<Int>()
        var reference: [DocumentID: Int] = [:]
        var copies: [(IDTable<Int>, [DocumentID: Int])] = []
        for step in 0..<6_000 {
            let id = ids.randomElement(using: &generator)!
            switch step % 5 {
            case 0: table[id] = step; reference[id] = step
            case 1: #expect(table.updateValue(step, forKey: id) == reference.updateValue(step, forKey: id))
            case 2: #expect(table.removeValue(forKey: id) == reference.removeValue(forKey: id))
            case 3: table[id] = nil; reference[id] = nil
            default:
                if table[id] != nil { table[id]! += 1; reference[id]! += 1 }
            }
            #expect(table.count == reference.count)
            if step % 1_000 == 0 { copies.append((table, reference)) }
        }
        table.reserveCapacity(10_000)
        for (copy, expected) in copies + [(table, reference)] {
            #expect(copy.count == expected.count)
            #expect(Dictionary(uniqueKeysWithValues: copy.map { ($0.key, $0.value) }) == expected)
            #expect(Set(copy.keys) == Set(expected.keys))
            #expect(copy.values.reduce(0, +) == expected.values.reduce(0, +))
            #expect(copy.mapValues { $0 * 2 }.allSatisfy { $0.value == 2 * expected[$0.key]! })
            for id in ids.prefix(50) { #expect(copy[id] == expected[id]) }
        }
        let literal: IDTable<Int> = [ids[0]: 1, ids[1]: 2]
        #expect(literal.count == 2 && literal[ids[1]] == 2 && IDTable<Int>().isEmpty)
    }
}
