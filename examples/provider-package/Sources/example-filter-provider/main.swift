// The executable of the example filter: netextd starts it from a manifest such as
//   {"bundleIdentifier": "com.example.filter", "extensionPoint": "filter-data",
//    "executable": "/usr/local/libexec/example-filter-provider", "user": "nobody"}
import Foundation
import NetExt
import PortBlockingFilter

ProviderExecutable.answerInformationalArguments(name: "example-filter-provider", usage: """
    usage: example-filter-provider   (started by netextd from a filter-data provider manifest)
    The school filter, plus vendorConfiguration.blockedPorts.
    """)
do {
    try await ProviderHost.run(
        filter: PortBlockingFilter(),
        bundleIdentifier: ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.example.filter")
} catch {
    FileHandle.standardError.write(Data("example-filter-provider: \(error)\n".utf8))
    exit(1)
}
