/// The specification's rules for object paths, interface and member names ("Valid Names").
public enum DBusNames {
    /// `/` or `/`-separated elements of `[A-Za-z0-9_]`, none empty, no trailing `/`.
    public static func isObjectPath(_ path: String) -> Bool {
        if path == "/" { return true }
        guard path.hasPrefix("/"), !path.hasSuffix("/") else { return false }
        return path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).allSatisfy { element in
            !element.isEmpty && element.utf8.allSatisfy(isNameByte)
        }
    }

    /// An interface or error name: two or more `.`-separated elements of `[A-Za-z0-9_]`, none
    /// starting with a digit, at most 255 bytes.
    public static func isInterfaceName(_ name: String) -> Bool {
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.utf8.count <= 255 && elements.count >= 2 && elements.allSatisfy(isElement)
    }

    /// A member name: one element of `[A-Za-z0-9_]`, not starting with a digit, at most 255 bytes.
    public static func isMemberName(_ name: String) -> Bool {
        name.utf8.count <= 255 && isElement(Substring(name))
    }

    private static func isElement(_ element: Substring) -> Bool {
        guard let first = element.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return element.utf8.allSatisfy(isNameByte)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }
}
