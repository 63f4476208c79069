/// What went wrong talking D-Bus: a malformed signature or message (with the offset at fault), a
/// bus that cannot be reached or refuses us, a call that failed or timed out on the other side.
public enum DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A type signature that breaks the specification's grammar.
    case badSignature(String, reason: String)
    /// A message whose bytes break the wire format at `offset`.
    case malformedMessage(offset: Int, reason: String)
    /// A value that does not have the type it is sent as.
    case typeMismatch(expected: String, found: String)
    /// A bus address that names no transport NetExt speaks (only `unix:path=` and `unix:abstract=`).
    case badAddress(String, reason: String)
    /// The bus socket could not be reached.
    case unreachable(address: String, reason: String)
    /// The bus refused the SASL EXTERNAL authentication.
    case authenticationRefused(String)
    /// The called service answered with a D-Bus error.
    case remote(name: String, message: String)
    /// No answer within the deadline.
    case timedOut(member: String, seconds: Double)
    /// The bus closed the connection.
    case closed
    /// An answer whose body is not what the method returns.
    case unexpectedReply(member: String, expected: String, found: String)

    public var description: String {
        switch self {
        case .badSignature(let signature, let reason):
            "The D-Bus type signature \"\(signature)\" is malformed: \(reason)."
        case .malformedMessage(let offset, let reason):
            "A D-Bus message is malformed at byte \(offset): \(reason)."
        case .typeMismatch(let expected, let found):
            "A D-Bus value of type \(found) was given where the signature says \(expected)."
        case .badAddress(let address, let reason):
            "The D-Bus address \"\(address)\" cannot be used: \(reason)."
        case .unreachable(let address, let reason):
            "Cannot reach the D-Bus bus at \(address): \(reason)."
        case .authenticationRefused(let answer):
            "The D-Bus bus refused to authenticate this process (it answered \"\(answer)\")."
        case .remote(let name, let message):
            message.isEmpty ? "The D-Bus call failed with \(name)." : "The D-Bus call failed with \(name): \(message)"
        case .timedOut(let member, let seconds):
            "The D-Bus call \(member) had no answer within \(seconds) s."
        case .closed:
            "The D-Bus bus closed the connection."
        case .unexpectedReply(let member, let expected, let found):
            "The D-Bus call \(member) answered with signature \"\(found)\" where \"\(expected)\" was expected."
        }
    }
}
