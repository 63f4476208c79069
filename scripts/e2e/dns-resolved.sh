#!/usr/bin/env bash
# End-to-end checks of netextd under systemd-resolved, in a namespace lab: resolved itself may not
# run on the test machines (../shared/PLATFORM.md), so python3-dbusmock stands in for its D-Bus
# API on a private bus (scripts/lib/resolved_mock.py: it refuses unknown and loopback links, as
# resolved does, and records every call). netextd finds "resolved" on the bus, leaves the resolver
# file alone, puts its DNS stub on a link of its own (netext-dns) and gives resolved that link's
# DNS: the match domains as routing domains, `~.` and the default route for settings without
# them; a query sent the way resolved sends a link's queries (bound to the link) is answered over
# TLS by unbound; the DNS guard lets it through; while the stub takes every name the other links'
# DNS default route is taken (a link the mock refuses as networkd-managed keeps it, and status
# says so) and given back on disable, and by the next start after a kill -9; disabling reverts
# the link and removes it.
# Needs root. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns-resolved.sh   Prints one line per check.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dnsres
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh
source scripts/lib/install-packages.sh
source scripts/lib/private-bus.sh
netext_install unbound openssl python3 python3-dbusmock dbus-daemon > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

dns_lab_up
unbound_lab_serve 198.51.100.53@853 198.51.100.53@443 <<'ZONE'
local-zone: "lab.test." static
local-data: "www.lab.test. A 198.51.100.80"
local-data: "www.corp.lab.test. A 10.20.0.6"
ZONE
export NETEXT_DNS_CA_FILE="$work/ca/ca.crt"

# The private bus standing in for the system bus, and resolved's mock on it.
private_bus_up "$LAB_LAPTOP" "$work/bus" || { echo "FAIL the private bus did not start"; exit 1; }
# Two more links on the laptop: one the mock refuses as systemd-networkd's ("LinkBusy").
ip -n "$LAB_LAPTOP" link add resbusy0 type veth peer name resbusy1
lab_spawn "$LAB_LAPTOP" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" /usr/bin/python3 -m dbusmock --template scripts/lib/resolved_mock.py -p '{"managed": ["resbusy0"]}'
private_bus_wait_for org.freedesktop.resolve1 || { echo "FAIL the resolved mock did not take its name"; exit 1; }

cp "$resolv" "$work/resolv.before"
export NETEXT_DNS_BACKEND=auto
e2e_start_netextd

calls() { ip netns exec "$LAB_LAPTOP" /usr/bin/python3 scripts/lib/resolved-calls.py "$@"; }
link_index() { ip netns exec "$LAB_LAPTOP" cat /sys/class/net/"${1:-netext-dns}"/ifindex; }
uplink=eth0  # the lab names the laptop's uplink so
uplink_index=$(link_index "$uplink"); busy_index=$(link_index resbusy0); other_index=$(link_index resbusy1)
hold_file="$NETEXT_STATE_DIR/resolved-default-routes.json"
# Asks the stub for $1's A record the way resolved asks a link's server: from a socket bound to
# the link (SO_BINDTODEVICE, as resolved's IP_UNICAST_IF/SO_BINDTOIFINDEX); prints the address.
ask_like_resolved() {
  ip netns exec "$LAB_LAPTOP" python3 - "$1" <<'PY'
import socket, struct, sys
name = sys.argv[1]
query = b"\x43\x21\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"netext-dns")
s.settimeout(3)
s.sendto(query, ("169.254.53.53", 53))
answer = s.recv(4096)
count = struct.unpack("!H", answer[6:8])[0]
offset = len(query)
for _ in range(count):
    offset += 2 if answer[offset] & 0xc0 == 0xc0 else answer.index(b"\x00", offset) + 1 - offset
    kind, _, _, length = struct.unpack("!HHIH", answer[offset:offset + 10])
    offset += 10
    if kind == 1 and length == 4:
        print(".".join(str(b) for b in answer[offset:offset + 4]))
        break
    offset += length
PY
}
# The mock records calls as netextd makes them: a call may land just after the step that causes it (under load).
has_call() { lab_wait "calls | grep -qxF '$1'" 5; }

check "netextd found systemd-resolved on the bus and leaves the resolver file to it" grep -q "goes through systemd-resolved" "$work/netextd.log"
check "netext dns configure --tls --match-domain corp.lab.test" netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --match-domain corp.lab.test --enable
check "the resolver file is untouched" cmp -s "$resolv" "$work/resolv.before"
check "netext dns status says the names come through systemd-resolved" bash -c "'$bin/netext' dns status | grep -q \"the machine's names reach netextd through systemd-resolved, link netext-dns (D-Bus)\""
check "the stub's link netext-dns is up with 169.254.53.53" bash -c "ip netns exec $LAB_LAPTOP ip -4 addr show dev netext-dns | grep -q 'inet 169.254.53.53/32'"
index=$(link_index)
ip netns exec "$LAB_LAPTOP" ip -4 addr show dev netext-dns | sed 's/^/  /'
echo "  resolved was asked: $(calls | tr '\n' ' ')"
check "resolved was given the stub as the link's DNS server (SetLinkDNS $index, AF_INET 169.254.53.53)" has_call "[\"SetLinkDNS\", $index, [[2, [169, 254, 53, 53]]]]"
check "…and corp.lab.test as a routing-only domain (SetLinkDomains ~corp.lab.test)" has_call "[\"SetLinkDomains\", $index, [[\"corp.lab.test\", true]]]"
check "…and not the default route (other names stay with the machine's servers)" has_call "[\"SetLinkDefaultRoute\", $index, false]"
check "…and no DoT, LLMNR or mDNS on it (the stub speaks plain DNS on its own link)" bash -c "calls() { ip netns exec $LAB_LAPTOP /usr/bin/python3 scripts/lib/resolved-calls.py; }; c=\$(calls); grep -qxF '[\"SetLinkDNSOverTLS\", $index, \"no\"]' <<< \"\$c\" && grep -qxF '[\"SetLinkLLMNR\", $index, \"no\"]' <<< \"\$c\" && grep -qxF '[\"SetLinkMulticastDNS\", $index, \"no\"]' <<< \"\$c\""
answer=$(ask_like_resolved www.corp.lab.test)
check "a query sent as resolved sends it (bound to netext-dns) is answered: www.corp.lab.test is $answer" test "$answer" = 10.20.0.6
check "…over TLS by unbound (its log names the query)" grep -q "www.corp.lab.test. A IN" "$work/unbound.log"
# Another machine sending to the link's address (the internet namespace routes 169.254.53.53 to
# the laptop) gets nothing: the stub is tied to its link and takes only this machine's queries.
ip -n "$LAB_INTERNET" route add 169.254.53.53/32 via 198.51.100.2
from_outside=$(ip netns exec "$LAB_INTERNET" python3 scripts/e2e/dns-query.py 169.254.53.53 www.corp.lab.test 2>&1 | head -1)
check "a query from another machine to the stub's link address gets no answer (${from_outside:-none})" test -z "$from_outside"
from_here=$(ip netns exec "$LAB_LAPTOP" python3 scripts/e2e/dns-query.py 169.254.53.53 www.corp.lab.test | head -1)
check "a program on the laptop asking 169.254.53.53 directly is answered ($from_here)" test "$from_here" = 10.20.0.6

calls --reset
check "netext dns configure --tls (no match domains): every name" netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --prohibit-other-dns --enable
check "resolved was given ~. (SetLinkDomains $index, the root as routing domain)" has_call "[\"SetLinkDomains\", $index, [[\".\", true]]]"
check "…and the default route" has_call "[\"SetLinkDefaultRoute\", $index, true]"
check "the DNS guard is installed (other programs' DNS refused)" ip netns exec "$LAB_LAPTOP" nft list table inet netextd_dns
answer=$(ask_like_resolved www.lab.test)
check "the DNS guard lets resolved's query to the stub through: www.lab.test is $answer" test "$answer" = 198.51.100.80
check "the resolver file is still untouched" cmp -s "$resolv" "$work/resolv.before"
check "the uplink's DNS default route was taken (SetLinkDefaultRoute $uplink_index false: resolved asks only netext-dns)" has_call "[\"SetLinkDefaultRoute\", $uplink_index, false]"
check "…and resbusy1's" has_call "[\"SetLinkDefaultRoute\", $other_index, false]"
check "…and kept in netextd's state directory for a crash" grep -q "\"$uplink\"" "$hold_file"
status_text=$("$bin/netext" dns status)
echo "$status_text" | grep "reach netextd" | sed 's/^/  /'
check "netext dns status names the links taken from, and resbusy0, which resolved refused (networkd's), as keeping theirs" bash -c "grep -q 'the DNS default route taken from [^;]*$uplink' <<< \"\$1\" && grep -q 'the DNS default route taken from [^;]*resbusy1' <<< \"\$1\" && grep -q '; resbusy0 kept it (resolved refused' <<< \"\$1\"" _ "$status_text"

calls --reset
check "netext dns disable" netext dns disable
check "resolved was told to forget the link (RevertLink $index)" has_call "[\"RevertLink\", $index]"
check "the uplink's default route was given back (SetLinkDefaultRoute $uplink_index true)" has_call "[\"SetLinkDefaultRoute\", $uplink_index, true]"
check "…and resbusy1's, and the kept list removed" bash -c "calls() { ip netns exec $LAB_LAPTOP /usr/bin/python3 scripts/lib/resolved-calls.py; }; calls | grep -qxF '[\"SetLinkDefaultRoute\", $other_index, true]' && test ! -e '$hold_file'"
check "the stub's link is gone" bash -c "! ip netns exec $LAB_LAPTOP ip link show netext-dns 2>/dev/null"
check "the resolver file is still untouched" cmp -s "$resolv" "$work/resolv.before"
calls --reset
check "settings again, every name: the stub's link is back" bash -c "netext() { '$bin/netext' \"\$@\"; }; netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --enable > /dev/null && ip netns exec $LAB_LAPTOP ip link show netext-dns > /dev/null"
check "…and the uplink's default route taken again" has_call "[\"SetLinkDefaultRoute\", $uplink_index, false]"
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2> /dev/null
check "netextd killed: its link went with it (a TUN device it held), nothing left for resolved" bash -c "! ip netns exec $LAB_LAPTOP ip link show netext-dns 2>/dev/null"
check "…while the links it took the default route from are still listed in its state directory" grep -q "\"$uplink\"" "$hold_file"
calls --reset
e2e_start_netextd
check "netextd started again gives the uplink its default route back first (SetLinkDefaultRoute $uplink_index true)" has_call "[\"SetLinkDefaultRoute\", $uplink_index, true]"
check "…then takes it again for the settings it restores (every name)" bash -c "calls() { ip netns exec $LAB_LAPTOP /usr/bin/python3 scripts/lib/resolved-calls.py; }; for i in \$(seq 50); do calls | grep -xF -e '[\"SetLinkDefaultRoute\", $uplink_index, true]' -e '[\"SetLinkDefaultRoute\", $uplink_index, false]' | tr '\n' ' ' | grep -qF 'true] [\"SetLinkDefaultRoute\", $uplink_index, false]' && exit 0; sleep 0.1; done; exit 1"
calls --reset
check "netext dns disable: the uplink's default route given back" bash -c "'$bin/netext' dns disable > /dev/null && calls() { ip netns exec $LAB_LAPTOP /usr/bin/python3 scripts/lib/resolved-calls.py; }; for i in \$(seq 50); do calls | grep -qxF '[\"SetLinkDefaultRoute\", $uplink_index, true]' && exit 0; sleep 0.1; done; exit 1"
check "netextd's log has no error" bash -c "! grep -i 'level=error\|error:' '$work/netextd.log'"
e2e_finish "$work/netextd.log"
