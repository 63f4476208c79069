/// The reference personal firewall's rules, one a line, the first that matches a flow decides:
///
///     allow /usr/bin/curl school.test      # this program, this host and its subdomains
///     deny  /usr/bin/curl *                # this program, anywhere else
///     allow * 10.0.0.0/8                   # any program, these addresses
///
/// The program is an absolute executable path (`/proc/PID/exe` as netextd reports it) or `*`;
/// the destination a host name (on label boundaries), an address or prefix, or `*`. A flow whose
/// program netextd could not find matches only `*` programs. Blank lines and `#` comments are
/// ignored.
public struct FirewallRules: Sendable, Hashable {
    public struct Rule: Sendable, Hashable, CustomStringConvertible {
        public enum Action: String, Sendable, Hashable, Codable {
            case allow
            case deny
        }

        public enum Destination: Sendable, Hashable {
            case any
            case host(String)
            case prefix(IPPrefix)
        }

        public var action: Action
        /// The executable path; nil for any program.
        public var program: String?
        public var destination: Destination

        public init(action: Action, program: String?, destination: Destination) {
            self.action = action
            self.program = program
            self.destination = destination
        }

        /// The rule as a line of the rules file.
        public var description: String {
            let target: String = switch destination {
            case .any: "*"
            case .host(let name): name
            case .prefix(let prefix): prefix.description
            }
            return "\(action.rawValue) \(program ?? "*") \(target)"
        }

        /// Whether the rule covers `flow`.
        public func matches(_ flow: FilterFlow) -> Bool {
            if let program, flow.sourceApplication?.executable != program { return false }
            switch destination {
            case .any:
                return true
            case .host(let domain):
                return flow.remoteHostname.map { HostName.host($0, isWithin: domain) } ?? false
            case .prefix(let prefix):
                return prefix.contains(address: flow.remoteAddress)
            }
        }
    }

    public private(set) var rules: [Rule] = []

    public init(rules: [Rule] = []) {
        self.rules = rules
    }

    /// Parses a rules file; a malformed line is refused with its number.
    public init(text: String) throws(NetExtError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard !words.isEmpty else { continue }
            rules.append(try Self.rule(words.map(String.init), at: "line \(index + 1)"))
        }
    }

    /// One rule from its words; `place` names it in an error.
    public static func rule(_ words: [String], at place: String) throws(NetExtError) -> Rule {
        guard words.count == 3 else {
            throw .invalid("\(place): a rule is 'allow|deny PROGRAM DESTINATION' (three words), not '\(words.joined(separator: " "))'")
        }
        guard let action = Rule.Action(rawValue: words[0].lowercased()) else {
            throw .invalid("\(place): '\(words[0])' is neither allow nor deny")
        }
        let program: String?
        if words[1] == "*" {
            program = nil
        } else if words[1].hasPrefix("/") {
            program = words[1]
        } else {
            throw .invalid("\(place): the program '\(words[1])' is neither an absolute path nor *")
        }
        let destination: Rule.Destination
        let target = words[2]
        if target == "*" {
            destination = .any
        } else if let prefix = try? IPPrefix(target.contains("/") ? target : target + (target.contains(":") ? "/128" : "/32")) {
            destination = .prefix(prefix)
        } else if let host = HostName.normalized(target), host.contains(where: \.isLetter) {
            destination = .host(host)
        } else {
            throw .invalid("\(place): the destination '\(target)' is not a host name, an address or prefix, or *")
        }
        return Rule(action: action, program: program, destination: destination)
    }

    public var count: Int { rules.count }

    /// The first rule that covers `flow`, if any.
    public func match(_ flow: FilterFlow) -> Rule? {
        rules.first { $0.matches(flow) }
    }

    /// `rule` first, then these rules (a newer answer overrides older rules).
    public func prepending(_ rule: Rule) -> FirewallRules {
        FirewallRules(rules: [rule] + rules.filter { $0 != rule })
    }

    public func appending(contentsOf other: FirewallRules) -> FirewallRules {
        FirewallRules(rules: rules + other.rules)
    }

    /// The rules file's text.
    public var text: String {
        rules.map { $0.description + "\n" }.joined()
    }
}
