// swift-tools-version: 6.0
// A package of one's own that builds providers on NetExt's products: a content filter that
// extends the reference school filter, and the reference tunnel under another bundle identifier.
// Copy this directory to start a provider; point the dependency at NetExt's repository
// (`.package(url: "https://…/netext", from: "0.1.0")`) instead of the path.
import PackageDescription

let package = Package(
    name: "example-providers",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "NetExt", path: "../.."),
    ],
    targets: [
        // The provider's logic in a library, so tests can reach it.
        .target(
            name: "PortBlockingFilter",
            dependencies: [.product(name: "NetExt", package: "NetExt"), .product(name: "NetExtFilters", package: "NetExt")]),
        // The executable netextd starts (named in the provider's manifest).
        .executableTarget(
            name: "example-filter-provider",
            dependencies: ["PortBlockingFilter", .product(name: "NetExt", package: "NetExt")]),
        .executableTarget(
            name: "example-tunnel-provider",
            dependencies: [.product(name: "NetExt", package: "NetExt"), .product(name: "NetExtTunnel", package: "NetExt")]),
    ]
)
