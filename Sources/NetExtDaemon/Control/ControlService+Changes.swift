import Foundation
import NetExtCore
import NetExtIPC

extension ControlService {
    /// Saves a configuration for `identity`: the owner is the caller (an existing configuration
    /// keeps its owner), secrets go to the secret store, references never come from the client.
    func save(_ request: SaveConfiguration, identity: ClientIdentity) async throws -> ConfigurationResult {
        var configuration = request.configuration
        let existing = try store.configuration(id: configuration.id)
        if let existing {
            guard identity.canSee(existing) else {
                // Another app's configuration with the same id: do not reveal it exists.
                throw NetExtError.invalid("configuration id \(configuration.id) is already in use")
            }
            configuration.owner = existing.owner
            configuration.profileIdentifier = existing.profileIdentifier
        } else {
            configuration.owner = identity.owner
            configuration.profileIdentifier = nil
        }
        try configuration.validate()
        // Names are checked when they are given (a new configuration, a rename), so a save that
        // changes something else never fails over a duplicate that was allowed before.
        let name = configuration.localizedDescription
        if request.allowsDuplicateName != true, existing.map({ !$0.isNamed(name) }) ?? true {
            if let twin = try store.allConfigurations().first(where: { $0.id != configuration.id && identity.canSee($0) && $0.isNamed(name) }) {
                throw NetExtError.invalid("a configuration named '\(LogText.escaped(twin.localizedDescription))' already exists (\(twin.id.uuidString)); choose another name, or allow a duplicate name (`netext create --allow-duplicate-name`)")
            }
        }
        if configuration.isEnabled { try registry.requireProviders(of: configuration) }
        var newSecrets: [String] = []
        var replacedSecrets: [String] = []
        func storeSecret(_ secret: String?, replacing current: String?) throws -> String? {
            guard let secret else { return current }
            let reference = try secrets.store(secret)
            newSecrets.append(reference)
            if let current { replacedSecrets.append(current) }
            return reference
        }
        switch configuration.protocolConfiguration {
        case .tunnelProvider(var settings):
            let current = existing.flatMap(Self.passwordReference)
            settings.passwordReference = try storeSecret(request.password, replacing: current)
            configuration.protocolConfiguration = .tunnelProvider(settings)
        case .personalVPN(var settings):
            var currentPassword: String?
            var currentShared: String?
            if case .personalVPN(let stored)? = existing?.protocolConfiguration {
                currentPassword = stored.passwordReference
                currentShared = stored.sharedSecretReference
            }
            settings.passwordReference = try storeSecret(request.password, replacing: currentPassword)
            settings.sharedSecretReference = try storeSecret(request.sharedSecret, replacing: currentShared)
            configuration.protocolConfiguration = .personalVPN(settings)
        case .urlFilter(var settings):
            var current: String?
            if case .urlFilter(let stored)? = existing?.protocolConfiguration { current = stored.pirAuthenticationTokenReference }
            settings.pirAuthenticationTokenReference = try storeSecret(request.password, replacing: current)
            configuration.protocolConfiguration = .urlFilter(settings)
        case .relay(var settings):
            // The Privacy Pass issuer's credential (`netext relay configure --privacy-pass-token-stdin`).
            var current: String?
            if case .relay(let stored)? = existing?.protocolConfiguration { current = stored.privacyPassTokenReference }
            settings.privacyPassTokenReference = try storeSecret(request.password, replacing: current)
            configuration.protocolConfiguration = .relay(settings)
        case .contentFilter, .dnsSettings:
            break
        }
        let outcome: ConfigurationStore.SaveOutcome
        do {
            outcome = try store.save(configuration)
        } catch {
            newSecrets.forEach(secrets.delete)
            throw error
        }
        replacedSecrets.forEach(secrets.delete)
        logger.info("configuration saved", metadata: ["id": "\(outcome.saved.id)", "name": "\(outcome.saved.localizedDescription)", "revision": "\(outcome.saved.revision)", "enabled": "\(outcome.saved.isEnabled)"])
        for disabled in outcome.disabled {
            logger.notice("configuration disabled: another enterprise VPN was enabled", metadata: ["id": "\(disabled.id)", "name": "\(LogText.quoted(disabled.localizedDescription))", "enabled": "\(LogText.quoted(outcome.saved.localizedDescription))"])
            await configurationChanged(disabled, removed: false)
            hub.configurationChanged(disabled, change: .saved)
        }
        await configurationChanged(outcome.saved, removed: false)
        hub.configurationChanged(outcome.saved, change: .saved)
        let disabled = outcome.disabled.map { ConfigurationName(id: $0.id, name: $0.localizedDescription) }
        return ConfigurationResult(configuration: outcome.saved, disabled: disabled.isEmpty ? nil : disabled)
    }

    static func passwordReference(of configuration: Configuration) -> String? {
        if case .tunnelProvider(let settings) = configuration.protocolConfiguration { return settings.passwordReference }
        return nil
    }

    /// Each of a profile's client identities as a PEM file in the secret store (mode 600), named
    /// by the configuration's `identityReference` (the relay's, or the DNS settings').
    func installIdentities(_ identities: [ProfileIdentity], into configuration: inout Configuration, stored: inout [String]) throws {
        for identity in identities {
            let reference = try secrets.store(try ProfileIdentityPEM.pem(of: identity))
            stored.append(reference)
            let path = secrets.directory + "/" + reference
            switch (identity.target, configuration.protocolConfiguration) {
            case (.relay(let index), .relay(var settings)) where settings.relays.indices.contains(index):
                settings.relays[index].identityReference = path
                configuration.protocolConfiguration = .relay(settings)
            case (.dnsSettings, .dnsSettings(var settings)):
                settings.identityReference = path
                configuration.protocolConfiguration = .dnsSettings(settings)
            default:
                throw NetExtError.invalid("the certificate payload \(identity.payloadUUID) is named by a payload that takes no identity")
            }
        }
    }

    /// Parses and installs a profile; its secrets go to the secret store first.
    func installProfile(_ data: Data, identity: ClientIdentity) async throws -> ProfileSummary {
        let profile = try ProfileParser.parse(data, owner: identity.owner)
        if let owner = try store.profileOwner(identifier: profile.identifier), !identity.isRoot, owner != identity.owner {
            throw NetExtError.permissionDenied("profile '\(profile.identifier)' was installed by another app or user")
        }
        var stored: [String] = []
        var configurations: [Configuration] = []
        do {
            for item in profile.configurations {
                var configuration = item.configuration
                switch configuration.protocolConfiguration {
                case .tunnelProvider(var settings):
                    if let password = item.password { settings.passwordReference = try secrets.store(password); stored.append(settings.passwordReference!) }
                    configuration.protocolConfiguration = .tunnelProvider(settings)
                case .personalVPN(var settings):
                    if let password = item.password { settings.passwordReference = try secrets.store(password); stored.append(settings.passwordReference!) }
                    if let shared = item.sharedSecret { settings.sharedSecretReference = try secrets.store(shared); stored.append(settings.sharedSecretReference!) }
                    configuration.protocolConfiguration = .personalVPN(settings)
                default:
                    break
                }
                try installIdentities(item.identities, into: &configuration, stored: &stored)
                configurations.append(configuration)
            }
        } catch {
            stored.forEach(secrets.delete)
            throw error
        }
        // Only one enterprise VPN may be enabled: of several in one profile, the first stays enabled.
        var enterpriseEnabled = false
        for index in configurations.indices where configurations[index].isEnterpriseVPN && configurations[index].isEnabled {
            if enterpriseEnabled { configurations[index].isEnabled = false }
            enterpriseEnabled = true
        }
        let previousSecrets = Set(try store.allConfigurations().filter { $0.profileIdentifier == profile.identifier }.flatMap(\.secretReferences))
        let result: (saved: [ConfigurationStore.SaveOutcome], removed: [Configuration])
        do {
            result = try store.install(profile: profile, configurations: configurations, owner: identity.owner)
        } catch {
            stored.forEach(secrets.delete)
            throw error
        }
        let nowReferenced = try store.secretReferences()
        previousSecrets.subtracting(nowReferenced).forEach(secrets.delete)
        logger.info("profile installed", metadata: ["profile": "\(profile.identifier)", "configurations": "\(result.saved.count)", "skipped": "\(profile.skippedPayloads.count)"])
        for removed in result.removed {
            await configurationChanged(removed, removed: true)
            hub.configurationChanged(removed, change: .removed)
        }
        for outcome in result.saved {
            for disabled in outcome.disabled {
                await configurationChanged(disabled, removed: false)
                hub.configurationChanged(disabled, change: .saved)
            }
            await configurationChanged(outcome.saved, removed: false)
            hub.configurationChanged(outcome.saved, change: .saved)
        }
        return ProfileSummary(
            identifier: profile.identifier, displayName: profile.displayName, organization: profile.organization,
            installedAt: Date(), configurationIDs: result.saved.map(\.saved.id), skippedPayloads: profile.skippedPayloads)
    }

    /// Removes a profile and its configurations.
    func removeProfile(_ identifier: String, identity: ClientIdentity) async throws -> ProfileRemoval {
        guard let owner = try store.profileOwner(identifier: identifier), identity.isRoot || owner == identity.owner else {
            throw NetExtError.unknown("no installed profile with identifier '\(identifier)'")
        }
        let removed = try store.removeProfile(identifier: identifier)
        removed.flatMap(\.secretReferences).forEach(secrets.delete)
        logger.info("profile removed", metadata: ["profile": "\(identifier)", "configurations": "\(removed.count)"])
        for configuration in removed {
            await configurationChanged(configuration, removed: true)
            hub.configurationChanged(configuration, change: .removed)
        }
        return ProfileRemoval(identifier: identifier, removedConfigurationIDs: removed.map(\.id))
    }
}
