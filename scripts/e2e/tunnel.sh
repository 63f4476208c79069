#!/usr/bin/env bash
# End-to-end checks of the packet tunnel in a namespace lab, with the real binaries:
# split tunnel (verified with a packet capture on the laptop's underlay), IPv6 inside, MTU and
# large transfers, an unknown client key refused, a server restart survived (reasserting), and a
# provider killed -9 (disconnected, routes and rules removed). Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/tunnel.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh e2e
export NETEXT_STATE_DIR="$work/state" NETEXT_SOCKET="$work/netextd.sock" NETEXT_PROVIDERS_DIR="$work/providers" NETEXT_RESOLV_CONF="$work/resolv.conf"

lab_up || { echo "FAIL lab"; exit 1; }
lab_add_laptop2 || { echo "FAIL lab (second laptop)"; exit 1; }
lab_add_lan || { echo "FAIL lab (network behind the office)"; exit 1; }
server_key="$("$bin/netext-server" genkey)"; server_public="$(echo "$server_key" | "$bin/netext-server" pubkey)"
client_key="$("$bin/netext-server" genkey)"; client_public="$(echo "$client_key" | "$bin/netext-server" pubkey)"
rogue_key="$("$bin/netext-server" genkey)"
second_key="$("$bin/netext-server" genkey)"; second_public="$(echo "$second_key" | "$bin/netext-server" pubkey)"
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "ipv6Pool": "fd99::/64",
 "routes": ["10.20.0.0/16", "10.30.0.0/24", "fd20::/64"], "mtu": 1420, "masquerade": ["eth1"], "peers": [{"name": "laptop", "publicKey": "$client_public"}],
 "dnsServers": ["10.20.0.53"], "searchDomains": ["office.test"],
 "httpProxy": "10.20.0.5:3128", "proxyExceptions": ["localhost", ".office.test"]}
JSON
umask 022
mkdir -p "$work/www"
echo "internal page" > "$work/www/index.html"
head -c 3000000 /dev/urandom > "$work/www/big.bin"
echo "nameserver 198.51.100.53" > "$work/resolv.conf"
# systemd's notification socket, stood in for (Type=notify readiness, reloads, stopping).
python3 "$(dirname "$0")/../lib/notify-receiver.py" "$work/notify.sock" "$work/notify.log" 300 & LAB_PIDS+=($!)
lab_wait "test -S '$work/notify.sock'" 10
start_server() { NOTIFY_SOCKET="$work/notify.sock" lab_spawn "$LAB_OFFICE" "$bin/netext-server" tunnel --config "$work/server.json" --status-socket "$work/server.sock" --metrics-listen 127.0.0.1:9586 2>> "$work/server.log"; SERVER_PID=$!; }
start_server
lab_spawn "$LAB_OFFICE" python3 -m http.server 8080 --bind 10.20.0.5 --directory "$work/www" 2>/dev/null
lab_spawn "$LAB_OFFICE" python3 -m http.server 8090 --bind 203.0.113.2 --directory "$work/www" 2>/dev/null
lab_spawn "$LAB_OFFICE" python3 -m http.server 8081 --bind fd20::5 --directory "$work/www" 2>/dev/null
lab_spawn "$LAB_LAN" python3 -m http.server 8080 --bind 10.30.0.7 --directory "$work/www" 2>> "$work/lan-http.log"
mkdir -p "$NETEXT_PROVIDERS_DIR"
printf '{"bundleIdentifier": "com.netext.tunnel", "extensionPoint": "packet-tunnel", "executable": "%s", "user": "nobody"}\n' "$bin/netext-tunnel-provider" > "$NETEXT_PROVIDERS_DIR/tunnel.json"
chmod 644 "$NETEXT_PROVIDERS_DIR/tunnel.json"
lab_spawn "$LAB_LAPTOP" "$bin/netextd" --provider-start-timeout 40 2>> "$work/netextd.log"
lab_wait "grep -q 'tunnel server ready' '$work/server.log'" 15
lab_wait "'$bin/netext' status" 15
lab_wait "office curl -s -o /dev/null http://10.20.0.5:8080/" 15
lab_wait "office curl -s -o /dev/null 'http://[fd20::5]:8081/'" 15

check "page unreachable without the VPN" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 -o /dev/null http://10.20.0.5:8080/"
echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable >/dev/null
check "VPN starts" netext start Office
check "status connected" bash -c "'$bin/netext' status Office | grep -q 'Office: connected'"
check "IPv4 page through the tunnel" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://10.20.0.5:8080/ | grep -q 'internal page'"
check "IPv6 page through the tunnel" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 'http://[fd20::5]:8081/' | grep -q 'internal page'"
check "an app message reaches the reference provider (netext message Office status)" bash -c "'$bin/netext' message Office status | grep -q '\"encryptedBytesReceived\"'"

# A network behind the office with no route back to the client pools: reached through the
# server's masquerade, which shows the office's address to the host there.
check "behind the office: a host with no route back loads through the server's masquerade" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://10.30.0.7:8080/ | grep -q 'internal page'"
check "behind the office: the host saw the office's address, not the client's" bash -c "grep -q '^10.30.0.1 ' '$work/lan-http.log' && ! grep -q '^10.99.0' '$work/lan-http.log'"
check "the server's nftables table is in place while it runs" office nft list table inet netext_srv_netextsrv0

# DNS: the pushed servers replace the laptop's resolver file while the VPN is up.
check "DNS: the tunnel's resolver configuration is installed" grep -q "nameserver 10.20.0.53" "$work/resolv.conf"
check "DNS: with its search domain" grep -q "search office.test" "$work/resolv.conf"

# Proxy settings: shown in status and exported for programs that honour proxy variables.
check "proxy: shown in status" bash -c "'$bin/netext' status Office | grep -q 'proxy: http 10.20.0.5:3128'"
check "proxy: exported by netext proxy-env" bash -c "'$bin/netext' proxy-env | grep -qx \"export http_proxy='http://10.20.0.5:3128'\""
check "proxy: with its exceptions" bash -c "'$bin/netext' proxy-env | grep -qx \"export no_proxy='localhost,.office.test'\""

check "systemd readiness: the server says READY=1 once it serves" grep -q '^READY=1 | STATUS=serving 1 peers on 0.0.0.0:51900$' "$work/notify.log"

# SIGHUP adds a peer live (wg syncconf): the connected laptop keeps its session, with no new
# handshake, and the new peer may connect at once.
laptop_handshake() { office "$bin/netext-server" tunnel show --status-socket "$work/server.sock" --json | python3 -c 'import json, sys; print([p for p in json.load(sys.stdin)["peers"] if p["name"] == "laptop"][0]["lastHandshake"])'; }
handshake_before="$(laptop_handshake)"
sed -i "s|\"peers\": \[{\"name\": \"laptop\", \"publicKey\": \"$client_public\"}\]|\"peers\": [{\"name\": \"laptop\", \"publicKey\": \"$client_public\"}, {\"name\": \"laptop2\", \"publicKey\": \"$second_public\"}]|" "$work/server.json"
kill -HUP "$SERVER_PID"
check "SIGHUP: the server adds the peer and keeps the other" lab_wait "grep -q 'configuration reloaded.*added=laptop2 kept=1 ' '$work/server.log'" 10
check "SIGHUP: systemd is told RELOADING=1, then READY=1 with what changed" lab_wait "grep -q '^RELOADING=1 | MONOTONIC_USEC=' '$work/notify.log' && grep -q '^READY=1 | STATUS=reloaded: 1 peers added, 0 removed, 0 changed, 1 kept$' '$work/notify.log'" 10
check "SIGHUP: the server is still running" kill -0 "$SERVER_PID"
# (A scheduled rekey, every 120 s, landing in this second would also move the handshake: that
# one is told apart by its age.)
check "SIGHUP: the connected laptop kept its session (no new handshake)" python3 -c 'import sys, datetime as d; a, b = (d.datetime.fromisoformat(x.replace("Z", "+00:00")) for x in sys.argv[1:]); sys.exit(0 if a == b or (b - a).total_seconds() >= 100 else 1)' "$handshake_before" "$(laptop_handshake)"
check "SIGHUP: the connected laptop loads the page at once" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 3 http://10.20.0.5:8080/ | grep -q 'internal page'"

# A second client at the same time, with its own netextd, key and address.
netext2() { NETEXT_STATE_DIR="$work/state2" NETEXT_SOCKET="$work/netextd2.sock" NETEXT_RESOLV_CONF="$work/resolv2.conf" "$bin/netext" "$@"; }
# It names the server: ip netns exec gives the namespace /etc/netns/NAME/hosts as /etc/hosts.
mkdir -p "/etc/netns/$LAB_LAPTOP2" && printf '203.0.113.2 vpn.office.test\n' > "/etc/netns/$LAB_LAPTOP2/hosts"
NETEXT_STATE_DIR="$work/state2" NETEXT_SOCKET="$work/netextd2.sock" NETEXT_RESOLV_CONF="$work/resolv2.conf" lab_spawn "$LAB_LAPTOP2" "$bin/netextd" 2>> "$work/netextd2.log"
lab_wait "NETEXT_SOCKET='$work/netextd2.sock' '$bin/netext' status" 15
echo "$second_key" | netext2 create --name Office --provider com.netext.tunnel --server vpn.office.test:51900 --config "serverPublicKey=$server_public" --password-stdin --enable >/dev/null
check "two clients: the second one connects (to the server by name)" netext2 start Office
check "two clients: the second one has the next address" bash -c "ip netns exec $LAB_LAPTOP2 ip -br address show | grep -q 10.99.0.3"
check "two clients: both load the page" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://10.20.0.5:8080/ | grep -q 'internal page' && ip netns exec $LAB_LAPTOP2 curl -s -m 5 http://10.20.0.5:8080/ | grep -q 'internal page'"
check "two clients: the first one is still connected" bash -c "'$bin/netext' status Office | grep -q connected"

# Status like wg show: the client's tunnel in detail, and the server's peers live.
netext status Office > "$work/status.txt" 2>&1
check "status: interface and MTU" grep -Eq '^  interface: netext[0-9]+ \(mtu 1420\)$' "$work/status.txt"
check "status: addresses" grep -Eq '^  addresses: 10\.99\.0\.2/[0-9]+, fd99::2/[0-9]+$' "$work/status.txt"
check "status: routes" grep -Eq '^  routes: .*10\.20\.0\.0/16.*fd20::/64' "$work/status.txt"
check "status: DNS" grep -Eq '^  dns: 10\.20\.0\.53 for every name$' "$work/status.txt"
check "status: endpoint, latest handshake, uptime and transfer" bash -c "grep -q '^  endpoint: 203.0.113.2:51900$' '$work/status.txt' && grep -Eq '^  latest handshake: (just now|[0-9]+ seconds? ago) \(0 rekeys\)$' '$work/status.txt' && grep -Eq '^  uptime: [0-9]+ (second|minute)' '$work/status.txt' && grep -Eq '^  transfer: .* received, .* sent$' '$work/status.txt'"
office "$bin/netext-server" tunnel show --status-socket "$work/server.sock" > "$work/show.txt" 2>&1
check "tunnel show: both peers, with endpoints, handshakes and transfer" bash -c "grep -q '^peer: laptop$' '$work/show.txt' && grep -q '^peer: laptop2$' '$work/show.txt' && test \$(grep -Ec '^  endpoint: (198\.51\.100\.2|192\.0\.2\.2):' '$work/show.txt') -eq 2 && test \$(grep -c '^  latest handshake: ' '$work/show.txt') -eq 2 && test \$(grep -c '^  transfer: ' '$work/show.txt') -eq 2"
check "tunnel show --json: the peers' assigned addresses and counters" bash -c "ip netns exec $LAB_OFFICE '$bin/netext-server' tunnel show --status-socket '$work/server.sock' --json | python3 -c 'import json, sys; s = json.load(sys.stdin); p = {x[\"name\"]: x for x in s[\"peers\"]}; sys.exit(0 if p[\"laptop\"][\"addresses\"][0] == \"10.99.0.2/32\" and p[\"laptop\"][\"bytesReceived\"] > 0 and p[\"laptop2\"][\"hasSession\"] else 1)'"
check "tunnel show: refused to another user" bash -c "! ip netns exec $LAB_OFFICE setpriv --reuid=65534 --regid=65534 --clear-groups '$bin/netext-server' tunnel show --status-socket '$work/server.sock' > '$work/show-nobody.txt' 2>&1 && grep -q 'cannot reach a tunnel server' '$work/show-nobody.txt'"
check "two clients: the second one stops" netext2 stop Office

# Split tunnel: capture the laptop's underlay while fetching one page inside and one outside.
lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/underlay.pcap"
laptop curl -s -m 5 -o /dev/null http://10.20.0.5:8080/
laptop curl -s -m 5 -o /dev/null http://203.0.113.2:8090/
lab_capture_stop "$dump" "$work/underlay.pcap"
inside=$(laptop tcpdump -n -r "$work/underlay.pcap" 'host 10.20.0.5' 2>/dev/null | wc -l)
tunnel=$(laptop tcpdump -n -r "$work/underlay.pcap" 'udp port 51900' 2>/dev/null | wc -l)
direct=$(laptop tcpdump -n -r "$work/underlay.pcap" 'tcp port 8090' 2>/dev/null | wc -l)
check "split tunnel: no cleartext to the internal host on the underlay ($inside packets)" test "$inside" -eq 0
check "split tunnel: the internal fetch crossed as UDP 51900 ($tunnel packets)" test "$tunnel" -gt 0
check "split tunnel: the public fetch went direct ($direct packets)" test "$direct" -gt 0

check "MTU: a 1392-byte ping with DF fits the 1420 tunnel" laptop ping -c 1 -W 2 -M do -s 1392 10.20.0.5
check "MTU: a 1400-byte ping with DF does not" bash -c "! ip netns exec $LAB_LAPTOP ping -c 1 -W 2 -M do -s 1400 10.20.0.5 >/dev/null 2>&1"
laptop curl -s -m 20 -o "$work/big.copy" http://10.20.0.5:8080/big.bin
check "a 3 MB transfer arrives intact" cmp -s "$work/www/big.bin" "$work/big.copy"
# The other direction: the laptop uploads the file to a sink in the office that records its hash.
lab_spawn "$LAB_OFFICE" python3 -c "
import hashlib, socket
server = socket.create_server(('10.20.0.5', 9001)); server.settimeout(20)
connection, _ = server.accept(); connection.settimeout(20); digest = hashlib.sha256()
while chunk := connection.recv(65536): digest.update(chunk)
open('$work/upload.sha256', 'w').write(digest.hexdigest())
"
lab_wait "office ss -ltn | grep -q 10.20.0.5:9001" 10
laptop python3 -c "
import socket
connection = socket.create_connection(('10.20.0.5', 9001), timeout=20)
connection.sendall(open('$work/www/big.bin', 'rb').read()); connection.close()
"
lab_wait "test -s '$work/upload.sha256'" 20
check "a 3 MB upload arrives intact" test "$(cat "$work/upload.sha256" 2>/dev/null)" = "$(sha256sum "$work/www/big.bin" | cut -d' ' -f1)"
check "status counts the tunnel's traffic (the 3 MB each way)" bash -c "'$bin/netext' status Office --json | python3 -c 'import json, sys; s = json.load(sys.stdin)[0]; sys.exit(0 if s[\"bytesIn\"] > 3000000 and s[\"bytesOut\"] > 3000000 else 1)'"
check "the server's TUN interface uses offloads" grep -q "offloads=true" "$work/server.log"
# Metrics: scraped on the office's loopback, where --metrics-listen put them.
office curl -s -m 5 http://127.0.0.1:9586/metrics > "$work/metrics.txt"
check "metrics: every family with HELP and TYPE; per-peer transfer (the 3 MB each way) and handshakes" \
  python3 scripts/lib/prometheus-sample.py --check \
    'netext_tunnel_peer_received_bytes_total{peer="laptop"}' '>' 3000000 'netext_tunnel_peer_sent_bytes_total{peer="laptop"}' '>' 3000000 \
    'netext_tunnel_peer_handshakes_total{peer="laptop"}' '>=' 1 'netext_tunnel_peers' '==' 2 \
    'netext_tunnel_handshake_duration_seconds_count' '>=' 2 < "$work/metrics.txt"
check "metrics: no keys or client addresses in them" bash -c "! grep -Eq '$client_public|$second_public|198\.51\.100\.2|192\.0\.2\.2' '$work/metrics.txt'"
check "metrics: the endpoint answers only /metrics and the probes" bash -c "test \"\$(ip netns exec $LAB_OFFICE curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9586/peers)\" = 404"

# The server restarts: the client notices the silence, reasserts, and recovers.
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
check "systemd is told STOPPING=1 at SIGTERM" grep -q '^STOPPING=1 | STATUS=shutting down (SIGTERM)$' "$work/notify.log"
check "a stopped server leaves no nftables table and forwarding as it found it" bash -c "! ip netns exec $LAB_OFFICE nft list tables | grep -q netext_srv && test \"\$(ip netns exec $LAB_OFFICE sysctl -n net.ipv4.ip_forward)\" = 0"
start_server
lab_wait "grep -c 'tunnel server ready' '$work/server.log' | grep -q 2" 15
recovered=1
for _ in $(seq 1 45); do
  if laptop curl -s -m 1 -o /dev/null http://10.20.0.5:8080/; then recovered=0; break; fi
  sleep 1
done
check "after a server restart the tunnel recovers" test $recovered -eq 0
check "the provider reported reasserting and recovery" bash -c "grep -q 'reasserting' '$work/netextd.log' || grep -q 'tunnel restored' '$work/netextd.log'"

# The provider is killed: disconnected, interface, routes and rules gone.
provider=$(pgrep -f "$bin/netext-tunnel-provider" | while read -r pid; do [ "$(ip netns identify "$pid" 2>/dev/null)" = "$LAB_LAPTOP" ] && echo "$pid"; done | head -1)
kill -9 "$provider"
lab_wait "'$bin/netext' status Office | grep -q 'disconnected'" 10
check "killed provider: status disconnected with the reason" bash -c "'$bin/netext' status Office | grep -q 'killed by signal 9'"
check "killed provider: no netext interface left" bash -c "! ip netns exec $LAB_LAPTOP ip link show | grep -q netext"
check "killed provider: no policy rules left" bash -c "! ip netns exec $LAB_LAPTOP ip rule show | grep -q 7100"
check "killed provider: no proxy exported any more" bash -c "test -z \"\$('$bin/netext' proxy-env)\""
check "killed provider: the resolver file is restored" bash -c "! grep -q 10.20.0.53 '$work/resolv.conf'"
check "killed provider: page unreachable again" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 -o /dev/null http://10.20.0.5:8080/"

# Full tunnel: the server pushes default routes; everything but the tunnel's own UDP goes inside.
# (The client uses the server's second address, so the page on 203.0.113.2 is not the VPN
# server's own address, which always stays outside the tunnel. The server still listens on
# 0.0.0.0: it must answer from the address the client sent to — IP_PKTINFO — or the client's
# connected socket drops the answers.)
office ip addr add 203.0.113.9/24 dev eth0
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
sed -e 's|"routes": \[[^]]*\]|"routes": ["0.0.0.0/0", "::/0"]|' "$work/server.json" > "$work/server-full.json"
lab_spawn "$LAB_OFFICE" "$bin/netext-server" tunnel --config "$work/server-full.json" --status-socket "$work/server.sock" 2>> "$work/server.log"; SERVER_PID=$!
lab_wait "grep -c 'tunnel server ready' '$work/server.log' | grep -q 3" 15
echo "$client_key" | netext create --name Full --provider com.netext.tunnel --server 203.0.113.9:51900 --config "serverPublicKey=$server_public" --password-stdin --enable >/dev/null
netext start Full > "$work/full-start.out" 2>&1; full_status=$?
check "full tunnel: VPN starts (exit $full_status)" test $full_status -eq 0
lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/full.pcap"
check "full tunnel: a public address loads through the tunnel" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://203.0.113.2:8090/ | grep -q 'internal page'"
lab_capture_stop "$dump" "$work/full.pcap"
direct=$(laptop tcpdump -n -r "$work/full.pcap" 'tcp port 8090' 2>/dev/null | wc -l)
tunnel=$(laptop tcpdump -n -r "$work/full.pcap" 'udp port 51900' 2>/dev/null | wc -l)
check "full tunnel: nothing crossed the underlay in the clear ($direct packets)" test "$direct" -eq 0
check "full tunnel: the tunnel's own UDP still goes direct, no loop ($tunnel packets)" test "$tunnel" -gt 0
check "full tunnel: default routes are in netextd's table" bash -c "ip netns exec $LAB_LAPTOP ip route show table 7100 | grep -q '^default dev netext'"
check "full tunnel: stop" netext stop Full

# A client whose key the server does not know is refused.
netext disable Office >/dev/null
echo "$rogue_key" | netext create --name Rogue --provider com.netext.tunnel --server 203.0.113.9:51900 --config "serverPublicKey=$server_public" --password-stdin --enable >/dev/null
netext start Rogue > "$work/rogue.out" 2>&1
rogue_status=$?
check "unknown client key: start fails (exit $rogue_status)" test $rogue_status -eq 5
check "unknown client key: the server logged the refusal" grep -q "unknown key refused" "$work/server.log"
netext start Rogue --timeout 4 > "$work/rogue-timeout.out" 2>&1
rogue_status=$?
check "start --timeout: fails with exit 75 after saying what it waits for ($rogue_status)" bash -c "test $rogue_status -eq 75 && grep -q '^Rogue: connecting… (2 s)$' '$work/rogue-timeout.out' && grep -q 'did not connect within 4 s; the attempt was stopped' '$work/rogue-timeout.out'"
check "start --timeout: the attempt is stopped" bash -c "'$bin/netext' status Rogue | grep -q '^Rogue: disconnected'"
check "no key material in the server log" bash -c "! grep -q -e '$client_key' -e '$server_key' -e '$rogue_key' '$work/server.log' '$work/netextd.log'"

if [ $failures -gt 0 ]; then
  echo "--- start output"; cat "$work/full-start.out" 2>/dev/null
  echo "--- netextd log"; tail -30 "$work/netextd.log"; echo "--- server log"; tail -30 "$work/server.log"
  echo "$failures CHECKS FAILED"
  exit 1
fi
echo "ALL CHECKS PASSED"
