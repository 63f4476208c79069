// The reference content filter providers: `netext-filter-provider school` (data provider),
// `netext-filter-provider school-control` (control provider), the personal firewall
// (`firewall`, `firewall-control`) and
// `netext-filter-provider url-prefilter --from URL` (URL filter control provider), started by
// netextd from their manifests.
import Foundation
import NetExt
import NetExtFilters

let usage = """
    usage: netext-filter-provider ROLE [ARGUMENTS]   (started by netextd from a provider manifest)
    roles: school (filter-data), school-control (filter-control), firewall (filter-data),
           firewall-control (filter-control), url-prefilter --from URL (url-filter-control)
    See docs/content-filter.md and docs/url-filter.md.
    """
ProviderExecutable.answerInformationalArguments(name: "netext-filter-provider", usage: usage)
let role = CommandLine.arguments.dropFirst().first
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"]
do {
    switch role {
    case "school":
        try await ProviderHost.run(filter: SchoolFilterProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.school")
    case "school-control":
        try await ProviderHost.run(filterControl: SchoolControlProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.school.control")
    case "firewall":
        try await ProviderHost.run(filter: PersonalFirewallProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.firewall")
    case "firewall-control":
        try await ProviderHost.run(filterControl: PersonalFirewallControlProvider(), bundleIdentifier: bundleIdentifier ?? "org.netext.filter.firewall.control")
    case "url-prefilter":
        try await ProviderHost.run(
            urlFilterControl: try PrefilterDownloadProvider(arguments: Array(CommandLine.arguments.dropFirst(2))),
            bundleIdentifier: bundleIdentifier ?? "org.netext.urlfilter.control")
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("netext-filter-provider: \(error)\n".utf8))
    exit(1)
}
