import NetExtCore

extension NetworkManagerWiFiService {
    public func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        let configuration = try resolvingSSIDPrefix(configuration)
        try configuration.validate()
        let existing = try ownConnections(now: now).first { $0.name == configuration.name }
        let settings = try NetworkManagerSettings.settings(for: configuration, uuid: existing?.uuid ?? uuid, now: now)
        let (target, alreadyJoined) = try joinTarget(for: configuration)
        let connection: String = try guarded { () throws(DBusError) -> String in
            if let existing {
                _ = try bus.call(.methodCall(
                    destination: Self.service, path: existing.path, interface: Self.connectionInterface, member: "Update", body: [settings]))
                return existing.path
            }
            let member = configuration.joinOnce ? "AddConnectionUnsaved" : "AddConnection"
            let body = try bus.call(.methodCall(
                destination: Self.service, path: Self.settingsPath, interface: Self.settingsInterface, member: member, body: [settings]))
            guard let path = body.first?.stringValue else { throw .unexpectedReply(member: member, expected: "o", found: "") }
            return path
        }
        guard let target else { return }  // kept; NetworkManager joins it when it comes in range
        if alreadyJoined {
            throw .alreadyAssociated("\(target.interface) has already joined \"\(configuration.ssid)\"; the configuration is kept.")
        }
        try activate(connection: connection, on: target)
    }

    public func removeConfiguration(named name: String) throws(HotspotConfigurationError) {
        for connection in try ownConnections(now: nil) where connection.name == name { try delete(connection.path) }
    }

    public func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String] {
        try ownConnections(now: now).map(\.name)
    }

    struct OwnConnection {
        var path: String
        var name: String
        var uuid: String
    }

    /// NetExt's connections; with `now`, the expired ones are deleted and left out.
    func ownConnections(now: Double?) throws(HotspotConfigurationError) -> [OwnConnection] {
        let paths = try guarded { () throws(DBusError) in
            try bus.call(.methodCall(destination: Self.service, path: Self.settingsPath, interface: Self.settingsInterface, member: "ListConnections"))
        }
        var own: [OwnConnection] = []
        for value in paths.first?.arrayValue ?? [] {
            guard let path = value.stringValue else { continue }
            let settings: DBusValue
            do {
                let body = try bus.call(.methodCall(destination: Self.service, path: path, interface: Self.connectionInterface, member: "GetSettings"))
                guard let first = body.first else { continue }
                settings = first
            } catch .remote {
                continue  // removed meanwhile, or not ours to read
            } catch {
                throw Self.failure(error)
            }
            guard let mark = NetworkManagerSettings.mark(in: settings) else { continue }
            if let now, let expires = mark.expires, expires <= now {
                try delete(path)
                continue
            }
            let uuid = settings.dictionaryValue?["connection"]?.dictionaryValue?["uuid"]?.stringValue ?? ""
            own.append(OwnConnection(path: path, name: mark.name, uuid: uuid))
        }
        return own
    }

    private func activate(connection: String, on network: WiFiScanResult) throws(HotspotConfigurationError) {
        guard let device = try wifiDevices().first(where: { $0.interface == network.interface }) else { return }
        try guarded { () throws(DBusError) in
            let points = try bus.call(.methodCall(destination: Self.service, path: device.path, interface: Self.wirelessInterface, member: "GetAllAccessPoints"))
            var point = "/"
            for candidate in points.first?.arrayValue ?? [] {
                guard let path = candidate.stringValue else { continue }
                let bssid = try? bus.property("HwAddress", of: Self.accessPointInterface, at: path, on: Self.service).stringValue
                if bssid == network.bssid { point = path }
            }
            _ = try bus.call(.methodCall(
                destination: Self.service, path: Self.managerPath, interface: Self.service, member: "ActivateConnection",
                body: [.objectPath(connection), .objectPath(device.path), .objectPath(point)]))
        }
    }

    private func delete(_ path: String) throws(HotspotConfigurationError) {
        try guarded { () throws(DBusError) in
            _ = try bus.call(.methodCall(destination: Self.service, path: path, interface: Self.connectionInterface, member: "Delete"))
        }
    }
}
