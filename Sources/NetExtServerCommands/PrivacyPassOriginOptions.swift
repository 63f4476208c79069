import ArgumentParser
import Foundation
import Logging
import PrivacyPass
import PrivacyServices

/// The options of a role that redeems Privacy Pass tokens (RFC 9577) from NetExt's issuer: the
/// PIR server and the MASQUE relay. Both take the same flags, so an admin learns them once.
struct PrivacyPassOriginOptions: ParsableArguments {
    @Option(help: "Require Privacy Pass tokens from this issuer (its base URL, e.g. http://10.0.0.2:8081).") var privacyPassIssuer: String?
    @Option(help: "The issuer name in token challenges (default: the issuer URL's host).") var issuerName: String?
    @Option(help: "This origin's name in token challenges (default: pir.netext for pir, relay.netext for relay).") var originName: String?
    @Flag(help: "Accept tokens made for any challenge of the issuer, as Apple's PIR service does (Apple's clients fetch tokens ahead of time with a challenge of their own); by default a token must be for this origin's challenge.")
    var acceptAnyTokenChallenge = false
    @Option(help: "SQLite file of redeemed tokens (pir's default: DATABASE/spent-tokens.sqlite; relay: required with --privacy-pass-issuer).") var spentTokens: String?
    @Option(help: "Seconds between fetches of the issuer's key directory (failed fetches are retried sooner, backing off from 5 s).") var directoryRefreshSeconds: Double = 300

    func validate() throws {
        guard directoryRefreshSeconds >= 1, directoryRefreshSeconds <= 86_400 else {
            throw ValidationError("--directory-refresh-seconds must be 1 to 86400, got \(directoryRefreshSeconds)")
        }
    }

    /// The verifier these options ask for (nil without `--privacy-pass-issuer`), its issuer's
    /// directory fetched once already (a warning when it is not reachable yet).
    func makeVerifier(
        defaultOriginName: String, defaultSpentTokens: String?, upstream: UpstreamTrustOptions, logger: Logger
    ) async throws -> PrivateTokenVerifier? {
        guard let privacyPassIssuer else { return nil }
        let trust = try HTTPServiceRunner.upstreamTLS(upstream)
        guard let base = URL(string: privacyPassIssuer), let host = base.host else { throw ValidationError("--privacy-pass-issuer must be a URL, got \(privacyPassIssuer)") }
        guard let spentPath = spentTokens ?? defaultSpentTokens else {
            throw ValidationError("--privacy-pass-issuer needs --spent-tokens FILE: redeemed tokens must be remembered across restarts")
        }
        let directoryURL = URL(string: base.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + IssuerDirectory.wellKnownPath)!
        let verifier: PrivateTokenVerifier
        do throws(PrivacyServiceError) {
            verifier = PrivateTokenVerifier(
                issuerName: issuerName ?? host, originName: originName ?? defaultOriginName, directoryURL: directoryURL, spent: try SpentTokenStore(path: spentPath),
                refreshInterval: directoryRefreshSeconds, tls: trust, acceptsAnyChallenge: acceptAnyTokenChallenge, logger: logger)
        } catch { throw HTTPServiceRunner.fail("\(error)") }
        if await verifier.refreshKeys() != true { logger.warning("the issuer's directory is not reachable yet; requests get 503 until it is") }
        return verifier
    }
}
