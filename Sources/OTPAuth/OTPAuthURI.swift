import VaultCore

/// The parser of `otpauth://` URIs (google-authenticator's "Key Uri Format", with KeePassXC's `encoder=steam` and
/// Aegis's `otpauth://steam/`), on bytes: the secret goes from the URI's bytes into guarded memory and is never
/// a `String`.
enum OTPAuthURI {
    static func parse(_ text: UnsafeRawBufferPointer) throws(OTPError) -> TOTP {
        var end = text.count
        while end > 0, [UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: " ")].contains(text[end - 1]) { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: text[0..<end])
        let scheme = Array("otpauth://".utf8)
        guard text.count >= scheme.count, zip(text, scheme).allSatisfy({ lowercased($0) == $1 }) else {
            // Not a URI: a bare base32 secret, with the defaults every app assumes.
            guard !text.contains(UInt8(ascii: ":")) else { throw .notAnOTPURI }
            return TOTP(secret: try Base32.decode(text))
        }
        let rest = UnsafeRawBufferPointer(rebasing: text[scheme.count...])
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { throw .notAnOTPURI }
        let type = String(decoding: rest[..<slash].map(lowercased), as: UTF8.self)
        var steam = false
        switch type {
        case "totp": break
        case "steam": steam = true
        case "hotp": throw .counterBasedNotSupported
        default: throw .notAnOTPURI
        }
        let afterType = rest.index(after: slash)
        let query = rest[afterType...].firstIndex(of: UInt8(ascii: "?"))
        let label = percentDecoded(rest[afterType..<(query ?? rest.endIndex)])
        var parameters: [String: Range<Int>] = [:]
        if let query {
            var start = query + 1
            while start <= rest.endIndex {
                let stop = rest[start...].firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
                if stop > start {
                    let pair = rest[start..<stop]
                    let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? stop
                    let name = String(decoding: rest[start..<equals].map(lowercased), as: UTF8.self)
                    let value = equals < stop ? (equals + 1)..<stop : stop..<stop
                    if known.contains(name) {
                        guard parameters.updateValue(value, forKey: name) == nil else { throw .repeatedParameter(name) }
                    }
                }
                start = stop + 1
            }
        }
        func string(_ name: String) -> String? { parameters[name].map { percentDecoded(rest[$0]) } }

        guard let secretRange = parameters["secret"], !secretRange.isEmpty else { throw .missingSecret }
        let secret = try decodeSecret(UnsafeRawBufferPointer(rebasing: rest[secretRange]))

        var algorithm = TOTP.Algorithm.sha1
        if let name = string("algorithm") {
            guard let known = TOTP.Algorithm(rawValue: name.uppercased()) else {
                throw .unsupportedParameter(name: "algorithm", reason: "SHA1, SHA256 or SHA512")
            }
            algorithm = known
        }
        if let encoder = string("encoder") {
            guard encoder.lowercased() == "steam" else {
                throw .unsupportedParameter(name: "encoder", reason: "only steam is known")
            }
            steam = true
        }
        var digits = 6
        if let text = string("digits"), !steam {
            guard let value = Int(text), (6...8).contains(value) else {
                throw .unsupportedParameter(name: "digits", reason: "6, 7 or 8")
            }
            digits = value
        }
        var period: Int64 = 30
        if let text = string("period") {
            guard let value = Int64(text), (1...3600).contains(value) else {
                throw .unsupportedParameter(name: "period", reason: "1 to 3600 seconds")
            }
            period = value
        }
        var issuer = string("issuer")
        var account: String? = label.isEmpty ? nil : label
        if let colon = label.firstIndex(of: ":") {
            if issuer == nil { issuer = String(label[..<colon]) }
            account = String(label[label.index(after: colon)...]).drop(while: { $0 == " " }).description
        }
        return TOTP(
            secret: secret, algorithm: algorithm, encoding: steam ? .steam : .decimal(digits: digits), period: period,
            issuer: issuer.flatMap { $0.isEmpty ? nil : $0 }, account: account.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The parameters the parser reads; others are ignored.
    private static let known: Set<String> = ["secret", "issuer", "algorithm", "digits", "period", "encoder"]

    /// The secret's base32, percent-decoded into guarded memory first (`%3D` for padding appears in the wild).
    private static func decodeSecret(_ raw: UnsafeRawBufferPointer) throws(OTPError) -> SecureBytes {
        var invalid = false
        var length = 0
        let unescaped = SecureBytes(count: raw.count) { output in
            var index = 0
            while index < raw.count {
                if raw[index] == UInt8(ascii: "%") {
                    guard index + 2 < raw.count, let high = hexValue(raw[index + 1]), let low = hexValue(raw[index + 2])
                    else { invalid = true; return }
                    output[length] = high << 4 | low
                    index += 3
                } else {
                    output[length] = raw[index] == UInt8(ascii: "+") ? UInt8(ascii: " ") : raw[index]
                    index += 1
                }
                length += 1
            }
        }
        guard !invalid else { throw .invalidBase32 }
        return try unescaped.withUnsafeBytes { (bytes) throws(OTPError) -> SecureBytes in
            try Base32.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
        }
    }

    /// Percent-decoding of a non-secret part (label, issuer, parameters); invalid escapes are kept as they are.
    private static func percentDecoded(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index] == UInt8(ascii: "+") ? UInt8(ascii: " ") : bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
