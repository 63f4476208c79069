/// Why TLS could not be set up from files: each names the file and what is wrong with it.
public struct TLSSetupError: Error, Sendable, CustomStringConvertible {
    public let description: String

    package init(description: String) {
        self.description = description
    }
}
