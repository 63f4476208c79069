import NIOCore

/// Where a TCP or UDP target is, once the policy has had its say: its name resolved
/// (`RelayResolver`) and the first address the relay may reach chosen — or the refusal to
/// answer (502 `dns_error` for a name without addresses, 403 `destination_ip_prohibited` for
/// one outside the allowed destinations). HTTP/2 streams and HTTP/1.1 CONNECT share it.
enum RelayTargetLookup {
    static func address(
        of host: String, port: UInt16, policy: RelayPolicy, on eventLoop: any EventLoop
    ) -> EventLoopFuture<Result<SocketAddress, RelayRequest.Refusal>> {
        RelayResolver.resolve(host, on: eventLoop).map { addresses in
            guard !addresses.isEmpty else {
                return .failure(.init(status: 502, reason: "the target has no address", detail: host, proxyStatus: "dns_error", counted: \.failed))
            }
            guard let address = addresses.first(where: policy.allows) else {
                return .failure(.init(
                    status: 403, reason: "the target is not in the relay's allowed destinations", detail: host,
                    proxyStatus: "destination_ip_prohibited", counted: \.forbidden))
            }
            guard let target = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: address), port: Int(port)) else {
                return .failure(.init(status: 502, reason: "the target address is not usable", detail: host, counted: \.failed))
            }
            return .success(target)
        }
    }
}
