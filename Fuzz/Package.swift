// swift-tools-version: 6.1
import PackageDescription

import struct Foundation.URL

// A path dependency's identity is its directory's name (`main` in one checkout, `vault` in another).
let projectIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

// libFuzzer targets for the vault's parsers, as a package of their own (sanitized build, separate .build).
// Build and run: Fuzz/run.sh [seconds]     (see README.md)
let package = Package(
    name: "VaultFuzz",
    // Linux only, as the package it measures or fuzzes: no `platforms` line (a macOS minimum would claim a build that
    // does not exist).
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzHeader",
            dependencies: [.product(name: "VaultCore", package: projectIdentity)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzAgentWire",
            dependencies: [.product(name: "VaultAgent", package: projectIdentity)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzSSHAgent",
            dependencies: [.product(name: "VaultSSHAgent", package: projectIdentity)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzDocument",
            dependencies: [.product(name: "VaultCore", package: projectIdentity)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzOpen",
            dependencies: [.product(name: "VaultCore", package: projectIdentity)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
