#!/usr/bin/env bash
# End-to-end checks of the kill switch (includeAllNetworks), excludeLocalNetworks and
# enforceRoutes in a namespace lab, with packet captures on the laptop's underlay: while the
# configuration is enabled nothing reaches the test destinations outside the tunnel — tunnel up,
# provider killed -9, explicitly stopped, or netextd restarted — for TCP, UDP (DNS), ICMP, IPv4
# and IPv6; local networks stay reachable; disabling removes every rule. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/killswitch.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh guard

lab_up || { echo "FAIL lab"; exit 1; }
# Test destinations "on the internet": a web server, a DNS server, IPv4 and IPv6.
lab_in "$LAB_INTERNET" sh -c 'ip addr add 100.64.0.80/32 dev lo && ip addr add 100.64.0.53/32 dev lo && ip -6 addr add 2001:db8:ff::80/128 dev lo'
mkdir -p "$work/www"; echo "public page" > "$work/www/index.html"
lab_spawn "$LAB_INTERNET" python3 -m http.server 8080 --bind 100.64.0.80 --directory "$work/www" 2>/dev/null
lab_spawn "$LAB_INTERNET" python3 -m http.server 8081 --bind 2001:db8:ff::80 --directory "$work/www" 2>/dev/null
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 100.64.0.53 example.test 100.64.0.80 "$work/dns.log"

e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "ipv6Pool": "fd99::/64",
 "routes": ["10.20.0.0/16", "fd20::/64"], "masquerade": ["eth0"], "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
e2e_netextd_environment "$work/resolv.conf"
echo "nameserver 100.64.0.53" > "$work/resolv.conf"
e2e_start_server
e2e_start_netextd

# What must never cross the underlay while the kill switch is on.
destinations='host 100.64.0.80 or host 100.64.0.53 or host 2001:db8:ff::80'
web4() { laptop curl -s -m "${1:-3}" http://100.64.0.80:8080/ 2>/dev/null | grep -q 'public page'; }
web6() { laptop curl -s -m "${1:-3}" 'http://[2001:db8:ff::80]:8081/' 2>/dev/null | grep -q 'public page'; }
dns() { laptop python3 -c "
import socket, sys
q = b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x07example\x04test\x00\x00\x01\x00\x01'
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(q, ('100.64.0.53', 53)); sys.exit(0 if s.recv(512)[:2] == b'\x12\x34' else 1)
except OSError:
    sys.exit(1)
"; }
ping4() { laptop ping -c 2 -W 1 -q 100.64.0.80 > /dev/null 2>&1; }
ping6() { laptop ping -6 -c 2 -W 1 -q 2001:db8:ff::80 > /dev/null 2>&1; }
all_blocked() { ! web4 2 && ! web6 2 && ! dns && ! ping4 && ! ping6; }
has_guard() { laptop nft list table inet netextd_guard > /dev/null 2>&1; }

check "before the VPN: the public page loads directly" web4
echo "$client_key" | netext create --name Guarded --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" \
  --password-stdin --include-all-networks --exclude-local-networks --enable > /dev/null
check "netext show lists the flags" bash -c "'$bin/netext' show Guarded | grep -q 'include all networks (kill switch), exclude local networks'"

lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/underlay.pcap"

check "VPN starts" netext start Guarded
check "the traffic guard table is in place" has_guard
check "through the tunnel: IPv4 web" web4
check "through the tunnel: IPv6 web" web6
check "through the tunnel: DNS over UDP" dns
pings() { ping4 && ping6; }
check "through the tunnel: ping IPv4 and IPv6" pings
check "excludeLocalNetworks: the local router answers directly" laptop ping -c 1 -W 1 -q 198.51.100.1

kill -9 "$(e2e_provider_pid)"
lab_wait "'$bin/netext' status Guarded | grep -q 'disconnected'" 10
check "provider killed -9: status disconnected" bash -c "'$bin/netext' status Guarded | grep -q 'Guarded: disconnected'"
check "provider killed -9: web, DNS and ping are blocked (IPv4 and IPv6)" all_blocked
check "provider killed -9: the guard is still in place" has_guard
started=$(date +%s%N)
check "restart after the crash" netext start Guarded
check "traffic flows again" web4
echo "recovered_s=$(awk -v ns=$(( $(date +%s%N) - started )) 'BEGIN { printf "%.2f", ns / 1e9 }')"

netext stop Guarded > "$work/stop.out" 2> "$work/stop.err"
check "explicit stop: netext says traffic stays blocked" grep -q "stays blocked until you disable it" "$work/stop.err"
check "explicit stop: still blocked" all_blocked

# netextd dies and comes back: the kernel kept the table; the new netextd keeps it.
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
check "netextd killed -9: still blocked" all_blocked
e2e_start_netextd
check "netextd restarted: the guard is restored for the enabled configuration" has_guard
check "netextd restarted: still blocked" all_blocked

lab_capture_stop "$dump" "$work/underlay.pcap"
leaked=$(laptop tcpdump -n -r "$work/underlay.pcap" "$destinations" 2>/dev/null | wc -l)
tunnel=$(laptop tcpdump -n -r "$work/underlay.pcap" 'udp port 51900' 2>/dev/null | wc -l)
echo "leaked_packets=$leaked"
check "no packet to the test destinations crossed the underlay while enabled ($leaked)" test "$leaked" -eq 0
check "the tunnel's own packets did ($tunnel)" test "$tunnel" -gt 0

check "disable" netext disable Guarded
check "after disable: no table of ours" bash -c "! ip netns exec $LAB_LAPTOP nft list tables | grep -q netextd_guard"
check "after disable: the public page loads directly again" web4

# enforceRoutes without includeAllNetworks: the tunnel's routes never leak; the rest flows.
echo "$client_key" | netext create --name Enforced --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" \
  --password-stdin --enforce-routes --enable > /dev/null
check "enforceRoutes: VPN starts" netext start Enforced
lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/enforced.pcap"
kill -9 "$(e2e_provider_pid)"
lab_wait "'$bin/netext' status Enforced | grep -q 'disconnected'" 10
check "enforceRoutes, provider killed: the office network is blocked" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 -o /dev/null http://10.20.0.5:8080/"
check "enforceRoutes, provider killed: other traffic still flows" web4
lab_capture_stop "$dump" "$work/enforced.pcap"
office_leak=$(laptop tcpdump -n -r "$work/enforced.pcap" 'net 10.20.0.0/16 or net fd20::/64' 2>/dev/null | wc -l)
check "enforceRoutes: nothing to the tunnel's routes crossed the underlay ($office_leak)" test "$office_leak" -eq 0
check "enforceRoutes: disable removes the table" bash -c "'$bin/netext' disable Enforced > /dev/null && ! ip netns exec $LAB_LAPTOP nft list tables | grep -q netextd_guard"

e2e_finish "$work/netextd.log" "$work/server.log"
