/// Blowfish (Schneier, 1993) as bcrypt uses it: the state, the expensive key schedule's `expandstate` and
/// `expand0state` (Provos and Mazières, 1999), and ECB encryption of 64-bit blocks. Only ``BcryptPBKDF`` uses it.
struct Blowfish {
    private var p: [UInt32]
    private var s: [UInt32]

    /// The initial state: pi's digits.
    init() {
        p = Self.initialP
        s = Self.initialS
    }

    /// The next 32-bit big-endian word of `data`, cycling back to its start.
    private static func streamWord(_ data: UnsafeRawBufferPointer, _ position: inout Int) -> UInt32 {
        var word: UInt32 = 0
        for _ in 0..<4 {
            if position >= data.count { position = 0 }
            word = word << 8 | UInt32(data[position])
            position += 1
        }
        return word
    }

    @inline(__always)
    private func f(_ x: UInt32) -> UInt32 {
        ((s[Int(x >> 24)] &+ s[0x100 + Int(x >> 16 & 0xFF)]) ^ s[0x200 + Int(x >> 8 & 0xFF)]) &+ s[0x300 + Int(x & 0xFF)]
    }

    /// Encrypts one block (`left`, `right`).
    @inline(__always)
    func encipher(_ left: inout UInt32, _ right: inout UInt32) {
        var l = left ^ p[0], r = right
        var round = 1
        while round <= 16 {
            r ^= f(l) ^ p[round]
            l ^= f(r) ^ p[round + 1]
            round += 2
        }
        left = r ^ p[17]
        right = l
    }

    /// bcrypt's salted key schedule: `key` into the P-array, then every subkey replaced by encrypting, with `data`
    /// (the salt) mixed in; an empty `data` is `expand0state`.
    mutating func expand(data: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) {
        var position = 0
        for index in 0..<18 { p[index] ^= Self.streamWord(key, &position) }
        position = 0
        var left: UInt32 = 0, right: UInt32 = 0
        func next(_ l: inout UInt32, _ r: inout UInt32) {
            if data.count > 0 {
                l ^= Self.streamWord(data, &position)
                r ^= Self.streamWord(data, &position)
            }
            encipher(&l, &r)
        }
        for index in stride(from: 0, to: 18, by: 2) {
            next(&left, &right)
            p[index] = left
            p[index + 1] = right
        }
        for index in stride(from: 0, to: 1024, by: 2) {
            next(&left, &right)
            s[index] = left
            s[index + 1] = right
        }
    }

    /// `expand0state`: the key schedule without a salt.
    mutating func expand(key: UnsafeRawBufferPointer) {
        expand(data: UnsafeRawBufferPointer(start: nil, count: 0), key: key)
    }

    /// Wipes the state (it is derived from a passphrase).
    mutating func wipe() {
        for index in p.indices { p[index] = 0 }
        for index in s.indices { s[index] = 0 }
    }
}
