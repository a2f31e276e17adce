import Foundation
import Testing
@testable import VaultCommands

/// ``JSONText``, the CLI's `--json` writer, against Foundation's `JSONSerialization` (`.sortedKeys`,
/// `.withoutEscapingSlashes`), which wrote the CLI's JSON before `vault` stopped linking Foundation.
struct JSONTextTests {
    static func foundation(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    @Test func theCLIsValuesAreWrittenAsFoundationWroteThem() throws {
        let values: [Any] = [
            ["error": ["code": "usage", "exit_code": 64, "message": "no such entry 'a/b'", "hint": "run vault list"]],
            ["entries": [["name": "web/github", "size": 12, "created": "2026-11-26T16:18:03.120Z"], ["name": "é \u{1F511}", "size": 0]]],
            ["escapes": "quote \" backslash \\ slash / newline \n tab \t return \r bell \u{07} nul \u{00} unit \u{1F} del \u{7F} b \u{08} f \u{0C}"],
            ["flags": [true, false], "numbers": [0, -1, Int.max, Int.min], "nested": ["a": ["b": ["c": []]]], "empty": [String: Any]()],
            ["entropy_bits": 142.9, "whole": 64.0, "large": 13606.6, "small": 0.1, "negative": -2.5, "zero": 0.0],
            ["unsigned_64": UInt64.max, "signed_32": Int32.min, "byte": UInt8(255)],
            ["line\u{2028}separator": "\u{2029}", "bom": "\u{FEFF}"],
        ]
        for value in values {
            let ours = JSONText.encode(value), theirs = try Self.foundation(value)
            #expect(ours == theirs)
        }
    }

    /// Foundation sorted keys case-insensitively with digits as numbers ("u8" before "u64"), by the locale's rules;
    /// the CLI sorts by code point, the same on every machine. The CLI's own keys are lowercase words, where both
    /// agree; only keys made of user data (field names) can come out in another order, which JSON gives no meaning.
    @Test func keysAreInCodePointOrder() {
        let object: [String: Any] = ["b": 1, "B": 2, "a_b": 3, "ab": 4, "a10": 5, "a9": 6, "é": 7, "z": 8]
        #expect(JSONText.encode(object) == #"{"B":2,"a10":5,"a9":6,"a_b":3,"ab":4,"b":1,"z":8,"é":7}"#)
    }

    @Test func nilIsNull() {
        let missing: String? = nil
        let present: String? = "x"
        #expect(JSONText.encode(["missing": missing as Any, "present": present as Any]) == #"{"missing":null,"present":"x"}"#)
    }
}
