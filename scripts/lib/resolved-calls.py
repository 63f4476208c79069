# Prints the calls the resolved mock (resolved_mock.py) recorded, one JSON array per line:
# [method, link, argument] with D-Bus values as plain JSON (byte arrays as lists of numbers).
# Usage: DBUS_SYSTEM_BUS_ADDRESS=... python3 resolved-calls.py [--reset]
import json
import os
import sys

import dbus


def plain(value):
    if isinstance(value, (dbus.Array, list, dbus.Struct, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.Byte, dbus.Int32, dbus.UInt32, dbus.Int64, int)):
        return int(value)
    return str(value)


bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
mock = dbus.Interface(bus.get_object("org.freedesktop.resolve1", "/org/freedesktop/resolve1"), "org.freedesktop.DBus.Mock")
if "--reset" in sys.argv:
    mock.ClearCalls()
    sys.exit(0)
for _, method, args in mock.GetCalls():
    print(json.dumps([str(method)] + [plain(arg) for arg in args]))
