# A python3-dbusmock template standing in for systemd-resolved's org.freedesktop.resolve1.Manager
# (the methods a VPN uses: systemd's org.freedesktop.resolve1(5)), for labs whose machines must
# not run resolved. Like resolved it refuses links that do not exist ("NoSuchLink") and the
# loopback link (which resolved does not manage); every call is recorded by dbusmock
# (org.freedesktop.DBus.Mock.GetCalls). Each link has an object (GetLink) whose DefaultRoute
# property follows SetLinkDefaultRoute and RevertLink (true until set, as for a link with no
# routing domains). Links named in the parameter "managed" are refused as resolved refuses links
# systemd-networkd manages ("LinkBusy"). Usage:
#   python3 -m dbusmock --template THIS_FILE [-p '{"managed": ["NAME", ...]}']
import os

import dbus

BUS_NAME = "org.freedesktop.resolve1"
MAIN_OBJ = "/org/freedesktop/resolve1"
MAIN_IFACE = "org.freedesktop.resolve1.Manager"
SYSTEM_BUS = True
LINK_IFACE = "org.freedesktop.resolve1.Link"

def link_names():
    names = {}
    for name in os.listdir('/sys/class/net'):
        with open('/sys/class/net/%s/ifindex' % name) as f:
            names[int(f.read())] = name
    return names


def link_object(mock, index):
    """The link's object (resolved's path: the index, its first digit escaped), made on first use."""
    import dbusmock.mockobject
    path = "/org/freedesktop/resolve1/link/_3%d%s" % (int(str(index)[0]), str(index)[1:])
    if path not in dbusmock.mockobject.objects:
        mock.AddObject(path, LINK_IFACE, {"DefaultRoute": dbus.Boolean(True)}, [])
    return dbusmock.mockobject.objects[path], path


def load(mock, parameters):
    managed = set((parameters or {}).get("managed", []))

    def known(index, changes=True):
        """The link must exist in this namespace and not be loopback; changes to a managed one are refused."""
        names = link_names()
        if int(index) not in names:
            raise dbus.exceptions.DBusException('Link %d not known' % index, name='org.freedesktop.resolve1.NoSuchLink')
        if names[int(index)] == 'lo':
            raise dbus.exceptions.DBusException('Link lo is loopback device.', name='org.freedesktop.resolve1.LinkBusy')
        if changes and names[int(index)] in managed:
            raise dbus.exceptions.DBusException('Link %s is managed.' % names[int(index)], name='org.freedesktop.resolve1.LinkBusy')

    def get_link(self, index):
        known(index, changes=False)
        return dbus.ObjectPath(link_object(self, index)[1])

    def set_default_route(self, index, enabled):
        known(index)
        link_object(self, index)[0].UpdateProperties(LINK_IFACE, {"DefaultRoute": dbus.Boolean(enabled)})

    def revert_link(self, index):
        known(index)
        link_object(self, index)[0].UpdateProperties(LINK_IFACE, {"DefaultRoute": dbus.Boolean(True)})

    def other(self, index, *rest):
        known(index)

    mock.AddMethods(MAIN_IFACE, [
        ("SetLinkDNS", "ia(iay)", "", other),
        ("SetLinkDomains", "ia(sb)", "", other),
        ("SetLinkDefaultRoute", "ib", "", set_default_route),
        ("SetLinkDNSOverTLS", "is", "", other),
        ("SetLinkLLMNR", "is", "", other),
        ("SetLinkMulticastDNS", "is", "", other),
        ("SetLinkDNSSEC", "is", "", other),
        ("RevertLink", "i", "", revert_link),
        ("GetLink", "i", "o", get_link),
    ])
