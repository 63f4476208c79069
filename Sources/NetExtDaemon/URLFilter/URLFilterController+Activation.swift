import BloomFilter
import Foundation
import Logging
import NetExtCore
import NetExtIPC
import PrivacyPass
import URLFilter

extension URLFilterController {
    /// The PIR use case of a configuration: `<app identifier>.url.filtering`, the app being the
    /// control provider's containing app (an extension's bundle identifier extends its app's).
    static func useCase(controlProvider: String) -> String {
        let parts = controlProvider.split(separator: ".")
        let app = parts.count > 2 ? parts.dropLast().joined(separator: ".") : controlProvider
        return app + ".url.filtering"
    }

    func activate(_ configuration: Configuration, settings: URLFilterProtocol) async throws(NetExtError) {
        let manifest = try registry.manifest(for: settings.controlProviderBundleIdentifier, extensionPoint: .urlFilterControl)
        guard let reference = settings.pirAuthenticationTokenReference, let credential = try secrets.secret(for: reference), !credential.isEmpty else {
            throw .invalid("the URL filter has no pirAuthenticationToken; set one with setConfiguration (or `netext urlfilter configure --token`)")
        }
        guard let pirURL = URL(string: settings.pirServerURL), let issuerURL = URL(string: settings.pirPrivacyPassIssuerURL) else {
            throw .invalid("pirServerURL and pirPrivacyPassIssuerURL must be URLs")
        }
        let transport: any ServiceTransport
        if let relay = settings.relayURL.flatMap(URL.init(string:)) {
            transport = ObliviousTransport(relayURL: relay)
        } else {
            transport = DirectTransport()
            logger.warning("the URL filter has no relay: the PIR server and issuer see this machine's address")
        }
        let directory = stateDirectory + "/url-filter"
        if mkdir(directory, 0o700) != 0, errno != EEXIST { throw .readWrite("cannot create \(directory)") }
        let tokenStore: PrivateTokenStore
        do throws(URLFilterError) { tokenStore = try PrivateTokenStore(path: directory + "/tokens-\(configuration.id.uuidString.lowercased())") } catch {
            throw .readWrite("\(error)")
        }
        let tokens = PrivacyPassClient(issuerURL: issuerURL, credential: credential, transport: transport, store: tokenStore)
        let client = PIRHTTPClient(server: pirURL, useCase: Self.useCase(controlProvider: settings.controlProviderBundleIdentifier),
                                   transport: TokenAuthenticatingTransport(inner: transport, tokens: tokens))
        let lookup = URLFilterLookup(prefilter: nil, client: client, failClosed: settings.shouldFailClosed)
        // The provider gets the configuration without the credential.
        let supervisor = FilterProviderKeeper(
            role: .urlFilterControl, manifest: manifest, start: ProviderStart(configuration: configuration, options: [:], password: nil),
            environment: [:], logger: logger, startDeadline: startDeadline, supervisor: providers,
            handle: { [weak self] message in await self?.received(message) }, ended: {})
        active = Active(configuration: configuration, settings: settings, supervisor: supervisor, lookup: lookup, tokens: tokens, tokenStore: tokenStore)
        await supervisor.launch()
        let interval = fetchIntervalOverride ?? settings.prefilterFetchInterval
        let id = configuration.id
        active?.refresher = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let fetched = await self.fetchPrefilter(configurationID: id)
                // After a failure, try again sooner (but not in a tight loop).
                let wait = fetched ? interval : min(interval, 30)
                try? await Task.sleep(for: .seconds(wait))
            }
        }
        logger.info("URL filter started", metadata: [
            "configuration": "\(configuration.id)", "control_provider": "\(manifest.bundleIdentifier)",
            "relay": "\(settings.relayURL ?? "none")", "fail_closed": "\(settings.shouldFailClosed)", "fetch_interval_s": "\(Int(interval))",
        ])
    }

    func deactivate(reason: ProviderStopReason) async {
        guard let current = active else { return }
        active = nil
        current.refresher?.cancel()
        await current.supervisor.stop(reason: reason)
        for (_, continuation) in pendingFetches { continuation.resume(returning: nil) }
        pendingFetches = [:]
        logger.info("URL filter stopped", metadata: ["configuration": "\(current.configuration.id)", "reason": "\(reason.rawValue)"])
    }

    /// Asks the control provider for the prefilter once it is ready, validates the answer and
    /// swaps it in. Returns whether a prefilter is in force afterwards.
    func fetchPrefilter(configurationID: UUID) async -> Bool {
        guard let supervisor = active?.supervisor, active?.configuration.id == configurationID else { return false }
        // Wait (bounded) for the provider to be ready.
        for _ in 0..<300 where !(await supervisor.isReady) {
            try? await Task.sleep(for: .milliseconds(100))
            if Task.isCancelled || active?.configuration.id != configurationID { return false }
        }
        nextFetchID += 1
        let id = nextFetchID
        guard await supervisor.send(.fetchPrefilter(id: id)) else { return fail(configurationID, "the control provider is not running") }
        let answer: ProviderMessage? = await withCheckedContinuation { continuation in
            pendingFetches[id] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(60))
                await self?.resolveFetch(id: id, with: nil)
            }
        }
        guard active?.configuration.id == configurationID else { return false }
        guard case .prefilterFetched(_, let prefilter, let error)? = answer else { return fail(configurationID, "the control provider did not answer within 60 s") }
        active?.fetches += 1
        if let error { return fail(configurationID, "fetchPrefilter failed: \(error)") }
        guard let prefilter else { return active?.prefilter != nil }
        do throws(NetExtError) {
            let bytes = try prefilter.resolvedBytes()
            if let path = prefilter.path { unlink(path) }
            let filter: BloomFilter
            do { filter = try BloomFilter(data: bytes, bitCount: prefilter.bitCount, hashCount: prefilter.hashCount, murmurSeed: prefilter.murmurSeed) } catch {
                throw NetExtError.invalid("prefilter: \(error)")
            }
            await active?.lookup.replacePrefilter(filter)
            active?.prefilter = (prefilter.bitCount, prefilter.hashCount, Date())
            active?.lastError = nil
            logger.info("URL filter prefilter in force", metadata: ["bits": "\(prefilter.bitCount)", "hashes": "\(prefilter.hashCount)"])
            return true
        } catch {
            return fail(configurationID, "prefilter refused: \(error)")
        }
    }

    private func fail(_ configurationID: UUID, _ reason: String) -> Bool {
        guard active?.configuration.id == configurationID else { return false }
        active?.lastError = reason
        logger.error("URL filter prefilter not updated; keeping the one in force", metadata: ["reason": "\(reason)"])
        return active?.prefilter != nil
    }

    func received(_ message: ProviderMessage) {
        if case .prefilterFetched(let id, _, _) = message { resolveFetch(id: id, with: message) }
    }

    func resolveFetch(id: Int, with message: ProviderMessage?) {
        pendingFetches.removeValue(forKey: id)?.resume(returning: message)
    }
}
