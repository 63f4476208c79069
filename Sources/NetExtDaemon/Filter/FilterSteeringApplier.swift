import Foundation
import NetExtCore
import NetExtLinux

/// Installs and removes the content filter's steering rules with iptables-nft (IPv4 and IPv6).
struct FilterSteeringApplier: Sendable {
    private static var tools: [(restore: String?, plain: String?)] { IPTablesTools.families }

    /// Replaces any earlier steering with `steering`; on failure nothing of it stays.
    func apply(_ steering: FilterSteering) throws(NetExtError) {
        remove()
        for (index, (restore, _)) in Self.tools.enumerated() {
            guard let restore else {
                remove()
                throw NetExtError(.connectionFailed, "the content filter needs iptables-nft to queue packets (apt-get install iptables)")
            }
            let result = CommandRunner.run(restore, ["--noflush", "-w"], input: steering.restoreInput(ipv6: index == 1))
            guard result.status == 0 else {
                remove()
                throw NetExtError(.connectionFailed, "\(restore) refused the filter rules: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
    }

    /// Rewrites the installed chains with `steering` (one atomic restore per family, the jumps
    /// to them kept): no packet meets a moment without rules.
    func update(_ steering: FilterSteering) throws(NetExtError) {
        for (index, (restore, _)) in Self.tools.enumerated() {
            guard let restore else { throw NetExtError(.connectionFailed, "the content filter needs iptables-nft (apt-get install iptables)") }
            let result = CommandRunner.run(restore, ["--noflush", "-w"], input: steering.restoreInput(ipv6: index == 1, jumps: false))
            guard result.status == 0 else {
                throw NetExtError(.configurationInvalid, "\(restore) refused the filter rules: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
    }

    /// Removes every steering rule and chain (harmless when there are none).
    func remove() {
        for (_, plain) in Self.tools {
            guard let plain else { continue }
            // The jump rules could be there more than once after a crash mid-install.
            for command in FilterSteering.removalCommands {
                for _ in 0..<4 where CommandRunner.run(plain, ["-w"] + command).status == 0 {
                    if command[2] != "-D" { break }
                }
            }
        }
    }

    /// Whether any steering chain is installed (for tests and status).
    func isInstalled() -> Bool {
        Self.tools.contains { _, plain in
            guard let plain else { return false }
            return CommandRunner.run(plain, ["-w", "-t", "filter", "-S", FilterSteering.outputChain]).status == 0
        }
    }
}
