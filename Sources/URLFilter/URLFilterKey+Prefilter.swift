import BloomFilter

/// Checking every key of a URL against the prefilter in one streaming FNV-1a pass per host.
/// A URL's keys for one host are nested prefixes of host + path + "?" query + "#" fragment,
/// each also with "/" appended (`checkedKeys`), so the FNV-1a state after each cut is that
/// key's hash and the "/" variant is one more step. Only keys whose first Bloom probe is set —
/// at most a few per URL, and for most absent URLs none — are rebuilt and checked in full.
extension URLFilterKey {
    /// Whether any of `checkedKeys` may be in `prefilter` (the same answer as
    /// `checkedKeys.contains(where: prefilter.contains)`, without building the keys).
    public func mayBeListed(in prefilter: BloomFilter) -> Bool {
        // One buffer: host ‖ path ‖ "?" query ‖ "#" fragment.
        var bytes = [UInt8]()
        bytes.reserveCapacity(host.utf8.count + path.utf8.count + (query?.utf8.count ?? -1) + (fragment?.utf8.count ?? -1) + 2)
        bytes += host.utf8
        let hostEnd = bytes.count
        bytes += path.utf8
        let pathEnd = bytes.count
        if let query { bytes.append(0x3F); bytes += query.utf8 }
        let queryEnd = bytes.count
        if let fragment { bytes.append(0x23); bytes += fragment.utf8 }
        return bytes.withUnsafeBufferPointer { Self.anyKeyMayBeListed($0, hostEnd: hostEnd, pathEnd: pathEnd, queryEnd: queryEnd, prefilter: prefilter) }
    }

    /// The same answer as `URLFilterKey(parsing: url).mayBeListed(in:)` for an ASCII URL that
    /// needs no percent-encoding or dot-segment normalization, computed straight from its bytes
    /// without building the key; nil for any other URL (the caller parses it).
    public static func mayBeListed(url: String, in prefilter: BloomFilter) -> Bool? {
        var copy = url
        return copy.withUTF8 { text -> Bool? in
            guard let layout = asciiLayout(text) else { return nil }
            let table = byteClass
            for index in layout.path where table[Int(text[index])] == 0 { return nil }
            for index in layout.query ?? 0..<0 where table[Int(text[index])] == 0 { return nil }
            for index in layout.fragment ?? 0..<0 where table[Int(text[index])] == 0 { return nil }
            let path = text[layout.path]
            if path.first == 0x2F, needsDotSegmentRemoval(path) { return nil }
            let length = layout.host.count + layout.path.count + (layout.query.map { $0.count + 1 } ?? 0) + (layout.fragment.map { $0.count + 1 } ?? 0)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(length, 1)) { buffer in
                var end = 0
                for index in layout.host { let byte = text[index]; buffer[end] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte; end += 1 }
                let hostEnd = end
                for index in layout.path { buffer[end] = text[index]; end += 1 }
                let pathEnd = end
                if let query = layout.query {
                    buffer[end] = 0x3F; end += 1
                    for index in query { buffer[end] = text[index]; end += 1 }
                }
                let queryEnd = end
                if let fragment = layout.fragment {
                    buffer[end] = 0x23; end += 1
                    for index in fragment { buffer[end] = text[index]; end += 1 }
                }
                return anyKeyMayBeListed(UnsafeBufferPointer(rebasing: buffer[..<end]), hostEnd: hostEnd, pathEnd: pathEnd, queryEnd: queryEnd, prefilter: prefilter)
            }
        }
    }

    /// For a key laid out as host ‖ path ‖ "?" query ‖ "#" fragment (ends given): whether any of
    /// its keys, for any of its checked hosts, may be in the prefilter.
    static func anyKeyMayBeListed(_ bytes: UnsafeBufferPointer<UInt8>, hostEnd: Int, pathEnd: Int, queryEnd: Int, prefilter: BloomFilter) -> Bool {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 8) { starts in
            let count = checkedHostStarts(bytes[..<hostEnd], into: starts)
            for index in 0..<count where streamMatches(bytes, start: starts[index], hostEnd: hostEnd, pathEnd: pathEnd, queryEnd: queryEnd, prefilter: prefilter) {
                return true
            }
            return false
        }
    }

    /// Writes where each of `checkedHosts` starts in the host's bytes (the hosts are its
    /// suffixes), shortest first, into `starts` (room for 8); returns how many.
    static func checkedHostStarts(_ host: Slice<UnsafeBufferPointer<UInt8>>, into starts: UnsafeMutableBufferPointer<Int>) -> Int {
        var dotCount = 0, digitsAndDots = true
        for byte in host {
            if byte == 0x2E { dotCount += 1 } else if byte < 0x30 || byte > 0x39 { digitsAndDots = false }
        }
        if host.first == 0x5B || (dotCount == 3 && digitsAndDots) || dotCount < 2 {
            starts[0] = host.startIndex
            return 1
        }
        // Suffixes with at least two labels: after the second-to-last dot, …, after the first
        // dot, the whole host; more than eight: the seven shortest and the whole host.
        var seen = 0, count = 0
        var index = host.endIndex
        while index > host.startIndex, count < 7 {
            index -= 1
            guard host[index] == 0x2E else { continue }
            seen += 1
            if seen >= 2 {
                starts[count] = index + 1
                count += 1
            }
        }
        starts[count] = host.startIndex
        return count + 1
    }

    private static func streamMatches(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Int, hostEnd: Int, pathEnd: Int, queryEnd: Int, prefilter: BloomFilter
    ) -> Bool {
        let prime = FNV1a.prime
        var hash = FNV1a.offsetBasis
        for index in start..<hostEnd { hash = (hash ^ UInt32(bytes[index])) &* prime }
        // Each cut: the key bytes[start..<cut], and the same with "/" appended.
        func probe(_ hash: UInt32, cut: Int) -> Bool {
            if prefilter.passesFirstProbe(fnv: hash), fullCheck(bytes, start: start, cut: cut, slash: false, fnv: hash, prefilter: prefilter) { return true }
            let slashed = (hash ^ 0x2F) &* prime
            return prefilter.passesFirstProbe(fnv: slashed) && fullCheck(bytes, start: start, cut: cut, slash: true, fnv: slashed, prefilter: prefilter)
        }
        if probe(hash, cut: hostEnd) { return true }
        // Path segments: a cut before each "/" that follows a segment, and at the end of the path.
        var index = hostEnd
        while index < pathEnd {
            let byte = bytes[index]
            if byte == 0x2F, index > hostEnd, bytes[index - 1] != 0x2F, probe(hash, cut: index) { return true }
            hash = (hash ^ UInt32(byte)) &* prime
            index += 1
        }
        if pathEnd > hostEnd, bytes[pathEnd - 1] != 0x2F, probe(hash, cut: pathEnd) { return true }
        // The query and the fragment, each with everything before it.
        if queryEnd > pathEnd {
            while index < queryEnd { hash = (hash ^ UInt32(bytes[index])) &* prime; index += 1 }
            if probe(hash, cut: queryEnd) { return true }
        }
        if bytes.count > queryEnd {
            while index < bytes.count { hash = (hash ^ UInt32(bytes[index])) &* prime; index += 1 }
            if probe(hash, cut: bytes.count) { return true }
        }
        return false
    }

    /// The remaining probes for a key whose FNV-1a hash is known; the key is copied to the
    /// stack only when it needs the "/" appended.
    private static func fullCheck(
        _ bytes: UnsafeBufferPointer<UInt8>, start: Int, cut: Int, slash: Bool, fnv: UInt32, prefilter: BloomFilter
    ) -> Bool {
        guard slash else { return prefilter.contains(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<cut])), fnv: fnv) }
        let length = cut - start
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length + 1) { key in
            for index in 0..<length { key[index] = bytes[start + index] }
            key[length] = 0x2F
            return prefilter.contains(bytes: UnsafeRawBufferPointer(key), fnv: fnv)
        }
    }
}
