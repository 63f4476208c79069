import Foundation

/// Reads a Set-Cookie header field as RFC 6265 §5.2 says a user agent does, for the request
/// URL that brought it; nil when §5.2 or §5.3 says to ignore it.
enum SetCookieParser {
    /// The longest name plus value kept (RFC 6265bis §5.6: 4096 octets).
    static let maximumNameValueBytes = 4096

    static func cookie(from field: String, host: String, path requestPath: String, secureChannel: Bool, now: Date = Date()) -> HTTPCookie? {
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let pair = parts.removeFirst()
        // §5.2 steps 2–5: name=value, both trimmed; no "=" means ignore the field.
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= maximumNameValueBytes,
            !(name + value).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }

        var maxAge: Date?? = nil  // .some(nil): Max-Age seen but not a number → ignored
        var expires: Date?
        var domainAttribute: String?
        var pathAttribute: String?
        var secure = false, httpOnly = false
        var sameSite = HTTPCookie.SameSite.unspecified
        for part in parts {
            let (key, attributeValue): (String, String)
            if let equals = part.firstIndex(of: "=") {
                key = part[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                attributeValue = part[part.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            } else {
                key = part.trimmingCharacters(in: .whitespaces).lowercased()
                attributeValue = ""
            }
            switch key {
            case "expires":  // §5.2.1
                if let date = CookieDate.parse(attributeValue) { expires = date }
            case "max-age":  // §5.2.2: an optional "-" then digits, else ignored
                let digits = attributeValue.hasPrefix("-") ? attributeValue.dropFirst() : Substring(attributeValue)
                if !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) {
                    let seconds = Double(attributeValue) ?? 0
                    maxAge = .some(seconds <= 0 ? Date.distantPast : now.addingTimeInterval(min(seconds, 400 * 86_400)))
                }
            case "domain":  // §5.2.3
                guard !attributeValue.isEmpty else { continue }
                domainAttribute = (attributeValue.hasPrefix(".") ? String(attributeValue.dropFirst()) : attributeValue).lowercased()
            case "path":  // §5.2.4
                pathAttribute = attributeValue.hasPrefix("/") ? attributeValue : nil
            case "secure": secure = true
            case "httponly": httpOnly = true
            case "samesite":  // RFC 6265bis §5.4.7
                switch attributeValue.lowercased() {
                case "none": sameSite = .none
                case "lax": sameSite = .lax
                case "strict": sameSite = .strict
                default: sameSite = .unspecified
                }
            default: continue
            }
        }
        // §5.3 step 3: Max-Age wins over Expires; capped at 400 days (RFC 6265bis §5.5).
        var expiry: Date? = maxAge.flatMap { $0 } ?? expires
        if let date = expiry, date > now.addingTimeInterval(400 * 86_400) { expiry = now.addingTimeInterval(400 * 86_400) }

        // §5.3 steps 5–6: a Domain must domain-match the host, and may not be a bare public
        // suffix (without a suffix list, a single label counts as one).
        let domain: String
        let hostOnly: Bool
        if let domainAttribute, domainAttribute != host {
            guard domainAttribute.contains("."), CookieRules.domainMatches(host, domainAttribute) else { return nil }
            domain = domainAttribute
            hostOnly = false
        } else {
            domain = host
            hostOnly = true
        }
        // RFC 6265bis §5.7 step 14: only a secure channel may set a Secure cookie; SameSite=None
        // must be Secure (§5.7 step 18 of drafts since 2020).
        if secure && !secureChannel { return nil }
        if sameSite == .none && !secure { return nil }
        // §4.1.3 cookie prefixes (RFC 6265bis §4.1.3.1–2).
        if name.hasPrefix("__Secure-") && !secure { return nil }
        if name.hasPrefix("__Host-") && (!secure || !hostOnly || pathAttribute != "/") { return nil }
        return HTTPCookie(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: pathAttribute ?? CookieRules.defaultPath(requestPath),
            expires: expiry, secure: secure, httpOnly: httpOnly, sameSite: sameSite, created: now)
    }
}

/// RFC 6265 §5.1.1: the forgiving cookie-date parser.
enum CookieDate {
    static func parse(_ text: String) -> Date? {
        let delimiters = CharacterSet(charactersIn: "\t !\"#$%&'()*+,-./;<=>?@[\\]^_`{|}~")
        var time: (Int, Int, Int)?, day: Int?, month: Int?, year: Int?
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        for token in text.components(separatedBy: delimiters) where !token.isEmpty {
            if time == nil, let parsed = timeOfDay(token) {
                time = parsed
            } else if day == nil, let digits = leadingDigits(token, 1...2) {
                day = digits
            } else if month == nil, token.count >= 3, let index = months.firstIndex(of: token.prefix(3).lowercased()) {
                month = index + 1
            } else if year == nil, let digits = leadingDigits(token, 2...4) {
                year = digits
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day, components.hour, components.minute, components.second) = (year, month, day, hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else { return nil }
        return date
    }

    /// hms-time: 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then anything.
    private static func timeOfDay(_ token: String) -> (Int, Int, Int)? {
        let fields = token.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3 else { return nil }
        let last = fields[2].prefix { $0.isASCIIDigit }
        guard (1...2).contains(fields[0].count), (1...2).contains(fields[1].count), (1...2).contains(last.count),
            fields[0].allSatisfy(\.isASCIIDigit), fields[1].allSatisfy(\.isASCIIDigit),
            let hour = Int(fields[0]), let minute = Int(fields[1]), let second = Int(last)
        else { return nil }
        return (hour, minute, second)
    }

    /// `count` digits at the start of the token, then no digit.
    private static func leadingDigits(_ token: String, _ count: ClosedRange<Int>) -> Int? {
        let digits = token.prefix { $0.isASCIIDigit }
        guard count.contains(digits.count) else { return nil }
        return Int(digits)
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
