import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore

/// `vault generate`: a new random secret, made in guarded memory and stored in one write; printed only with
/// `--print`. Its entropy goes to stderr.
package struct Generate: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Store a new random secret under NAME (libsodium's uniform random numbers); print it only with --print.",
        discussion: """
            Characters (default: 24 from 'alnum') or, with --words N, N words of the EFF large word list (7,776 words, 12.9 bits each; https://www.eff.org/dice, CC BY 3.0 US). The entropy in bits goes to stderr. NAME must not exist unless --force.

            Character sets: alnum (A-Z a-z 0-9, 62), alpha (52), lower (26), digits (10), hex (0-9 a-f, 16), symbols (the 94 printable ASCII characters but space); or --chars 'CHARACTERS': exactly those characters (at least 2 distinct printable ASCII characters).
            """)

    @Argument(help: "The entry's name.")
    package var name: String

    @Option(help: "The number of characters (1 to 4096).")
    package var length: Int = 24

    @Option(help: "alnum, alpha, lower, digits, hex or symbols.")
    package var charset: String?

    @Option(help: ArgumentHelp("Draw from exactly these characters (at least 2 distinct printable ASCII).", valueName: "characters"))
    package var chars: String?

    @Option(help: "Generate N words instead of characters (1 to 64).")
    package var words: Int?

    @Option(help: "What separates the words.")
    package var separator: String = " "

    @Flag(help: "Also print the secret on stdout (a newline follows on a terminal).")
    package var print = false

    @Flag(name: .shortAndLong, help: "Replace NAME if it exists.")
    package var force = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if options.passphraseFD == 1 { throw ValidationError("stdout is not a passphrase source") }
        if let words {
            guard (1...64).contains(words) else { throw ValidationError("--words must be 1 to 64") }
        } else {
            guard (1...4096).contains(length) else { throw ValidationError("--length must be 1 to 4096") }
            _ = try alphabet()
        }
    }

    /// The characters to draw from.
    func alphabet() throws -> [UInt8] {
        let upper = Array(UInt8(ascii: "A")...UInt8(ascii: "Z")), lower = Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
        let digits = Array(UInt8(ascii: "0")...UInt8(ascii: "9"))
        if let chars {
            guard charset == nil else { throw ValidationError("give --charset or --chars, not both") }
            let set = Array(Set(chars.utf8)).sorted()
            guard set.count >= 2, set.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw ValidationError("--chars: at least 2 distinct printable ASCII characters (no space)")
            }
            return set
        }
        let name = charset ?? "alnum"
        switch name {
        case "alnum": return upper + lower + digits
        case "alpha": return upper + lower
        case "lower": return lower
        case "digits": return digits
        case "hex": return digits + Array(UInt8(ascii: "a")...UInt8(ascii: "f"))
        case "symbols": return Array(UInt8(ascii: "!")...UInt8(ascii: "~"))
        default:
            // A literal set only through --chars: a typo of a name ('digit') must not become the set {d, g, i, t}.
            let names = ["alnum", "alpha", "lower", "digits", "hex", "symbols"]
            let guess = CommandLineRunner.nearest(name, among: names).map { "did you mean '\($0)'? " } ?? ""
            throw ValidationError(
                "unknown character set '\(name)': \(guess)the sets are \(names.joined(separator: ", ")); for exactly the characters given, --chars '\(name)'")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            try checkNameArgumentIsUTF8(name)
            try SecureKeyValueStore.validate(key: name)
            let secret: SecureBytes
            let bits: Double
            let what: String
            if let words {
                let list = EFFLargeWordList.words
                secret = SecretGenerator.words(count: words, from: list, separator: separator)
                bits = SecretGenerator.entropyBits(count: words, choices: list.count)
                what = "\(words) word\(words == 1 ? "" : "s") of the EFF large list"
            } else {
                let alphabet = try alphabet()
                secret = SecretGenerator.characters(count: length, from: alphabet)
                bits = SecretGenerator.entropyBits(count: length, choices: alphabet.count)
                what = "\(length) character\(length == 1 ? "" : "s") from a set of \(alphabet.count)"
            }
            try withVault(options) { vault in
                try vault.update { changes in
                    if !force { changes.require(name, exists: false) }
                    try changes.put(secret, forKey: name)
                }
            }
            let rounded = (bits * 10).rounded(.down) / 10
            if options.json {
                var object: [String: Any] = ["name": name, "stored": true, "entropy_bits": rounded]
                // JSON needs the secret in ordinary memory, as `get --json` does; only when asked.
                if print { object["value"] = String(decoding: secret.unprotectedBytes, as: UTF8.self) }
                try writeJSON(object)
                return
            }
            writeToStderr("vault: generated \(what): \(rounded) bits of entropy\n")
            if print { try writeSecret(secret) }
        }
    }
}
