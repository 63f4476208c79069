import Foundation

/// A question the personal firewall puts to its user: may this program reach this destination?
/// Asked once per program and destination; flows that meet the same question meanwhile join it.
public struct FirewallPrompt: Sendable, Hashable, Codable, Identifiable {
    public var id: Int
    /// The executable path, when netextd found the program.
    public var program: String?
    public var uid: UInt32?
    public var pid: Int32?
    /// The remote host name when known, else its address.
    public var destination: String
    public var remotePort: UInt16
    public var transport: FlowProtocol
    public var firstAsked: Date
    /// Flows that met this question so far.
    public var flows: Int

    public init(
        id: Int, program: String?, uid: UInt32?, pid: Int32?, destination: String, remotePort: UInt16, transport: FlowProtocol,
        firstAsked: Date, flows: Int
    ) {
        self.id = id
        self.program = program
        self.uid = uid
        self.pid = pid
        self.destination = destination
        self.remotePort = remotePort
        self.transport = transport
        self.firstAsked = firstAsked
        self.flows = flows
    }
}

/// What `netext filter prompt` asks of the firewall's control provider (an app message).
public enum FirewallPromptCommand: Sendable, Hashable, Codable {
    /// The questions waiting for an answer.
    case list
    /// Answers question `id`: a rule for its program and destination (or, with
    /// `anyDestination`, for everything the program does).
    case answer(id: Int, allow: Bool, anyDestination: Bool)
}

/// The control provider's reply: the questions still waiting, and the rule an answer added.
public struct FirewallPromptReply: Sendable, Hashable, Codable {
    public var prompts: [FirewallPrompt]
    public var addedRule: String?
    /// Why a command could not be carried out.
    public var error: String?

    public init(prompts: [FirewallPrompt], addedRule: String? = nil, error: String? = nil) {
        self.prompts = prompts
        self.addedRule = addedRule
        self.error = error
    }
}

/// The open questions, deduplicated by program and destination. Pure.
public struct FirewallPromptBook: Sendable {
    private struct Key: Hashable {
        var program: String?
        var destination: String
    }

    private var prompts: [Int: FirewallPrompt] = [:]
    private var ids: [Key: Int] = [:]
    private var nextID = 1
    /// Questions kept at most; the oldest are dropped first.
    public static let limit = 256

    public init() {}

    /// The question for `flow`'s program and destination, new or joined; `isNew` when it was
    /// just opened.
    public mutating func ask(about flow: FilterFlow, now: Date) -> (id: Int, isNew: Bool) {
        let key = Key(program: flow.sourceApplication?.executable, destination: flow.remoteHostname ?? flow.remoteAddress)
        if let id = ids[key], prompts[id] != nil {
            prompts[id]?.flows += 1
            return (id, false)
        }
        if prompts.count >= Self.limit, let oldest = prompts.keys.min() { forget(oldest) }
        let id = nextID
        nextID += 1
        prompts[id] = FirewallPrompt(
            id: id, program: key.program, uid: flow.sourceApplication?.uid, pid: flow.sourceApplication?.pid, destination: key.destination,
            remotePort: flow.remotePort, transport: flow.transport, firstAsked: now, flows: 1)
        ids[key] = id
        return (id, true)
    }

    /// The open questions, oldest first.
    public var open: [FirewallPrompt] { prompts.values.sorted { $0.id < $1.id } }

    /// Closes question `id` with the rule its answer makes; nil if there is no such question.
    public mutating func answer(_ id: Int, allow: Bool, anyDestination: Bool) -> FirewallRules.Rule? {
        guard let prompt = prompts[id] else { return nil }
        forget(id)
        let destination: FirewallRules.Rule.Destination
        if anyDestination {
            destination = .any
        } else if let address = IPPrefix.parseAddress(prompt.destination) {
            destination = .prefix(IPPrefix(address: address, length: address.count * 8))
        } else {
            destination = .host(prompt.destination)
        }
        return FirewallRules.Rule(action: allow ? .allow : .deny, program: prompt.program, destination: destination)
    }

    private mutating func forget(_ id: Int) {
        guard let prompt = prompts.removeValue(forKey: id) else { return }
        ids[Key(program: prompt.program, destination: prompt.destination)] = nil
    }
}
