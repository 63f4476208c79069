// The reference hotspot helper (extension point `hotspot-helper`): logs in to a captive
// portal's form, keeps the session, logs off. Started by netextd from its manifest; see
// docs/captive-portals.md.
import Foundation
import NetExt
import NetExtFilters

let usage = """
    usage: \(FormLoginHotspotHelper.usage)
    (started by netextd from a provider manifest of extension point hotspot-helper; see docs/captive-portals.md)
    """
ProviderExecutable.answerInformationalArguments(name: "netext-hotspot-helper", usage: usage)
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "org.netext.hotspot.form"
do {
    let helper = try FormLoginHotspotHelper(arguments: Array(CommandLine.arguments.dropFirst()))
    try await ProviderHost.run(hotspotHelper: helper, bundleIdentifier: bundleIdentifier)
} catch {
    FileHandle.standardError.write(Data("netext-hotspot-helper: \(error)\n".utf8))
    exit(1)
}
