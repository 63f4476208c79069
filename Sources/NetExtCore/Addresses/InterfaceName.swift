/// Network interface names as NetExt accepts them from people and requests: 1 to 15 characters
/// (the kernel's IFNAMSIZ less its NUL) of letters, digits and `-_.@` — so never `/` (a path in
/// sysfs), quotes (nft strings) or spaces.
public enum InterfaceName {
    public static func isValid(_ name: String) -> Bool {
        (1...15).contains(name.utf8.count) && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || "-_.@".contains($0) }
    }
}
