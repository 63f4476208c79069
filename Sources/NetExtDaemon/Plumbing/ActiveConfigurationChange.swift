import NetExtCore
import NetExtIPC

/// What a controller that runs one enabled configuration of its kind at a time (the content
/// filter, the URL filter: the one enabled last wins) does when a configuration of that kind is
/// saved or removed. A pure decision; the controllers carry it out.
enum ActiveConfigurationChange: Equatable {
    /// Not the running configuration and not enabled: nothing to do.
    case ignore
    /// Stop the running configuration.
    case stop(ProviderStopReason)
    /// The running configuration changed only in fields that need no restart (its name, revision).
    case refresh
    /// Start this configuration, stopping the running one first if there is one.
    case start(stopping: ProviderStopReason?)

    init(active: Configuration?, incoming configuration: Configuration, removed: Bool) {
        let isActive = active?.id == configuration.id
        if removed || !configuration.isEnabled {
            self = isActive ? .stop(removed ? .configurationRemoved : .configurationDisabled) : .ignore
        } else if isActive, active?.protocolConfiguration == configuration.protocolConfiguration {
            self = .refresh
        } else {
            self = .start(stopping: active == nil ? nil : .superceded)
        }
    }
}
