import ArgumentParser
import NetExt
import NetExtCore
import NetExtIPC

/// Shell completion of configuration names: the shell runs `netext` to ask, and this asks
/// netextd for the configurations the caller can see (as `netext list` would, honouring `--socket`
/// and `--app` already typed). Nothing is offered when netextd does not answer within a second.
enum ConfigurationNameCompletion {
    static let kind = CompletionKind.custom(complete)

    @Sendable static func complete(_ words: [String], _ index: Int, _ prefix: String) async -> [String] {
        let socket = value(of: "--socket", in: words) ?? ControlClient.defaultSocketPath
        let app = value(of: "--app", in: words) ?? "com.netext.cli"
        let names = await withTaskGroup(of: [String]?.self) { group in
            group.addTask { try? await visibleNames(socket: socket, app: app) }
            group.addTask {
                try? await Task.sleep(for: .seconds(1))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
        return names.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// The value after `option` (`--socket PATH` or `--socket=PATH`) among the words typed.
    static func value(of option: String, in words: [String]) -> String? {
        for (index, word) in words.enumerated() {
            if word == option, index + 1 < words.count { return words[index + 1] }
            if word.hasPrefix(option + "=") { return String(word.dropFirst(option.count + 1)) }
        }
        return nil
    }

    private static func visibleNames(socket: String, app: String) async throws -> [String] {
        let client = try await ControlClient.connect(appIdentifier: app, socketPath: socket, timeout: .seconds(1))
        defer { client.close() }
        return try await client.call(ListConfigurations()).configurations.map(\.localizedDescription)
    }
}
