// swift-tools-version: 6.1
import PackageDescription

import struct Foundation.URL

// A path dependency's identity is its directory's name (`main` in one checkout, `vault` in another).
let projectIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

// The vault's benchmarks, as a package of their own so that the main build and the test suite stay fast.
// Run: cd Benchmarks && swift package benchmark     (see README.md)
let package = Package(
    name: "VaultBenchmarks",
    // Linux only, as the package it measures or fuzzes: no `platforms` line (a macOS minimum would claim a build that
    // does not exist).
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "VaultBenchmarks",
            dependencies: [
                .product(name: "VaultCore", package: projectIdentity),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/VaultBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
