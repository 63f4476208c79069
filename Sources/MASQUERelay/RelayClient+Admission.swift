import NIOCore

extension RelayClient {
    /// Sends one request under the connection's admission (``RelayAdmissionGate``): `attempt`
    /// opens its stream with the fields given and returns once the relay accepted, throwing its
    /// refusal (``Failure``) otherwise; it releases what it made when it throws.
    ///
    /// With a token source, the request that presents a token for the connection takes a fresh
    /// one for the relay's known challenge; when the relay answers 407 with a challenge the
    /// source answers (the first request to this relay, or a challenge that changed), the
    /// request is sent once more with a token for it. A token that could not be had fails this
    /// request only: the next one presents again.
    func admitting<Result>(_ attempt: ([(name: String, value: String)]) async throws -> Result) async throws -> Result {
        let turn = try await admission.begin()
        var fields = RelayAdmissionGate.fields(requestFields, for: turn)
        let fetching = turn == .presenting ? tokens : nil
        do {
            if let fetching, let credential = try await fresh({ try await fetching.credential(forKnownChallengeOf: relayAuthority) }) {
                fields = Self.presenting(credential, in: fields)
            }
            let result: Result
            do { result = try await attempt(fields) } catch let refusal as Failure where refusal.status == 407 && fetching != nil {
                guard let fetching, let credential = try await fresh({ try await fetching.credential(answering: refusal.challenges, relay: relayAuthority) }) else {
                    throw refusal
                }
                result = try await attempt(Self.presenting(credential, in: fields))
            }
            admission.settle(turn, with: .success(()))
            return result
        } catch {
            admission.settle(turn, with: .failure(error))
            throw error
        }
    }

    /// Opens a stream with `handler` and waits for the relay's answer to its request
    /// (`answered`, settled by the handler's ``RelayAnswer``); a refused stream is closed. Every
    /// `attempt` of ``admitting(_:)`` goes through here.
    func openAnswered(_ handler: some ChannelHandler & Sendable, answered: EventLoopPromise<Void>) async throws -> any Channel {
        let stream: any Channel
        do { stream = try await openStream(handler) } catch {
            answered.fail(error)
            throw Failure(description: "could not open a stream to the relay: \(error)", status: nil)
        }
        do { try await answered.futureResult.get() } catch {
            stream.close(promise: nil)
            throw error
        }
        return stream
    }

    /// A credential from the token source; its failure said as one of the relay client's
    /// (without a status, so the gate lets the next request present again).
    private func fresh(_ fetch: () async throws -> String?) async throws -> String? {
        do { return try await fetch() } catch {
            throw Failure(description: "the relay at \(relayAuthority) asks for a Privacy Pass token and none could be had: \(error)", status: nil)
        }
    }

    /// `fields` with `credential` as the request's only `Proxy-Authorization`.
    private static func presenting(_ credential: String, in fields: [(name: String, value: String)]) -> [(name: String, value: String)] {
        fields.filter { $0.name.lowercased() != "proxy-authorization" } + [(name: "proxy-authorization", value: credential)]
    }
}
