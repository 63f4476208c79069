import NetExtCore

extension DBusConnection {
    /// One property through `org.freedesktop.DBus.Properties.Get`, the variant unwrapped.
    public func property(_ name: String, of interface: String, at path: String, on destination: String) throws(DBusError) -> DBusValue {
        let call = DBusMessage.methodCall(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get",
            body: [.string(interface), .string(name)])
        let body = try self.call(call)
        guard let value = body.first, body.count == 1 else { throw .unexpectedReply(member: "Get", expected: "v", found: signature(body)) }
        return value.unwrapped
    }

    /// Sets one property through `org.freedesktop.DBus.Properties.Set` (the value sent as a variant).
    public func setProperty(_ name: String, of interface: String, at path: String, on destination: String, to value: DBusValue) throws(DBusError) {
        _ = try call(.methodCall(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
            body: [.string(interface), .string(name), .variant(value)]))
    }

    /// Every property of `interface` at `path` through `GetAll`.
    public func properties(of interface: String, at path: String, on destination: String) throws(DBusError) -> [String: DBusValue] {
        let call = DBusMessage.methodCall(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
            body: [.string(interface)])
        let body = try self.call(call)
        guard body.count == 1, let map = body[0].dictionaryValue else {
            throw .unexpectedReply(member: "GetAll", expected: "a{sv}", found: signature(body))
        }
        return map.mapValues(\.unwrapped)
    }

    /// Asks the bus to route signals matching `rule` to us (`AddMatch`, "Match Rules").
    public func addMatch(_ rule: String) throws(DBusError) {
        _ = try call(.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "AddMatch",
            body: [.string(rule)]))
    }

    /// Whether `name` has an owner on the bus (`NameHasOwner`).
    public func nameHasOwner(_ name: String) throws(DBusError) -> Bool {
        let body = try call(.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameHasOwner",
            body: [.string(name)]))
        guard let owned = body.first?.boolValue else { throw .unexpectedReply(member: "NameHasOwner", expected: "b", found: signature(body)) }
        return owned
    }

    private func signature(_ body: [DBusValue]) -> String { body.map(\.type.signature).joined() }
}
