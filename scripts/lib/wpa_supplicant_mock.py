# A python3-dbusmock template standing in for wpa_supplicant's D-Bus API (fi.w1.wpa_supplicant1,
# "wpa_supplicant D-Bus API" in wpa_supplicant's developer documentation) for machines with no
# radio: interfaces, the BSSs they see, and networks added, selected and removed as
# wpa_supplicant does it — checked against wpa_supplicant 2.10 (Debian's, on a wired interface):
# a string value is quoted unless the option takes none (so a string "2" for ieee80211w is
# refused, an integer is not), a byte array becomes hex; "Properties" give values back in the
# configuration file's form (an SSID quoted when printable, else hex; secrets left out); a block
# added over D-Bus starts disabled ("Enabled" false) until enabled or selected; unknown options
# are refused (InvalidArgs). SelectNetwork enables the block and joins if a BSS with its SSID is
# in range (State "completed", CurrentBSS, CurrentNetwork).
# Mock API (org.freedesktop.DBus.Mock): AddInterface(ifname) -> path;
# AddBSS(interface path, ssid, bssid "aa:bb:..", signal dBm, frequency MHz, security "open"|"wpa2"|"sae").
# Usage: python3 -m dbusmock --template THIS_FILE
import binascii

import dbus

import dbusmock
from dbusmock import MOCK_IFACE

BUS_NAME = "fi.w1.wpa_supplicant1"
MAIN_OBJ = "/fi/w1/wpa_supplicant1"
MAIN_IFACE = "fi.w1.wpa_supplicant1"
SYSTEM_BUS = True
INTERFACE_IFACE = "fi.w1.wpa_supplicant1.Interface"
BSS_IFACE = "fi.w1.wpa_supplicant1.BSS"
NETWORK_IFACE = "fi.w1.wpa_supplicant1.Network"

# Options that are never quoted (wpa_supplicant's should_quote_opt), and the keys hidden when read.
UNQUOTED = {"key_mgmt", "proto", "pairwise", "group", "auth_alg", "eap", "scan_ssid", "bssid"}
INTEGERS = {"scan_ssid", "ieee80211w", "wep_tx_keyidx", "priority", "disabled", "mode", "frequency"}
KNOWN = UNQUOTED | INTEGERS | {"ssid", "psk", "sae_password", "wep_key0", "identity", "anonymous_identity", "password", "phase2", "domain_match", "domain_suffix_match", "ca_cert", "id_str"}
SECRETS = {"psk", "sae_password", "password", "wep_key0"}


def load(mock, parameters):
    mock.AddProperties(MAIN_IFACE, {"Interfaces": dbus.Array([], signature="o"), "DebugLevel": "info"})
    mock.AddMethods(MAIN_IFACE, [
        ("GetInterface", "s", "o", lambda self, name: _interface_named(self, name)),
    ])
    mock.interface_count = 0


def _interface_named(main, name):
    for path in main.Get(MAIN_IFACE, "Interfaces"):
        if dbusmock.get_object(path).Get(INTERFACE_IFACE, "Ifname") == name:
            return path
    raise dbus.exceptions.DBusException("wpa_supplicant knows no interface " + name, name="fi.w1.wpa_supplicant1.InterfaceUnknown")


@dbus.service.method(MOCK_IFACE, in_signature="s", out_signature="o")
def AddInterface(self, ifname):
    self.interface_count += 1
    path = "%s/Interfaces/%d" % (MAIN_OBJ, self.interface_count)
    self.AddObject(path, INTERFACE_IFACE, {
        "Ifname": dbus.String(ifname), "State": dbus.String("disconnected"),
        "BSSs": dbus.Array([], signature="o"), "Networks": dbus.Array([], signature="o"),
        "CurrentBSS": dbus.ObjectPath("/"), "CurrentNetwork": dbus.ObjectPath("/"),
        # No control interface: wpa_supplicant reports ctrl_interface unset as "".
        "CtrlInterface": dbus.String(""),
    }, [
        ("AddNetwork", "a{sv}", "o", _add_network),
        ("RemoveNetwork", "o", "", _remove_network),
        ("SelectNetwork", "o", "", _select_network),
        ("Disconnect", "", "", lambda obj: _leave(obj)),
        ("Scan", "a{sv}", "", lambda obj, options: None),
        ("SaveConfig", "", "", lambda obj: None),
    ])
    interface = dbusmock.get_object(path)
    interface.network_count = 0
    interface.options = {}
    self.Set(MAIN_IFACE, "Interfaces", dbus.Array(list(self.Get(MAIN_IFACE, "Interfaces")) + [dbus.ObjectPath(path)], signature="o"))
    return path


@dbus.service.method(MOCK_IFACE, in_signature="ossnqs", out_signature="o")
def AddBSS(self, interface_path, ssid, bssid, signal, frequency, security):
    interface = dbusmock.get_object(interface_path)
    path = "%s/BSSs/%d" % (interface_path, len(interface.Get(INTERFACE_IFACE, "BSSs")))
    key_mgmt = {"open": [], "wpa2": ["wpa-psk"], "sae": ["sae"]}[security]
    self.AddObject(path, BSS_IFACE, {
        "SSID": dbus.ByteArray(ssid.encode("utf-8")),
        "BSSID": dbus.ByteArray(binascii.unhexlify(bssid.replace(":", ""))),
        "Signal": dbus.Int16(signal), "Frequency": dbus.UInt16(frequency), "Privacy": dbus.Boolean(bool(key_mgmt)),
        "Mode": dbus.String("infrastructure"),
        "RSN": dbus.Dictionary({"KeyMgmt": dbus.Array(key_mgmt, signature="s")}, signature="sv"),
        "WPA": dbus.Dictionary({"KeyMgmt": dbus.Array([], signature="s")}, signature="sv"),
    }, [])
    interface.Set(INTERFACE_IFACE, "BSSs", dbus.Array(list(interface.Get(INTERFACE_IFACE, "BSSs")) + [dbus.ObjectPath(path)], signature="o"))
    return path


def _config_form(key, value):
    if isinstance(value, (dbus.Array, dbus.ByteArray, bytes, list)):
        return binascii.hexlify(bytes(bytearray(value))).decode()
    if isinstance(value, (dbus.Int32, dbus.UInt32, int)) and not isinstance(value, dbus.Boolean):
        return str(int(value))
    text = str(value)
    if key in INTEGERS and key not in UNQUOTED:
        # wpa_supplicant quotes the string, and "\"2\"" is no number.
        raise dbus.exceptions.DBusException("invalid message format", name="org.freedesktop.DBus.Error.InvalidArgs")
    return text if key in UNQUOTED else '"%s"' % text


def _shown(key, stored):
    """A value as "Properties" gives it: an SSID quoted when printable, else hex."""
    if key == "ssid" and not stored.startswith('"'):
        raw = binascii.unhexlify(stored)
        if all(32 <= byte < 127 for byte in raw):
            return '"%s"' % raw.decode()
    return stored


def _add_network(interface, options):
    for key in options:
        if key not in KNOWN:
            raise dbus.exceptions.DBusException("invalid message format: unknown network option " + key, name="fi.w1.wpa_supplicant1.InvalidArgs")
    interface.network_count += 1
    path = "%s/Networks/%d" % (interface.path, interface.network_count)
    stored = {str(key): _config_form(str(key), value) for key, value in options.items()}
    shown = {key: _shown(key, value) for key, value in stored.items() if key not in SECRETS}
    shown["disabled"] = "1"
    interface.AddObject(path, NETWORK_IFACE, {
        "Properties": dbus.Dictionary(shown, signature="sv"), "Enabled": dbus.Boolean(False),
    }, [])
    interface.options[path] = stored
    interface.Set(INTERFACE_IFACE, "Networks", dbus.Array(list(interface.Get(INTERFACE_IFACE, "Networks")) + [dbus.ObjectPath(path)], signature="o"))
    return dbus.ObjectPath(path)


def _remove_network(interface, path):
    networks = list(interface.Get(INTERFACE_IFACE, "Networks"))
    if path not in networks:
        raise dbus.exceptions.DBusException("There is no such a network in this interface.", name="fi.w1.wpa_supplicant1.NetworkUnknown")
    if interface.Get(INTERFACE_IFACE, "CurrentNetwork") == path:
        _leave(interface)
    interface.RemoveObject(path)
    del interface.options[path]
    interface.Set(INTERFACE_IFACE, "Networks", dbus.Array([n for n in networks if n != path], signature="o"))


def _leave(interface):
    interface.Set(INTERFACE_IFACE, "State", dbus.String("disconnected"))
    interface.Set(INTERFACE_IFACE, "CurrentBSS", dbus.ObjectPath("/"))
    interface.Set(INTERFACE_IFACE, "CurrentNetwork", dbus.ObjectPath("/"))


def _select_network(interface, path):
    if path not in interface.Get(INTERFACE_IFACE, "Networks"):
        raise dbus.exceptions.DBusException("There is no such a network in this interface.", name="fi.w1.wpa_supplicant1.NetworkUnknown")
    dbusmock.get_object(path).Set(NETWORK_IFACE, "Enabled", dbus.Boolean(True))
    ssid = interface.options[path].get("ssid", "")
    for bss in interface.Get(INTERFACE_IFACE, "BSSs"):
        seen = bytes(bytearray(dbusmock.get_object(bss).Get(BSS_IFACE, "SSID")))
        if binascii.hexlify(seen).decode() == ssid or ssid == '"%s"' % seen.decode():
            interface.Set(INTERFACE_IFACE, "State", dbus.String("completed"))
            interface.Set(INTERFACE_IFACE, "CurrentBSS", dbus.ObjectPath(bss))
            interface.Set(INTERFACE_IFACE, "CurrentNetwork", dbus.ObjectPath(path))
            return
    _leave(interface)
    interface.Set(INTERFACE_IFACE, "State", dbus.String("scanning"))
