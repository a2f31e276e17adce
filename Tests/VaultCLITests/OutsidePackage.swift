import Foundation
import Testing

/// A package outside this one, as an embedder writes it: the README's programs, each extracted as it is (the first
/// Swift block of its section) into the `main.swift` of an executable target that depends on this repository's
/// products only, this repository by local path (named `vault`, the package's identity).
///
/// Built once per test process, with one `swift build`, at one place: `.build/outside/` of this repository (the
/// package in `app/`, its scratch path `app/.build/`, the symbolic link `vault` to this repository). The place never
/// moves, so a later run rebuilds only what changed (a clean clone's first run builds VaultCore, SwiftNIO and
/// BoringSSL once: minutes; later runs: seconds).
enum OutsidePackage {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `swift` on PATH, or `nil`.
    static let swift: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        .map { "\($0)/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Whether the tests that build it run: `swift` on PATH, or under CI (where its absence fails).
    static var runs: Bool { swift != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The programs: an executable target's name, the README section its `main.swift` comes from, the product it
    /// depends on.
    static let programs = [
        (target: "Embedding", section: "Embedding the store", product: "VaultCore"),
        (target: "SyncFromAProgram", section: "Syncing from a program", product: "VaultSync"),
    ]

    /// The DemoApp (Examples/DemoApp), built here too: it is written on the library products only, and this is
    /// where the compiler checks that (inside the package, `package` declarations would be in its reach).
    static let demoApp = (
        target: "OutsideDemoApp", directory: "Examples/DemoApp",
        products: ["VaultCore", "VaultAgent", "VaultTerminal", "VaultAuth", "MobileServices"]
    )

    /// The first Swift block of the README's section `title`.
    static func readmeProgram(_ title: String) throws -> String {
        let readme = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = readme.range(of: "\n## \(title)\n"),
              let start = readme.range(of: "\n```swift\n", range: section.upperBound..<readme.endIndex),
              let end = readme.range(of: "\n```\n", range: start.upperBound..<readme.endIndex)
        else { throw BuildFailure(description: "README.md has no \"\(title)\" with a Swift block") }
        return String(readme[start.upperBound..<end.lowerBound]) + "\n"
    }

    /// The path of the built executable `target`.
    static func executable(_ target: String) throws -> String {
        try built.get() + "/" + target
    }

    private static let built = Result<String, any Error> { try build() }

    /// Why the package was not built (thrown to every test that needs it: an issue recorded by the first one alone
    /// would let the others pass).
    struct BuildFailure: Error, CustomStringConvertible {
        let description: String
    }

    private static func build() throws -> String {
        guard let swift = Self.swift else { throw BuildFailure(description: "swift is not on PATH (CI=true)") }
        let place = repository.appendingPathComponent(".build/outside").path
        let outside = place + "/app"
        let link = place + "/vault"
        try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: true)
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != repository.path {
            try? FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: repository.path)
        }
        var targets = programs.map {
            ".executableTarget(name: \"\($0.target)\", dependencies: [.product(name: \"\($0.product)\", package: \"vault\")])"
        }
        let demoProducts = demoApp.products.map { ".product(name: \"\($0)\", package: \"vault\")" }
            + [".product(name: \"ArgumentParser\", package: \"swift-argument-parser\")"]
        targets.append(".executableTarget(name: \"\(demoApp.target)\", dependencies: [\(demoProducts.joined(separator: ", "))])")
        try update(outside + "/Package.swift", """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "app",
                dependencies: [
                    .package(path: "\(link)"),
                    .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
                ],
                targets: [
                    \(targets.joined(separator: ",\n        "))
                ]
            )

            """)
        for program in programs {
            try update(outside + "/Sources/\(program.target)/main.swift", readmeProgram(program.section))
        }
        let examples = repository.appendingPathComponent(demoApp.directory).path
        for file in try FileManager.default.contentsOfDirectory(atPath: examples) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: examples + "/" + file, encoding: .utf8)
            try update(outside + "/Sources/\(demoApp.target)/\(file)", text)
        }
        // The same dependency versions as this package's (resolved from SwiftPM's cache when it has them).
        if let resolved = FileManager.default.contents(atPath: repository.appendingPathComponent("Package.resolved").path) {
            try update(outside + "/Package.resolved", String(decoding: resolved, as: UTF8.self))
        }
        // The programs' own sources are compiled again every time (seconds): across packages, SwiftPM's incremental
        // build kept a main.o compiled against an older layout of a library type (MergeReport) and the program read
        // garbage (a crash: "No foreign strings on Linux"). The libraries' objects stay incremental.
        // So their sources are touched: newer than their objects, they are compiled again.
        for target in programs.map(\.target) + [demoApp.target] {
            let sources = outside + "/Sources/" + target
            for file in (try? FileManager.default.contentsOfDirectory(atPath: sources)) ?? [] {
                try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: sources + "/" + file)
            }
        }
        let environment = ProcessInfo.processInfo.environment
        let built = try CLI.exec(
            swift, ["build", "--package-path", outside], environment: [
                "HOME": environment["HOME"] ?? NSTemporaryDirectory(), "PATH": environment["PATH"] ?? "/usr/bin:/bin",
            ], timeout: 1_200)
        guard built.status == 0 else {
            throw BuildFailure(description: "swift build of the README's programs: exit \(built.status)\n\(built.stderr)\n\(built.stdoutText)")
        }
        return outside + "/.build/debug"
    }

    /// Writes `text` to `path` unless it holds it already (an unchanged file is not rebuilt).
    private static func update(_ path: String, _ text: String) throws {
        guard FileManager.default.contents(atPath: path) != Data(text.utf8) else { return }
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
