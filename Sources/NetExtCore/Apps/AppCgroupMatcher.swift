/// Which cgroups belong to which app: the cgroup netextd makes for `netext run --app ID`
/// (`<launch root>/<ID>`), and the units the desktop's systemd makes when it starts an app
/// (``UnitNamePattern/systemdAppUnits(of:)``: `app-<ID>-<n>.scope`, `app-flatpak-<ID>-<n>.scope`,
/// `app-gnome-<ID>-<n>.scope`, …) or explicit unit patterns (`snap.firefox.*`). Pure: it reads
/// paths relative to the cgroup v2 root, as a scan of the hierarchy gives them.
public struct AppCgroupMatcher: Sendable, Hashable {
    /// An app and the unit names that are its own.
    public struct App: Sendable, Hashable {
        public var identifier: AppIdentifier
        public var unitPatterns: [UnitNamePattern]

        /// The app with systemd's conventional unit names plus `extraPatterns`.
        public init(_ identifier: AppIdentifier, extraPatterns: [UnitNamePattern] = []) {
            self.identifier = identifier
            self.unitPatterns = UnitNamePattern.systemdAppUnits(of: identifier) + extraPatterns
        }
    }

    public var apps: [App]
    /// The directory (relative to the root) under which netextd makes one cgroup per launched app.
    public var launchRoot: String

    public init(apps: [App], launchRoot: String) {
        self.apps = apps
        self.launchRoot = launchRoot
    }

    /// The path netextd launches `app` in.
    public func launchPath(of app: AppIdentifier) -> String { launchRoot + "/" + app.rawValue }

    /// The app `path` (relative to the root, no leading `/`) belongs to as a cgroup of its own —
    /// not as a descendant of one (``cgroups(in:)`` leaves descendants to the kernel's ancestor
    /// match) — if any.
    public func app(ofCgroup path: String) -> AppIdentifier? {
        let components = path.split(separator: "/")
        guard let last = components.last else { return nil }
        if components.count == launchRoot.split(separator: "/").count + 1, path.hasPrefix(launchRoot + "/") {
            return apps.first { $0.identifier.rawValue == last }?.identifier
        }
        let name = String(last)
        // `app-org.example.App-Two-12.scope` matches both org.example.App's pattern and
        // org.example.App-Two's: the longer identifier is the more specific claim.
        return apps.filter { app in app.unitPatterns.contains { $0.matches(name) } }
            .max { $0.identifier.rawValue.utf8.count < $1.identifier.rawValue.utf8.count }?.identifier
    }

    /// The app cgroups among `paths` (a scan of the hierarchy, in any order): every path that
    /// belongs to an app and has no ancestor belonging to the same app (the level rule of the
    /// ancestor already covers it).
    public func cgroups(in paths: [String]) -> [FlowSteering.AppCgroup] {
        var found: [FlowSteering.AppCgroup] = []
        var claimed: [AppIdentifier: Set<String>] = [:]
        for path in paths.sorted(by: { $0.split(separator: "/").count < $1.split(separator: "/").count }) {
            guard let app = app(ofCgroup: path) else { continue }
            let ancestors = Self.ancestors(of: path)
            if let owned = claimed[app], ancestors.contains(where: owned.contains) { continue }
            claimed[app, default: []].insert(path)
            found.append(FlowSteering.AppCgroup(app: app, path: path))
        }
        return found.sorted()
    }

    static func ancestors(of path: String) -> [String] {
        let components = path.split(separator: "/")
        guard components.count > 1 else { return [] }
        return (1..<components.count).map { components[..<$0].joined(separator: "/") }
    }
}
