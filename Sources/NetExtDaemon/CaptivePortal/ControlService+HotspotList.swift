import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

extension ControlService {
    /// `getHotspotList`: the Wi-Fi service's scan list, annotated by the running hotspot
    /// helpers' answers to `filterScanList`. A machine without a Wi-Fi service gets an empty
    /// list saying why.
    func hotspotList(interface: String?) async -> HotspotListReport {
        guard let wifi else { return HotspotListReport(service: nil, failure: "netextd looks for no Wi-Fi service.", scanList: HotspotScanList(scan: [], answers: [])) }
        let scanned = await BlockingWork.run { () -> Result<(service: String, networks: [WiFiScanResult], joined: [WiFiScanResult]), HotspotConfigurationError> in
            do throws(HotspotConfigurationError) { return .success(try wifi.scan(interface: interface)) } catch { return .failure(error) }
        }
        switch scanned {
        case .failure(let error):
            return HotspotListReport(service: nil, failure: error.description, scanList: HotspotScanList(scan: [], answers: []))
        case .success(let scan):
            let networks = scan.networks.map { HotspotNetwork($0) }
            let claims = await hotspotHelpers?.filterScanList(networks) ?? (answers: [], silent: [])
            return HotspotListReport(
                service: scan.service, scanList: HotspotScanList(scan: networks, answers: claims.answers), joinedBSSIDs: scan.joined.map(\.bssid),
                helpersAsked: claims.answers.map(\.helper) + claims.silent, helpersSilent: claims.silent)
        }
    }
}
