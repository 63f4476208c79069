// The reference content filter providers: `netext-filter-provider school` (data provider) and
// `netext-filter-provider school-control` (control provider), started by netextd from their
// manifests.
import Foundation
import NetExt
import NetExtFilters

let role = CommandLine.arguments.dropFirst().first
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"]
do {
    switch role {
    case "school":
        try await ProviderHost.run(filter: SchoolFilterProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.school")
    case "school-control":
        try await ProviderHost.run(filterControl: SchoolControlProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.school.control")
    default:
        FileHandle.standardError.write(Data("usage: netext-filter-provider school|school-control   (started by netextd from a filter manifest)\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("netext-filter-provider: \(error)\n".utf8))
    exit(1)
}
