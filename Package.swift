// swift-tools-version: 6.1
import PackageDescription

// The arrows go one way:
//   CSodium → VaultSodium → VaultCore → VaultCredentials → VaultAuthCore → VaultAuth (SwiftNIO, NIOSSL) → MobileServices
//   → NetworkCommands → vault-net; the library products → DemoApp
//   VaultCore → VaultSyncCore (the sync engine, its record, git sync: no networking) → VaultCommands (git setup),
//   and → VaultSync (+ VaultAuth: the S3 and OpenBao stores) → NetworkCommands (vault sync)
//   CVaultSystem → VaultTerminal (→ VaultCore, VaultCredentials) → VaultCommands (+ VaultCredentials: the credential
//   helpers) → NetworkCommands; VaultCommands → vault
//   VaultAuthCore → VaultAuthTesting (test doubles, no networking) → the test targets
//   VaultCore → VaultAge (age's X25519 recipients, stanza, header and payload) → VaultAgePQ (+ swift-crypto's X-Wing)
// The emulator depends on nothing of ours but the wire format.
//
// Linux only (Glibc, prctl, SO_PEERCRED): no `platforms` line, because SwiftPM cannot say "Linux" there and a
// macOS minimum would claim a build that does not exist.

// VAULT_STATIC_PIE=1 (scripts/install): `vault` is linked as a static PIE (scripts/static-pie.flags says why and
// what each flag does; with `swift build --static-swift-stdlib --disable-local-rpath`). As the vault target's linker
// settings they reach only vault's link, so vault and vault-net share one build of the modules they share.
let staticPIE: [LinkerSetting] = Context.environment["VAULT_STATIC_PIE"] == "1"
    ? [.unsafeFlags(["-use-ld=lld", "-Xclang-linker", "-static-pie", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"])]
    : []

// VAULT_LIBEXECDIR (scripts/install sets lib/vault): the one build-time setting that lets vault find vault-net
// outside its own directory: relative to the prefix (PREFIX/bin/vault → PREFIX/lib/vault/vault-net, a package's
// /usr/lib/vault) or absolute; next to vault stays the fallback. A quote or a backslash would not survive the C
// string: refused.
let libexecDirectory: [CSetting] = {
    guard let directory = Context.environment["VAULT_LIBEXECDIR"], !directory.isEmpty else { return [] }
    precondition(!directory.contains("\"") && !directory.contains("\\"),
                 "VAULT_LIBEXECDIR must be a path without quotes or backslashes")
    return [.define("VAULT_LIBEXECDIR", to: "\"\(directory)\"")]
}()

let package = Package(
    name: "vault",
    products: [
        .library(name: "VaultCore", targets: ["VaultCore"]),
        .library(name: "VaultAgent", targets: ["VaultAgent"]),
        .library(name: "VaultSSHAgent", targets: ["VaultSSHAgent"]),
        .library(name: "VaultCredentials", targets: ["VaultCredentials"]),
        .library(name: "VaultAuthCore", targets: ["VaultAuthCore"]),
        .library(name: "VaultAuth", targets: ["VaultAuth"]),
        .library(name: "VaultOTP", targets: ["VaultOTP"]),
        .library(name: "VaultSyncCore", targets: ["VaultSyncCore"]),
        .library(name: "VaultSync", targets: ["VaultSync"]),
        .library(name: "VaultAge", targets: ["VaultAge"]),
        .library(name: "VaultAgePQ", targets: ["VaultAgePQ"]),
        .library(name: "MobileServices", targets: ["MobileServices"]),
        .library(name: "VaultAuthTesting", targets: ["VaultAuthTesting"]),
        .library(name: "VaultTerminal", targets: ["VaultTerminal"]),
        .executable(name: "vault", targets: ["vault"]),
        .executable(name: "vault-net", targets: ["vault-net"]),
        .executable(name: "mobile-services-emulator", targets: ["mobile-services-emulator"]),
        .executable(name: "DemoApp", targets: ["DemoApp"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", exact: "0.9.20"),
    ],
    targets: [
        // C, wrapped in one place each.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // VAULT_LIBEXECDIR (above): where vault looks for vault-net before its own directory (vault_libexec_directory()).
        .target(name: "CVaultSystem", cSettings: libexecDirectory),
        // The only importer of CSodium (`internal import`): every libsodium call of the package goes through it.
        .target(name: "VaultSodium", dependencies: ["CSodium"]),

        // The encrypted store.
        .target(name: "VaultCore", dependencies: ["VaultSodium"]),
        // What executables and prompts need and a store library must not carry: the terminal (no-echo prompts,
        // signal handlers), secrets from descriptors and files, process hardening.
        .target(name: "VaultTerminal", dependencies: ["VaultCore", "VaultCredentials", "CVaultSystem"]),
        // The agent: keeps unlocked vaults' keys in one process and serves their entries on a Unix socket.
        // VaultAge: an age identity held for `vault unlock --identity` opens every vault shared with it.
        .target(name: "VaultAgent", dependencies: ["VaultCore", "CVaultSystem", "VaultAge"]),
        // The credential model: credentials, protection spaces, their layout in a vault (`VaultCredentialStore`), the
        // prompting protocol. No networking, no terminal: what stores or answers credentials (the git and docker
        // helpers) needs only this.
        .target(name: "VaultCredentials", dependencies: ["VaultCore"]),
        // HTTP authentication without I/O: the request and response model, WWW-Authenticate parsing,
        // KeystoreAuthenticator (the rules that answer Basic challenges with stored credentials, a state machine,
        // driven over any transport) and SigV4 signing. No networking: what answers credentials links only this.
        .target(name: "VaultAuthCore", dependencies: ["VaultCore", "VaultSodium", "VaultCredentials"]),
        // The transport alone: SwiftNIO and NIOSSL (docs/AUTH.md, "The transport"), the clients and TLS options over
        // it. Re-exports VaultCredentials and VaultAuthCore, so `import VaultAuth` is the whole library.
        .target(
            name: "VaultAuth",
            dependencies: [
                "VaultCore", "VaultSodium", "VaultCredentials", "VaultAuthCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // One-time passwords (RFC 6238 TOTP from otpauth:// URIs). HMAC-SHA-1 is not in libsodium: it comes from
        // swift-crypto (BoringSSL), in this target of its own so that only the verbs that compute a code link it.
        // otpauth:// URIs and base32 secrets, parsed and checked without any HMAC (`vault put --field otp` links it).
        .target(name: "OTPAuth", dependencies: ["VaultCore"]),
        .target(name: "VaultOTP", dependencies: ["OTPAuth", "VaultCore", .product(name: "Crypto", package: "swift-crypto")]),
        // age's X25519 recipients and identities (`age1…`, `AGE-SECRET-KEY-1…`, Bech32), its X25519 stanza, v1 text
        // header with its MAC and STREAM payload (C2SP age.md), on VaultSodium's primitives: the core of sharing a
        // vault by public key (issue 20). No networking, no terminal.
        .target(name: "VaultAge", dependencies: ["VaultCore", "VaultSodium"]),
        // age's post-quantum hybrid recipients and identities (`age1pq1…`, `AGE-SECRET-KEY-PQ-1…`) and its
        // `mlkem768x25519` stanza: HPKE with the ML-KEM-768 + X25519 KEM (X-Wing), which libsodium lacks, from
        // swift-crypto (BoringSSL), in a target of its own so that only what reads or writes such a stanza links it.
        .target(name: "VaultAgePQ", dependencies: ["VaultAge", "VaultCore", .product(name: "Crypto", package: "swift-crypto")]),
        // ssh keys (issue 36): SSH's wire encoding, openssh-key-v1 and PEM/PKCS#8 keys (bcrypt_pbkdf, aes256-ctr),
        // generation and signing (Ed25519 via VaultSodium; ECDSA P-256, RSA and AES-CTR from swift-crypto),
        // known_hosts and ssh_config host patterns, session binds and SSHSIG. No sockets, no terminal; only
        // vault-net links it (swift-crypto).
        .target(
            name: "VaultSSH",
            dependencies: [
                "VaultCore", "VaultSodium", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),
        // Import and export (docs/IMPORT-EXPORT.md): pure parsers and writers from bytes to entries and back (pass,
        // KeePass XML, Bitwarden JSON, 1PUX, CSV, vault's JSON). FoundationXML (libxml2) and ZIPFoundation (zlib):
        // only vault-net links it, so that `vault`'s start pays for neither.
        .target(
            name: "VaultImport",
            dependencies: ["VaultCore", .product(name: "ZIPFoundation", package: "ZIPFoundation")]
        ),
        // Sync without networking: the engine (read a copy, merge it entry by entry, write back conditionally, try
        // again), the record of each copy's last sync and the remote a vault remembers, and git sync. The seam, a
        // copy read and written conditionally (`VaultCopy`), is VaultCore's, whose local file is one. `vault` links
        // it (git sync), so it links no networking: as VaultAuthCore is to VaultAuth.
        .target(name: "VaultSyncCore", dependencies: ["VaultCore", "VaultSodium", "CVaultSystem"]),
        // The remote stores, S3 (conditional writes) and OpenBao (check-and-set), over the transport and SigV4 of
        // VaultAuth. Re-exports VaultSyncCore, so `import VaultSync` is the whole sync library.
        .target(name: "VaultSync", dependencies: ["VaultCore", "VaultAuth", "VaultSyncCore"]),
        // The freedesktop Secret Service (`vault secret-service`, docs/SECRET-SERVICE.md): sd-bus from libsystemd and GMP's
        // constant-time powm for its Diffie-Hellman session, wrapped in CSecretService and linked only by SecretService
        // (so only by vault-net); AES-128-CBC and HKDF from swift-crypto. A client of the agent: it holds no key.
        .target(name: "CSecretService", linkerSettings: [.linkedLibrary("systemd"), .linkedLibrary("gmp")]),
        .target(
            name: "SecretService",
            dependencies: [
                "CSecretService", "CVaultSystem", "VaultAgent", "VaultCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Device registration with the mobile-services API.
        .target(name: "MobileServices", dependencies: ["VaultCore", "VaultAuth"]),
        // Test doubles of the authentication layer (a counting in-memory credential store, a scripted prompt, an
        // in-memory server), as HummingbirdTesting; no networking, so VaultAuthCore's tests link none.
        .target(name: "VaultAuthTesting", dependencies: ["VaultAuthCore", "VaultCredentials"]),

        // The agent's ssh-agent socket (issue 36): the ssh-agent protocol over the agent's key ring, a companion
        // of the vault's socket (AgentServer.install(companion:)), installed by vault-net, the program agents run from.
        .target(name: "VaultSSHAgent", dependencies: ["VaultAgent", "VaultSSH", "VaultCore", "CVaultSystem"]),

        // The CLI: `vault` runs the vault's own verbs and the git and docker credential helpers (VaultCredentials:
        // they send no HTTP), and links no networking (SwiftNIO and BoringSSL would cost every start ~3 ms of CPU:
        // Benchmarks/README.md); it executes `vault-net`, installed next to it, for the verbs that need it
        // (`RoutedVerb.all`, the one table of them). Nothing `vault` links imports more than FoundationEssentials:
        // full Foundation brings ICU's 34 MB of data with it (Benchmarks/README.md, "Size").
        .target(
            name: "VaultCommands",
            dependencies: [
                "VaultCore", "VaultSodium", "VaultTerminal", "VaultAgent", "CVaultSystem", "OTPAuth", "VaultAge",
                "VaultCredentials", "VaultSyncCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "vault",
            dependencies: [
                "VaultCore", "VaultTerminal", "VaultCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: staticPIE
        ),
        // The verbs that talk HTTP (login, fetch, logout, device, sync) or link swift-crypto (otp), libxml2 and zlib
        // (import, export), their option groups, prompt and error presentation: shared by vault-net and the DemoApp.
        .target(
            name: "NetworkCommands",
            dependencies: [
                "VaultCore", "VaultSodium", "VaultTerminal", "VaultAuth", "MobileServices", "VaultCommands", "VaultOTP", "VaultSync",
                "VaultSyncCore", "VaultImport", "VaultSSH", "VaultAgent", "SecretService",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // VaultAgePQ (swift-crypto's X-Wing): age's post-quantum keys, installed at start; `vault` runs vault-net for
        // a command line that needs them (PostQuantumRoute), so that its own start does not pay for swift-crypto.
        .executableTarget(
            name: "vault-net",
            dependencies: [
                "NetworkCommands", "VaultCommands", "VaultTerminal", "VaultAgePQ", "VaultSSHAgent",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The loopback emulator of the mobile-services API.
        .target(
            name: "MobileServicesEmulator",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")]
        ),
        .executableTarget(
            name: "mobile-services-emulator",
            dependencies: [
                "MobileServicesEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The SAP mobile-services tutorials' demo app on a terminal, written as an embedder writes: library products
        // only (EmbeddingTests builds it again outside this package, where nothing else is in reach).
        .executableTarget(
            name: "DemoApp",
            dependencies: [
                "VaultCore", "VaultTerminal", "VaultAgent", "VaultAuth", "MobileServices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/DemoApp"
        ),

        // Test support shared by the test targets (a real nginx, the Python test server, running tools, free ports).
        .target(name: "VaultTestSupport", path: "Tests/VaultTestSupport", resources: [.copy("http_test_server.py"), .copy("moto_s3.py")]),
        .testTarget(name: "VaultCoreTests", dependencies: ["VaultCore", "VaultSodium", "VaultTestSupport"]),
        .testTarget(name: "VaultAgePQTests", dependencies: ["VaultAgePQ", "VaultAge", "VaultCore", "VaultSodium", "VaultTestSupport"]),
        .testTarget(name: "VaultAgeTests", dependencies: ["VaultAge", "VaultCore", "VaultSodium", "VaultTestSupport"]),
        .testTarget(name: "VaultSSHTests", dependencies: ["VaultSSH", "VaultCore", "VaultTestSupport"]),
        .testTarget(name: "VaultSSHAgentTests", dependencies: ["VaultSSHAgent", "VaultSSH", "VaultAgent", "VaultCore", "VaultTestSupport"]),
        .testTarget(name: "VaultOTPTests", dependencies: ["VaultOTP", "VaultCore", "VaultTestSupport"]),
        .testTarget(name: "VaultSyncCoreTests", dependencies: ["VaultSyncCore", "VaultCore"]),
        .testTarget(name: "VaultSyncTests", dependencies: ["VaultSync", "VaultSyncCore", "VaultCore", "VaultTestSupport"]),
        .testTarget(name: "SecretServiceTests", dependencies: ["SecretService", "VaultCore"]),
        .testTarget(name: "VaultImportTests", dependencies: ["VaultImport", "VaultCore", "VaultTestSupport"]),
        .testTarget(name: "VaultTerminalTests", dependencies: ["VaultTerminal", "VaultCore", "VaultTestSupport"]),
        // The agent's unit layer: its key ring on a clock moved by hand, its service called directly, its wire.
        .testTarget(name: "VaultAgentTests", dependencies: ["VaultAgent", "VaultCore", "VaultAge", "VaultTestSupport"]),
        .testTarget(name: "VaultCLITests", dependencies: ["VaultAgent", "VaultCore", "VaultTerminal", "VaultCommands", "VaultSyncCore", "VaultTestSupport"]),
        // VaultAuthCore's rules without I/O (challenges, KeystoreAuthenticator, SigV4): no networking target among
        // its dependencies.
        .testTarget(
            name: "VaultAuthCoreTests",
            dependencies: [
                "VaultAuthCore", "VaultAuthTesting", "VaultCredentials", "VaultCore", "VaultSodium", "VaultTerminal",
                "VaultTestSupport",
            ]),
        .testTarget(
            name: "VaultAuthTests",
            dependencies: [
                "VaultAuth", "VaultAuthCore", "VaultAuthTesting", "VaultCredentials", "VaultCore", "VaultSodium",
                "VaultTerminal", "VaultTestSupport",
            ]),
        .testTarget(
            name: "MobileServicesTests",
            dependencies: ["MobileServices", "VaultAuth", "VaultCore", "MobileServicesEmulator", "VaultTestSupport"]),
        .testTarget(
            name: "MobileServicesEmulatorTests",
            dependencies: [
                "MobileServicesEmulator", "VaultTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ]
)
