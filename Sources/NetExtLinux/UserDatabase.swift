#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Look-ups in the system's user and group databases.
public enum UserDatabase {
    /// A user's id and primary group.
    public struct User: Sendable, Hashable {
        public var name: String
        public var uid: UInt32
        public var gid: UInt32
    }

    /// Looks a user up by name (or a numeric uid).
    public static func user(named name: String) -> User? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        if let uid = UInt32(name) {
            guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else {
                return User(name: name, uid: uid, gid: uid)
            }
        } else {
            guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        }
        return User(name: String(cString: entry.pw_name), uid: entry.pw_uid, gid: entry.pw_gid)
    }

    /// Looks a group's id up by name (or a numeric gid).
    public static func groupID(named name: String) -> UInt32? {
        if let gid = UInt32(name) { return gid }
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 65_536)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    /// A group's name from its id.
    public static func groupName(id gid: UInt32) -> String? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 65_536)
        guard getgrgid_r(gid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return String(cString: entry.gr_name)
    }
}
