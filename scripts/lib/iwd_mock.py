# A python3-dbusmock template standing in for iwd's D-Bus API (net.connman.iwd: iwd's
# doc/station-api.txt, network-api.txt, basic-service-set.txt) for machines with no radio, where
# iwd itself cannot run (it needs nl80211). The object manager at "/" lists every object; a
# station (Device + Station at /net/connman/iwd/0/N) has networks (Network: Name, Type, Connected,
# Device, ExtendedServiceSet) and their access points (BasicServiceSet: Address). As iwd, it takes
# passphrases only from network files in its state directory (iwd.network(5)): Network.Connect on
# a "psk" or "8021x" network without its file fails with net.connman.iwd.NoAgent (no agent is
# registered to ask a person); with the file, or on an "open" network, the station connects
# (State "connected", ConnectedNetwork, ConnectedAccessPoint; the old network's Connected false).
# Mock API (org.freedesktop.DBus.Mock on "/"): SetStateDirectory(path); AddStation(ifname) -> path;
# AddNetwork(station path, ssid, type "open"|"psk"|"8021x", signal in 100 x dBm, bss address) -> path.
# Usage: python3 -m dbusmock --template THIS_FILE
import binascii
import os
import re

import dbus

import dbusmock
from dbusmock import MOCK_IFACE

BUS_NAME = "net.connman.iwd"
MAIN_OBJ = "/"
MAIN_IFACE = "net.connman.iwd.Daemon"
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True
DEVICE_IFACE = "net.connman.iwd.Device"
STATION_IFACE = "net.connman.iwd.Station"
NETWORK_IFACE = "net.connman.iwd.Network"
BSS_IFACE = "net.connman.iwd.BasicServiceSet"
ENDINGS = {"open": "open", "psk": "psk", "8021x": "8021x"}


def load(mock, parameters):
    mock.AddProperties(MAIN_IFACE, {"Version": dbus.String("2.3-netext-stand-in")})
    mock.station_count = 0
    mock.state_directory = "/var/lib/iwd"


@dbus.service.method(MOCK_IFACE, in_signature="s", out_signature="")
def SetStateDirectory(self, path):
    self.state_directory = path


@dbus.service.method(MOCK_IFACE, in_signature="s", out_signature="o")
def AddStation(self, ifname):
    self.station_count += 1
    path = "/net/connman/iwd/0/%d" % self.station_count
    self.AddObject(path, DEVICE_IFACE, {
        "Name": dbus.String(ifname), "Powered": dbus.Boolean(True), "Mode": dbus.String("station"),
        "Address": dbus.String("02:00:00:00:0%d:00" % self.station_count),
    }, [])
    station = dbusmock.get_object(path)
    # iwd drops ConnectedNetwork and ConnectedAccessPoint while disconnected; dbusmock cannot,
    # so they read "/" then (NetExt reads them only while State says connected).
    station.AddProperties(STATION_IFACE, {
        "State": dbus.String("disconnected"), "Scanning": dbus.Boolean(False),
        "ConnectedNetwork": dbus.ObjectPath("/"), "ConnectedAccessPoint": dbus.ObjectPath("/"),
    })
    station.AddMethods(STATION_IFACE, [
        ("GetOrderedNetworks", "", "a(on)", lambda obj: _ordered(obj)),
        ("Scan", "", "", lambda obj: None),
        ("Disconnect", "", "", lambda obj: _disconnect(obj)),
    ])
    station.networks = []
    station.manager = self
    return path


@dbus.service.method(MOCK_IFACE, in_signature="sssns", out_signature="o")
def AddNetwork(self, station_path, ssid, kind, signal, address):
    station = dbusmock.get_object(station_path)
    path = "%s/%s_%s" % (station_path, binascii.hexlify(ssid.encode("utf-8")).decode(), kind)
    bss = "%s/%s" % (path, address.replace(":", ""))
    self.AddObject(bss, BSS_IFACE, {"Address": dbus.String(address)}, [])
    self.AddObject(path, NETWORK_IFACE, {
        "Name": dbus.String(ssid), "Type": dbus.String(kind), "Connected": dbus.Boolean(False),
        "Device": dbus.ObjectPath(station_path), "ExtendedServiceSet": dbus.Array([dbus.ObjectPath(bss)], signature="o"),
    }, [("Connect", "", "", lambda obj: _connect(obj))])
    network = dbusmock.get_object(path)
    network.station = station
    network.signal = signal
    network.bss = bss
    station.networks.append(network)
    return path


def _ordered(station):
    connected = station.props[STATION_IFACE].get("ConnectedNetwork")
    networks = sorted(station.networks, key=lambda n: (n.path != connected, -n.signal))
    return dbus.Array([dbus.Struct((dbus.ObjectPath(n.path), dbus.Int16(n.signal)), signature="on") for n in networks], signature="(on)")


def _file_name(ssid, kind):
    stem = ssid if re.fullmatch(r"[A-Za-z0-9 _-]+", ssid) else "=" + binascii.hexlify(ssid.encode("utf-8")).decode()
    return stem + "." + ENDINGS[kind]


def _connect(network):
    kind = network.props[NETWORK_IFACE]["Type"]
    ssid = network.props[NETWORK_IFACE]["Name"]
    station = network.station
    if kind != "open":
        path = os.path.join(station.manager.state_directory, _file_name(ssid, kind))
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            text = ""
        needed = ("Passphrase=", "PreSharedKey=") if kind == "psk" else ("EAP-Method=",)
        if not any(key in text for key in needed):
            raise dbus.exceptions.DBusException("No Agent registered", name="net.connman.iwd.NoAgent")
    _disconnect(station)
    station.Set(STATION_IFACE, "ConnectedNetwork", dbus.ObjectPath(network.path))
    station.Set(STATION_IFACE, "ConnectedAccessPoint", dbus.ObjectPath(network.bss))
    network.Set(NETWORK_IFACE, "Connected", dbus.Boolean(True))
    station.Set(STATION_IFACE, "State", dbus.String("connected"))


def _disconnect(station):
    for network in station.networks:
        if network.props[NETWORK_IFACE]["Connected"]:
            network.Set(NETWORK_IFACE, "Connected", dbus.Boolean(False))
    if station.props[STATION_IFACE]["State"] != "disconnected":
        station.Set(STATION_IFACE, "State", dbus.String("disconnected"))
        station.Set(STATION_IFACE, "ConnectedNetwork", dbus.ObjectPath("/"))
        station.Set(STATION_IFACE, "ConnectedAccessPoint", dbus.ObjectPath("/"))
