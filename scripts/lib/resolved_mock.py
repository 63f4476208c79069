# A python3-dbusmock template standing in for systemd-resolved's org.freedesktop.resolve1.Manager
# (the methods a VPN uses: systemd's org.freedesktop.resolve1(5)), for labs whose machines must
# not run resolved. Like resolved it refuses links that do not exist ("NoSuchLink") and the
# loopback link (which resolved does not manage); every call is recorded by dbusmock
# (org.freedesktop.DBus.Mock.GetCalls). Usage: python3 -m dbusmock --template THIS_FILE
BUS_NAME = "org.freedesktop.resolve1"
MAIN_OBJ = "/org/freedesktop/resolve1"
MAIN_IFACE = "org.freedesktop.resolve1.Manager"
SYSTEM_BUS = True

# Runs in the method's body (dbusmock's `args`): the link must exist in this namespace and
# must not be loopback.
KNOWN_LINK = """
import os, dbus
names = {}
for name in os.listdir('/sys/class/net'):
    with open('/sys/class/net/%s/ifindex' % name) as f:
        names[int(f.read())] = name
if int(args[0]) not in names:
    raise dbus.exceptions.DBusException('Link %d not known' % args[0], name='org.freedesktop.resolve1.NoSuchLink')
if names[int(args[0])] == 'lo':
    raise dbus.exceptions.DBusException('Link lo is loopback device.', name='org.freedesktop.resolve1.LinkBusy')
"""


def load(mock, parameters):
    mock.AddMethods(MAIN_IFACE, [
        ("SetLinkDNS", "ia(iay)", "", KNOWN_LINK),
        ("SetLinkDomains", "ia(sb)", "", KNOWN_LINK),
        ("SetLinkDefaultRoute", "ib", "", KNOWN_LINK),
        ("SetLinkDNSOverTLS", "is", "", KNOWN_LINK),
        ("SetLinkLLMNR", "is", "", KNOWN_LINK),
        ("SetLinkMulticastDNS", "is", "", KNOWN_LINK),
        ("SetLinkDNSSEC", "is", "", KNOWN_LINK),
        ("RevertLink", "i", "", KNOWN_LINK),
    ])
