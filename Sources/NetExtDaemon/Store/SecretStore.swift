import Foundation
import NetExtCore
#if canImport(Glibc)
import Glibc
import NetExtLinux
#endif

/// Secrets (passwords, shared secrets, tokens) kept apart from the readable configuration:
/// one file per secret in a 0700 directory, each file mode 0600, written atomically
/// (temporary file, fsync, rename, fsync of the directory). Configurations hold only a reference.
public final class SecretStore: Sendable {
    public let directory: String

    public init(directory: String) throws(NetExtError) {
        self.directory = directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .readWrite("cannot create the secret directory \(directory): \(String(cString: strerror(errno)))")
        }
        if chmod(directory, 0o700) != 0 {
            throw .readWrite("cannot set mode 0700 on \(directory): \(String(cString: strerror(errno)))")
        }
    }

    /// Stores a secret under a new reference and returns the reference.
    public func store(_ secret: String) throws(NetExtError) -> String {
        let reference = "secret-" + UUID().uuidString.lowercased()
        let path = try self.path(for: reference)
        do throws(AtomicFile.Failure) { try AtomicFile.write(Array(secret.utf8), to: path, mode: 0o600) } catch {
            throw .readWrite("cannot store a secret: \(error.reason)")
        }
        return reference
    }

    /// The secret behind a reference, or nil if there is none.
    public func secret(for reference: String) throws(NetExtError) -> String? {
        let path = try self.path(for: reference)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The password a configuration's VPN uses (tunnel provider or personal VPN), or nil.
    public func password(of configuration: Configuration) throws(NetExtError) -> String? {
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings): try settings.passwordReference.flatMap { reference throws(NetExtError) in try secret(for: reference) }
        case .personalVPN(let settings): try settings.passwordReference.flatMap { reference throws(NetExtError) in try secret(for: reference) }
        default: nil
        }
    }

    /// Deletes a secret; a missing one is not an error.
    public func delete(_ reference: String) {
        guard let path = try? self.path(for: reference) else { return }
        unlink(path)
    }

    /// Deletes every secret not in `referenced` (left behind by a crash between writing a secret
    /// and committing the configuration that refers to it) and stray temporary files.
    @discardableResult
    public func collectGarbage(keeping referenced: Set<String>) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        for name in names where name.contains(".tmp") || (name.hasPrefix("secret-") && !referenced.contains(name)) {
            unlink(directory + "/" + name)
            removed += 1
        }
        return removed
    }

    private func path(for reference: String) throws(NetExtError) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-")
        guard reference.hasPrefix("secret-"), reference.unicodeScalars.allSatisfy({ allowed.contains($0) }) else {
            throw .invalid("'\(reference)' is not a secret reference")
        }
        return directory + "/" + reference
    }
}
