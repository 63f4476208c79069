import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// Finds a configuration by id or by name among those the caller can see.
enum ConfigurationLookup {
    static func find(_ nameOrID: String, client: ControlClient) async throws -> Configuration {
        let all = try await client.call(.listConfigurations, expecting: ConfigurationList.self).configurations
        if let id = UUID(uuidString: nameOrID), let match = all.first(where: { $0.id == id }) { return match }
        let matches = all.filter { $0.localizedDescription.caseInsensitiveCompare(nameOrID) == .orderedSame }
        switch matches.count {
        case 1: return matches[0]
        case 0: throw NetExtError.unknown("no configuration named or with id '\(nameOrID)' (see `netext list`)")
        default:
            throw NetExtError.invalid("'\(nameOrID)' names \(matches.count) configurations; use one of their ids: \(matches.map(\.id.uuidString).joined(separator: ", "))")
        }
    }
}
