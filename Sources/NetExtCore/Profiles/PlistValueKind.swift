import Foundation

/// The property-list type of a value decoded by `PropertyListSerialization`, used to check
/// types and to name them in error messages.
public enum PlistValueKind: String, Sendable {
    case string, integer, real, boolean, date, data, array, dictionary, unknown

    public init(_ value: Any) {
        switch value {
        case is String: self = .string
        case let number as NSNumber:
            if type(of: value) == Bool.self {
                self = .boolean
            } else {
                let objCType = String(cString: number.objCType)
                self = (objCType == "d" || objCType == "f") ? .real : (objCType == "c" ? .boolean : .integer)
            }
        case is Bool: self = .boolean
        case is Int: self = .integer
        case is Double: self = .real
        case is Date: self = .date
        case is Data: self = .data
        case is [Any]: self = .array
        case is [String: Any]: self = .dictionary
        default: self = .unknown
        }
    }
}
