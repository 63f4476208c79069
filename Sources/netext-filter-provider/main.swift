// The reference content filter data provider: `netext-filter-provider school`.
import Foundation
import NetExt
import NetExtFilters

let arguments = CommandLine.arguments.dropFirst()
guard arguments.first == "school" else {
    FileHandle.standardError.write(Data("usage: netext-filter-provider school   (started by netextd from a filter-data manifest)\n".utf8))
    exit(64)
}
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "org.netext.filter.school"
do {
    try await ProviderHost.run(filter: SchoolFilterProvider(), bundleIdentifier: bundleIdentifier)
} catch {
    FileHandle.standardError.write(Data("netext-filter-provider: \(error)\n".utf8))
    exit(1)
}
