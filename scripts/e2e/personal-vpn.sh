#!/usr/bin/env bash
# End-to-end checks of a personal VPN (the built-in IKEv2 client: strongSwan's charon, driven by
# netextd over VICI, user-space ESP over a TUN device) beside an enterprise packet tunnel, in a
# namespace lab: the personal VPN (server: a strongSwan charon on the internet router, pool
# 10.77.0.0/24 + fd77::/112) carries all traffic; the enterprise tunnel (office, 10.20.0.0/16 and
# fd20::/64) wins where both route a destination; nothing crosses the underlay in the clear;
# stop, a server-side delete, a wrong secret and a killed charon all end cleanly. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/personal-vpn.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh personal
charon="${NETEXT_CHARON:-/usr/lib/ipsec/charon}"
[ -x "$charon" ] && command -v swanctl > /dev/null || { echo "FAIL strongSwan (charon, swanctl) is not installed"; exit 1; }
id netext-ikev2 > /dev/null 2>&1 || { echo "FAIL the user netext-ikev2 does not exist (scripts/lib/install-packages.sh creates it)"; exit 1; }

lab_up || { echo "FAIL lab"; exit 1; }
# Destinations on the internet (a web server for each family, a DNS server) and on the office's
# internal network; each web server logs the address a request came from.
lab_in "$LAB_INTERNET" sh -c 'ip addr add 100.64.0.80/32 dev lo && ip addr add 100.64.0.53/32 dev lo && ip -6 addr add 2001:db8:ff::80/128 dev lo'
mkdir -p "$work/www"; echo "public page" > "$work/www/index.html"; echo "internal page" > "$work/www/internal.html"
lab_spawn "$LAB_INTERNET" python3 -m http.server 8080 --bind 100.64.0.80 --directory "$work/www" 2> "$work/public4.log"
lab_spawn "$LAB_INTERNET" python3 -m http.server 8081 --bind 2001:db8:ff::80 --directory "$work/www" 2> "$work/public6.log"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8082 --bind 10.20.0.5 --directory "$work/www" 2> "$work/internal.log"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8083 --bind fd20::5 --directory "$work/www" 2> "$work/internal6.log"
listening() { lab_in "$1" ss -ltn | grep -qF "$2"; }
lab_wait "listening '$LAB_INTERNET' 100.64.0.80:8080 && listening '$LAB_INTERNET' '[2001:db8:ff::80]:8081' && listening '$LAB_OFFICE' 10.20.0.5:8082 && listening '$LAB_OFFICE' '[fd20::5]:8083'" 20 ||
  { echo "FAIL the lab's web servers did not start"; exit 1; }

# The personal VPN's server: charon on the internet router (198.51.100.1), in a mount namespace
# whose /run is its own directory, configured with swanctl over its VICI socket.
server="$work/ikev2-server"; mkdir -p "$server/run"
cat > "$server/run/strongswan.conf" <<CONF
charon {
  load = random nonce aes sha1 sha2 hmac gmp openssl kdf pem pkcs1 x509 pubkey kernel-libipsec kernel-netlink socket-default vici attr
  filelog { server { path = /run/charon.log
    default = 1 } }
  plugins { vici { socket = unix:///run/charon.vici } }
}
CONF
cat > "$server/swanctl.conf" <<CONF
connections { personal { local_addrs = 198.51.100.1
    pools = v4, v6
    local { auth = psk
      id = vpn.lab.test }
    remote { auth = psk }
    children { personal { local_ts = 0.0.0.0/0, ::/0 } } } }
pools { v4 { addrs = 10.77.0.0/24
    dns = 100.64.0.53 }
  v6 { addrs = fd77::/112 } }
secrets { ike-personal { id-server = vpn.lab.test
    secret = "lab personal secret" } }
CONF
lab_spawn "$LAB_INTERNET" env STRONGSWAN_CONF=/run/strongswan.conf unshare --mount --propagation private sh -c 'mount --bind "$0" /run && exec "$1"' "$server/run" "$charon"
vici="unix://$server/run/charon.vici"
lab_wait "test -S '$server/run/charon.vici'" 10 && swanctl --load-all --file "$server/swanctl.conf" --uri "$vici" > "$work/swanctl.out" 2>&1 ||
  { echo "FAIL the IKEv2 server did not start"; cat "$work/swanctl.out" "$server/run/charon.log" 2>/dev/null | tail -20; exit 1; }

# The enterprise tunnel's server in the office (split tunnel: the internal network only).
e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "ipv6Pool": "fd99::/64",
 "routes": ["10.20.0.0/16", "fd20::/64"], "dnsServers": ["10.20.0.53"], "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
e2e_netextd_environment "$work/resolv.conf"
echo "nameserver 198.51.100.1" > "$work/resolv.conf"
e2e_start_server
e2e_start_netextd

profile() { # NAME IDENTIFIER SECRET
  cat <<XML
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>PayloadType</key><string>Configuration</string>
  <key>PayloadIdentifier</key><string>test.lab.$2</string>
  <key>PayloadDisplayName</key><string>$1</string>
  <key>PayloadContent</key><array><dict>
    <key>PayloadType</key><string>com.apple.vpn.managed</string>
    <key>PayloadIdentifier</key><string>test.lab.$2.vpn</string>
    <key>UserDefinedName</key><string>$1</string>
    <key>VPNType</key><string>IKEv2</string>
    <key>IKEv2</key><dict>
      <key>RemoteAddress</key><string>198.51.100.1</string>
      <key>RemoteIdentifier</key><string>vpn.lab.test</string>
      <key>LocalIdentifier</key><string>laptop.lab.test</string>
      <key>AuthenticationMethod</key><string>SharedSecret</string>
      <key>SharedSecret</key><string>$3</string>${4:+
      <key>OnDemandEnabled</key><integer>1</integer>
      <key>OnDemandRules</key><array><dict><key>Action</key><string>Connect</string></dict></array>}
    </dict>
  </dict></array>
</dict></plist>
XML
}
profile Personal personal "lab personal secret" > "$work/personal.mobileconfig"

public4() { laptop curl -s -m 3 http://100.64.0.80:8080/ 2>/dev/null | grep -q 'public page'; }
public6() { laptop curl -s -m 3 'http://[2001:db8:ff::80]:8081/' 2>/dev/null | grep -q 'public page'; }
internal() { laptop curl -s -m 3 http://10.20.0.5:8082/internal.html 2>/dev/null | grep -q 'internal page'; }
# The address the last request to a web server came from (its log's first word).
last_client() { tail -1 "$1" | cut -d' ' -f1; }
came_from() { local log="$1" pattern="$2"; last_client "$log" | grep -q "$pattern"; }
charon_pids() { for pid in $(ip netns pids "$LAB_LAPTOP"); do grep -q charon "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"; done; }
status_is() { netext status "$1" | grep -q "$1: $2"; }

direct4() { public4 && came_from "$work/public4.log" '^198\.51\.100\.2$'; }
check "before any VPN: the public page loads directly, from the laptop's own address" direct4
internal_unreachable() { ! laptop curl -s -m 2 http://10.20.0.5:8082/ > /dev/null; }
check "before any VPN: the internal network is unreachable" internal_unreachable

check "the personal VPN profile installs" bash -c "'$bin/netext' profile install '$work/personal.mobileconfig' > /dev/null"
check "netext show names the IKEv2 server" bash -c "'$bin/netext' show Personal | grep -q 'IKEv2 server: 198.51.100.1'"
check "the personal VPN starts (IKEv2 with a shared secret)" netext start Personal
check "status: connected" status_is Personal connected
check "charon runs for it in the laptop" test -n "$(charon_pids)"
# charon drops to its own user, keeping network capabilities only (no CAP_SYS_ADMIN, bit 21).
charon_identity() {
  local pid; pid="$(charon_pids | head -1)"
  [ -n "$pid" ] && grep -q "^Uid:[[:space:]]*$(id -u netext-ikev2)[[:space:]]" "/proc/$pid/status" &&
    (( ((0x$(awk '/^CapEff/ { print $2 }' "/proc/$pid/status") >> 21) & 1) == 0 ))
}
check "charon runs as netext-ikev2, without CAP_SYS_ADMIN" charon_identity
has_rule() { laptop ip rule | grep -q '^7354:.*lookup 7163'; }
has_address() { laptop ip -4 addr show | grep -q 'inet 10\.77\.0\.'; }
check "its rule comes after every packet tunnel's (priority 7354, table 7163)" has_rule
check "the server assigned a virtual address on charon's TUN device" has_address
check "through the personal VPN: IPv4 web" public4
check "the web server saw the personal VPN's address" came_from "$work/public4.log" '^10\.77\.0\.'
check "through the personal VPN: IPv6 web" public6
check "the IPv6 web server saw the personal VPN's address" came_from "$work/public6.log" '^fd77:'
check "the DNS server the IKEv2 server assigned is in the resolver file" grep -q 'nameserver 100.64.0.53' "$work/resolv.conf"
check "netext status counts traffic through the personal VPN" bash -c "'$bin/netext' status Personal --json | grep -q '\"bytesIn\" *: *[1-9]'"

# The enterprise tunnel comes up beside it; captures on the underlay and on both tunnels.
echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
lab_capture_start underlay_dump "$LAB_LAPTOP" eth0 "$work/underlay.pcap"
check "the enterprise tunnel starts while the personal VPN is up" netext start Office
check "DNS: the enterprise tunnel's servers take the resolver file" bash -c "grep -q 'nameserver 10.20.0.53' '$work/resolv.conf' && ! grep -q 'nameserver 100.64.0.53' '$work/resolv.conf'"
check "both are connected at once" bash -c "'$bin/netext' status Personal | grep -q connected && '$bin/netext' status Office | grep -q connected"
ipsec_interface="$(laptop ip -o -4 addr show | awk '/inet 10\.77\.0\./ { print $2 }' | head -1)"
lab_capture_start personal_dump "$LAB_LAPTOP" "$ipsec_interface" "$work/personal.pcap"
[ -n "${PERSONAL_VPN_PAUSE:-}" ] && { echo "paused: $LAB_PREFIX $work"; sleep "$PERSONAL_VPN_PAUSE"; }
[ -n "${PERSONAL_VPN_DEBUG:-}" ] && { laptop ip rule; laptop ip route show table all | grep -v "^local\|fe80\|multicast"; laptop curl -v -m 3 http://10.20.0.5:8082/internal.html; echo "iface=$ipsec_interface"; cat "$work/internal.log"; office ss -ltn; }
check "a destination both route (the internal network): reached" internal
check "... through the enterprise tunnel (the office saw its pool address)" came_from "$work/internal.log" '^10\.99\.0\.'
check "everything else still goes through the personal VPN" public4
check "... (the web server saw the personal VPN's address)" came_from "$work/public4.log" '^10\.77\.0\.'
check "IPv6 too: the internal network through the enterprise tunnel" bash -c "ip netns exec '$LAB_LAPTOP' curl -s -m 3 'http://[fd20::5]:8083/internal.html' | grep -q 'internal page'"
check "... (the office saw its IPv6 pool address)" came_from "$work/internal6.log" '^fd99:'
lab_capture_stop "$personal_dump" "$work/personal.pcap"
[ -n "${PERSONAL_VPN_DEBUG:-}" ] && tcpdump -r "$work/personal.pcap" -n | head
leaked_personal=$(tcpdump -r "$work/personal.pcap" -n 'host 10.20.0.5 or host fd20::5' 2>/dev/null | wc -l)
check "no packet to the internal network entered the personal VPN ($leaked_personal)" test "$leaked_personal" -eq 0
check "the personal VPN carried the public traffic" test "$(tcpdump -r "$work/personal.pcap" -n 'host 100.64.0.80' 2>/dev/null | wc -l)" -gt 0

check "the enterprise tunnel stops; the personal VPN stays" bash -c "'$bin/netext' stop Office > /dev/null && '$bin/netext' status Personal | grep -q 'Personal: connected'"
check "the internal network is unreachable again" internal_unreachable
check "DNS: the personal VPN's servers are back in the resolver file" bash -c "grep -q 'nameserver 100.64.0.53' '$work/resolv.conf' && ! grep -q 'nameserver 10.20.0.53' '$work/resolv.conf'"
check "public traffic still through the personal VPN" public4
if [ -n "${PERSONAL_VPN_BENCH:-}" ]; then
  # Figures for BENCHMARKS.md: TCP through the personal VPN (charon's user-space ESP) and over the
  # bare underlay in the same run (iperf3, 5 s each), and the time `netext start` takes (5 times).
  lab_spawn "$LAB_INTERNET" iperf3 -s -B 100.64.0.80 -p 5201 -1
  lab_spawn "$LAB_INTERNET" iperf3 -s -B 198.51.100.1 -p 5202 -1
  lab_wait "listening '$LAB_INTERNET' 100.64.0.80:5201 && listening '$LAB_INTERNET' 198.51.100.1:5202" 5
  echo "bench: through_personal_vpn_mbit=$(laptop iperf3 -c 100.64.0.80 -p 5201 -t 5 -f m 2>/dev/null | awk '/receiver/ { print $7 }')"
  echo "bench: underlay_mbit=$(laptop iperf3 -c 198.51.100.1 -p 5202 -t 5 -f m 2>/dev/null | awk '/receiver/ { print $7 }')"
  for _ in 1 2 3 4 5; do
    netext stop Personal > /dev/null; started=$(date +%s%N); netext start Personal > /dev/null
    echo "bench: connect_ms=$(( ($(date +%s%N) - started) / 1000000 ))"
  done
fi
lab_capture_stop "$underlay_dump" "$work/underlay.pcap"
clear_text=$(tcpdump -r "$work/underlay.pcap" -n 'host 100.64.0.80 or host 2001:db8:ff::80 or host 10.20.0.5 or host fd20::5' 2>/dev/null | wc -l)
check "nothing to the test destinations crossed the underlay in the clear ($clear_text packets)" test "$clear_text" -eq 0
check "the underlay carried ESP-in-UDP to the personal VPN's server" test "$(tcpdump -r "$work/underlay.pcap" -n 'udp and host 198.51.100.1' 2>/dev/null | wc -l)" -gt 0

check "the personal VPN stops" netext stop Personal
check "status: disconnected, no error" bash -c "'$bin/netext' status Personal | grep -q 'Personal: disconnected' && ! '$bin/netext' status Personal | grep -qi error"
check "charon is gone" lab_wait "test -z \"\$(charon_pids)\"" 5
routing_clean() { ! laptop ip rule | grep -q '^7354:' && [ -z "$(laptop ip route show table 7163 2>/dev/null)" ] && [ -z "$(laptop ip -6 route show table 7163 2>/dev/null)" ]; }
check "its rule and routes are gone (IPv4 and IPv6)" routing_clean
check "the resolver file is restored" grep -q 'nameserver 198.51.100.1' "$work/resolv.conf"
check "the server has no SA left (the client said goodbye)" bash -c "test -z \"\$(swanctl --list-sas --uri '$vici' 2>/dev/null | grep ESTABLISHED)\""

# The server ends the connection: netextd notices and reports it.
netext start Personal > /dev/null
swanctl --terminate --ike personal --uri "$vici" > /dev/null 2>&1
check "the server deletes the SA: status disconnected within 5 s" lab_wait "'$bin/netext' status Personal | grep -q 'Personal: disconnected'" 5
check "... with the reason" bash -c "'$bin/netext' status Personal | grep -q 'connection to the server ended\\|removed the tunnel'"
check "... and charon is ended" lab_wait "test -z \"\$(charon_pids)\"" 5

# charon dies: netextd notices, and removes what it left in the routing tables.
netext start Personal > /dev/null
kill -9 $(charon_pids) 2>/dev/null
check "charon killed -9: status disconnected within 5 s" lab_wait "'$bin/netext' status Personal | grep -q 'Personal: disconnected'" 5
check "charon killed -9: its rule and routes are removed" lab_wait routing_clean 5
check "restart after the crash" netext start Personal
check "traffic flows again" public4
netext stop Personal > /dev/null

# A wrong shared secret is refused, with the reason, and leaves nothing running.
# (One personal VPN per app: the first profile goes.)
check "removing the profile removes the personal VPN" bash -c "'$bin/netext' profile remove test.lab.personal > /dev/null && ! '$bin/netext' list | grep -q Personal"
# The command line saves a personal VPN as an app would with VPNManager (secret on standard input).
check "netext create-personal saves one (shared secret from standard input)" bash -c "printf 'not the secret\n' | '$bin/netext' create-personal --name Mistyped --server 198.51.100.1 --remote-id vpn.lab.test --local-id laptop.lab.test --shared-secret-stdin | grep -q 'saved personal VPN Mistyped'"
check "... netext show lists its identities" bash -c "'$bin/netext' show Mistyped | grep -q 'identities:  local laptop.lab.test, remote vpn.lab.test'"
"$bin/netext" start Mistyped > "$work/mistyped.out" 2>&1
[ -n "${PERSONAL_VPN_DEBUG:-}" ] && cat "$work/mistyped.out"
check "a wrong shared secret: start fails" bash -c "! grep -q ': connected' '$work/mistyped.out' && '$bin/netext' status Mistyped | grep -q 'Mistyped: disconnected'"
check "... naming the authentication failure" grep -qi 'auth' "$work/mistyped.out"
check "... and no charon is left" lab_wait "test -z \"\$(charon_pids)\"" 5

no_netext_rules() { ! laptop ip rule | grep -qE '^7[1-3][0-9]{2}:' && ! laptop ip -6 rule | grep -qE '^7[1-3][0-9]{2}:'; }
# netextd killed -9 with the personal VPN up: the next netextd ends the charon it left and
# removes its rule and routes.
profile Personal personal "lab personal secret" > "$work/personal.mobileconfig"
"$bin/netext" remove Mistyped > /dev/null
"$bin/netext" profile install "$work/personal.mobileconfig" > /dev/null
netext start Personal > /dev/null
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
check "netextd killed -9: its charon is still there until netextd returns" test -n "$(charon_pids)"
e2e_start_netextd
check "netextd restarted: the charon it left is ended" lab_wait "test -z \"\$(charon_pids)\"" 5
check "netextd restarted: the rule and routes it left are removed" routing_clean

# Connect on demand drives a personal VPN too: a Connect rule brings it up by itself and back
# after charon dies; an explicit stop turns on-demand off.
netext stop Personal > /dev/null
"$bin/netext" profile remove test.lab.personal > /dev/null
profile Personal personal "lab personal secret" ondemand > "$work/personal-ondemand.mobileconfig"
"$bin/netext" profile install "$work/personal-ondemand.mobileconfig" > /dev/null
check "on demand: the personal VPN connects by itself" lab_wait "status_is Personal connected" 15
check "on demand: traffic flows" public4
kill -9 $(charon_pids) 2>/dev/null
check "on demand: charon killed -9, the personal VPN comes back" lab_wait "status_is Personal connected" 15
# Stays down: disconnected at every look for 3 s (on demand would have reconnected within 1 s).
stopped_and_stays_down() {
  "$bin/netext" stop Personal > /dev/null || return 1
  local until=$((SECONDS + 3))
  while [ $SECONDS -lt $until ]; do "$bin/netext" status Personal | grep -q 'Personal: disconnected' || return 1; sleep 0.2; done
}
check "on demand: an explicit stop turns it off" stopped_and_stays_down

# A server that does not answer: the start fails, with charon's last words, in about 12 s.
kill -9 "$(lab_in "$LAB_INTERNET" cat "$server/run/charon.pid")" 2>/dev/null
started=$SECONDS
"$bin/netext" start Personal > "$work/silent.out" 2>&1
[ -n "${PERSONAL_VPN_DEBUG:-}" ] && cat "$work/silent.out"
check "the server does not answer: start fails, saying why" grep -q "peer not responding" "$work/silent.out"
check "... within 20 s ($((SECONDS - started)) s)" test $((SECONDS - started)) -le 20
check "... and no charon is left" lab_wait "test -z \"\$(charon_pids)\"" 5

check "nothing of netextd's is left in the routing policy" no_netext_rules
e2e_finish "$work/netextd.log" "$server/run/charon.log" "$work/state/ikev2/run/charon.log"
