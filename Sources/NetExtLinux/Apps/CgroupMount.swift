import Foundation

/// Where the cgroup v2 hierarchy is mounted, read from `/proc/self/mountinfo` (proc(5): mount
/// ID, parent ID, major:minor, root, mount point, options, optional fields, `-`, file-system
/// type, source, super options). A unified layout mounts it at `/sys/fs/cgroup`; a hybrid one
/// (systemd's, and this project's CI machine) at `/sys/fs/cgroup/unified`.
public enum CgroupMount {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The mount point of the first cgroup2 mount whose root is the hierarchy's root, from the
    /// text of a mountinfo file. Malformed lines are skipped (the kernel writes the file; a line
    /// that does not parse names nothing usable).
    public static func mountPoint(inMountInfo text: String) throws(Failure) -> String {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 10, let separator = fields.firstIndex(of: "-"), separator >= 6, separator + 1 < fields.count else { continue }
            guard fields[separator + 1] == "cgroup2", fields[3] == "/" else { continue }
            return unescape(String(fields[4]))
        }
        throw Failure(description: "no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup, or on a hybrid layout /sys/fs/cgroup/unified)")
    }

    /// This process's view: reads `/proc/self/mountinfo`.
    public static func current() throws(Failure) -> String {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else {
            throw Failure(description: "cannot read /proc/self/mountinfo (is /proc mounted?)")
        }
        return try mountPoint(inMountInfo: text)
    }

    /// mountinfo's octal escapes (`\040` for a space, `\011` tab, `\012` newline, `\134` backslash).
    static func unescape(_ field: String) -> String {
        guard field.contains("\\") else { return field }
        let input = Array(field.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "\\"), index + 3 < input.count {
                let digits = input[(index + 1)...(index + 3)]
                if digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                    let value = digits.reduce(0) { $0 * 8 + Int($1 - UInt8(ascii: "0")) }
                    if value < 256 {
                        bytes.append(UInt8(value))
                        index += 4
                        continue
                    }
                }
            }
            bytes.append(input[index])
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
