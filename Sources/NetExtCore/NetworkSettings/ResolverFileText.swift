/// Reading resolver-file text (`/etc/resolv.conf`, resolv.conf(5)): the values of its keyword
/// lines.
public enum ResolverFileText {
    /// The values of `keyword` lines ("nameserver", "search") in resolver-file text.
    public static func values(of keyword: String, in text: String) -> [String] {
        text.split(separator: "\n").flatMap { line -> [String] in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.first.map(String.init) == keyword else { return [] }
            return words.dropFirst().map(String.init)
        }
    }

    /// The machine's DNS settings as a resolver file states them: its name servers and search
    /// domains (`search` and `domain` lines).
    public static func settings(in text: String) -> DNSSettings {
        DNSSettings(servers: values(of: "nameserver", in: text), searchDomains: values(of: "search", in: text) + values(of: "domain", in: text))
    }
}
