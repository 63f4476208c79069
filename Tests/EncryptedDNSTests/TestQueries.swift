/// Queries for the upstream tests (RFC 1035 §4.1: header, one question, class IN).
enum TestQueries {
    static func query(_ name: String, type: UInt16 = 1, id: UInt16 = 0xbeef) -> [UInt8] {
        var message: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            message.append(UInt8(label.utf8.count))
            message += Array(label.utf8)
        }
        return message + [0, UInt8(type >> 8), UInt8(type & 0xff), 0, 1]
    }
}
