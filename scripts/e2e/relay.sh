#!/usr/bin/env bash
# End-to-end checks of network relays in a namespace lab: netext-server relay at the office's
# edge (203.0.113.2:8443, TLS from a lab CA, a bearer token, only the office's internal network
# allowed) and, on the laptop, relay settings for the names within office.test saved with
# `netext relay configure --enable`, which netextd puts in force with the built-in relay
# provider (netext-relay-provider, a transparent proxy). A TCP page and a UDP echo on the
# office's internal host (10.20.0.5, which the laptop cannot reach) answer through the relay;
# an excluded name and names outside the domain go direct; the laptop's uplink carries one TLS
# connection to the relay and nothing for the office's internal host. Then the relay restarts:
# a flow fails cleanly and the next ones recover. connect-ip (RFC 9484) from the laptop by the
# python3-h2 client: an address from the relay's pool, the office network advertised, pings to
# the internal host through the relay's TUN interface, a spoofed packet kept out. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/relay.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh relay
source scripts/lib/install-packages.sh
netext_install nftables iptables iproute2 iputils-ping curl python3 python3-h2 tcpdump openssl unbound >/dev/null || { echo "FAIL packages"; exit 1; }
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh
source scripts/lib/app-cgroups.sh
relay_cleanup() {
  app_cgroups_remove
  [ -n "${RELAY_KEEP:-}" ] && cp -r "$work" "$RELAY_KEEP"
  e2e_cleanup
}
trap relay_cleanup EXIT

lab_up || { echo "FAIL lab"; exit 1; }
# One resolver on the internet: every name under .test is the office's internal host, but for
# www.public.test (a public web server on the internet).
lab_in "$LAB_INTERNET" sh -c 'ip addr add 100.64.0.80/32 dev lo && ip addr add 198.51.100.53/32 dev lo'
mkdir -p "/etc/netns/$LAB_LAPTOP"; echo "nameserver 198.51.100.53" > "/etc/netns/$LAB_LAPTOP/resolv.conf"
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.53 test 10.20.0.5 "$work/dns.log" www.public.test=100.64.0.80
# The office's DNS-over-HTTPS server (doh.office.test, 10.20.0.53): only the relay can reach it,
# and it finds the name in the office's hosts file (ip netns exec shows /etc/netns/NAME/hosts as
# /etc/hosts; written before the relay starts).
lab_in "$LAB_OFFICE" ip addr add 10.20.0.53/32 dev lo
mkdir -p "/etc/netns/$LAB_OFFICE"; printf '127.0.0.1 localhost\n10.20.0.53 doh.office.test\n' > "/etc/netns/$LAB_OFFICE/hosts"
mkdir -p "$work/www"; echo "office intranet page" > "$work/www/index.html"; head -c 20000000 /dev/urandom > "$work/www/large.bin"
lab_spawn "$LAB_OFFICE" sh -c "exec python3 -m http.server 8080 --bind 10.20.0.5 --directory '$work/www' 2>> '$work/office-web.log'"
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 100.64.0.80 --directory '$work/www' 2>> '$work/public-web.log'"
lab_spawn "$LAB_OFFICE" python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.20.0.5", 7))
while True:
    data, peer = s.recvfrom(2048); s.sendto(data, peer)'

# The relay: a lab CA's certificate for its address, one bearer token, the office's network only.
lab_ca_make "$work/ca" && lab_ca_issue "$work/ca" relay 203.0.113.2 || { echo "FAIL lab CA"; exit 1; }
cp "$work/ca/ca.crt" "$work/relay-ca.crt"; chmod 644 "$work/relay-ca.crt"
(umask 077; echo "lab-relay-token-5c1e" > "$work/relay-tokens")
start_relay() {
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" relay --listen 203.0.113.2:8443 --certificate "$work/ca/relay.crt" --key "$work/ca/relay.key" \
    --allow 10.20.0.0/24 --token-file "$work/relay-tokens" --ip-pool 10.77.0.0/24 --ip-interface nxrelay0 \
    --metrics-listen 127.0.0.1:9471 2>> "$work/relay.log"; RELAY_PID=$!
  lab_wait "office ss -ltn | grep -q '203.0.113.2:8443'" 15
}
start_relay
lab_wait "ip netns exec $LAB_INTERNET curl -s -o /dev/null http://100.64.0.80:8080/" 15

# netextd may point the laptop's resolver file at its stub (while a relay's DoH server is in force).
e2e_netextd_environment "/etc/netns/$LAB_LAPTOP/resolv.conf"
# The relay's certificate chains to the lab's CA (a deployment's chains to the system's).
export NETEXT_RELAY_CA_FILE="$work/relay-ca.crt"
printf '{"bundleIdentifier": "com.netext.relay", "extensionPoint": "transparent-proxy", "executable": "%s", "user": "nobody"}\n' "${RELAY_PROVIDER_EXECUTABLE:-$bin/netext-relay-provider}" > "$NETEXT_PROVIDERS_DIR/relay.json"
printf '{"bundleIdentifier": "com.netext.relay.per-app", "extensionPoint": "app-proxy", "executable": "%s", "user": "nobody"}\n' "${RELAY_PROVIDER_EXECUTABLE:-$bin/netext-relay-provider}" > "$NETEXT_PROVIDERS_DIR/relay-per-app.json"
printf '{"bundleIdentifier": "com.netext.relay.ip-tunnel", "extensionPoint": "packet-tunnel", "executable": "%s", "user": "nobody"}\n' "${RELAY_PROVIDER_EXECUTABLE:-$bin/netext-relay-provider}" > "$NETEXT_PROVIDERS_DIR/relay-ip-tunnel.json"
chmod 644 "$NETEXT_PROVIDERS_DIR/relay.json" "$NETEXT_PROVIDERS_DIR/relay-per-app.json" "$NETEXT_PROVIDERS_DIR/relay-ip-tunnel.json"
app_cgroups_start_netextd

office_page() { laptop curl -s -m "${1:-8}" http://intranet.office.test:8080/ | grep -q 'office intranet page'; }
no_office_page() { ! laptop curl -s -m 3 -o /dev/null "http://$1:8080/"; }
udp_echo() { laptop python3 scripts/e2e/udp-probe.py "$1" 7 "relay probe" 3; }
two_pages() { office_page && office_page; }
large_intact() { [ "$(laptop curl -s -m 30 http://files.office.test:8080/large.bin | sha256sum)" = "$(sha256sum < "$work/www/large.bin")" ]; }

check "before: the laptop cannot reach the office's internal host" no_office_page intranet.office.test
printf 'Proxy-Authorization: Bearer lab-relay-token-5c1e\n' > "$work/relay-headers"
lab_capture_start CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/uplink.pcap"
check "netext relay configure --enable: saved and enabled" netext relay configure --relay https://203.0.113.2:8443 --match-domain office.test \
  --exclude-fqdn login.office.test --header-file "$work/relay-headers" --name "Office relay" --enable
check "netextd put the relays in force (netext relay show: enabled, connected)" lab_wait "'$bin/netext' relay show | grep -q 'enabled, connected'" 15
check "the provider took the office's names (netextd logged a host rule)" grep -q 'transparent proxy: its flows go to the provider.*host office.test' "$work/netextd.log"
check "a page on the office's internal host loads through the relay" office_page
check "a second and third flow too (over the same relay connection)" two_pages
check "20 MB from the office arrive intact through the relay" large_intact
check "a UDP echo on the office's internal host answers through the relay (connect-udp)" udp_echo echo.office.test
public_seen() { local tag="t$RANDOM"; [ "$(laptop curl -s -m 8 -o /dev/null -w '%{http_code}' "http://www.public.test:8080/?$tag")" = 200 ] && grep -F "$tag" "$work/public-web.log" | grep -q '^198.51.100.2 '; }
check "a name outside office.test goes direct (the public server saw the laptop)" public_seen
lab_capture_stop "$CAPTURE_PID" "$work/uplink.pcap"
to_office_host=$(tcpdump -n -r "$work/uplink.pcap" "host 10.20.0.5" 2>/dev/null | wc -l)
relay_syns=$(tcpdump -n -r "$work/uplink.pcap" "tcp dst port 8443 and tcp[tcpflags] & tcp-syn != 0" 2>/dev/null | wc -l)
others=$(tcpdump -n -r "$work/uplink.pcap" "ip and not (tcp port 8443 and host 203.0.113.2) and not (udp port 53 and host 198.51.100.53) and not (host 100.64.0.80 and tcp port 8080) and not (host 10.20.0.5)" 2>/dev/null | wc -l)
check "the uplink capture: nothing to or from the office's internal host ($to_office_host packets)" test "$to_office_host" -eq 0
check "the uplink capture: one TLS connection to the relay carried every relayed flow ($relay_syns SYN)" test "$relay_syns" -eq 1
check "the uplink capture: besides it only DNS and the direct public flow ($others other packets)" test "$others" -eq 0
check "an excluded name (login.office.test) is not carried: straight on, it cannot reach the office" no_office_page login.office.test
check "the relay's log names no target" bash -c "! grep -q '10.20.0.5' '$work/relay.log'"
check "no token in netextd's log" bash -c "! grep -q 'lab-relay-token' '$work/netextd.log'"

# connect-ip, by a client nobody here wrote: the relay's TUN interface is captured meanwhile.
ip_tunnel() { laptop /usr/bin/python3 scripts/lib/masque-client.py 203.0.113.2:8443 "$work/relay-ca.crt" ip "$@" --token lab-relay-token-5c1e; }
check "connect-ip: the relay's TUN interface holds the pool's first address" bash -c "ip netns exec '$LAB_OFFICE' ip -4 addr show dev nxrelay0 | grep -q 'inet 10.77.0.1/24'"
lab_capture_start TUN_CAPTURE "$LAB_OFFICE" nxrelay0 "$work/relay-tun.pcap"
ip_tunnel --ping 10.20.0.5 --count 3 --spoof > "$work/connect-ip.txt" 2>&1
lab_capture_stop "$TUN_CAPTURE" "$work/relay-tun.pcap"
check "connect-ip: 200, the pool's first client address, the office network advertised" \
  bash -c "grep -qx 'status=200' '$work/connect-ip.txt' && grep -qx 'assigned=10.77.0.2/32 request=0' '$work/connect-ip.txt' && grep -qx 'routes=10.20.0.0-10.20.0.255/0' '$work/connect-ip.txt'"
check "connect-ip: three pings to the office's internal host answered through the tunnel" grep -qx 'ping=ok' "$work/connect-ip.txt"
tun_requests=$(tcpdump -n -r "$work/relay-tun.pcap" "icmp[icmptype] = icmp-echo and src host 10.77.0.2 and dst host 10.20.0.5" 2>/dev/null | wc -l)
tun_spoofed=$(tcpdump -n -r "$work/relay-tun.pcap" "host 192.0.2.99" 2>/dev/null | wc -l)
check "connect-ip: the TUN interface carried the 3 echo requests from the assigned address ($tun_requests)" test "$tun_requests" -eq 3
check "connect-ip: the spoofed packet never reached it ($tun_spoofed packets from 192.0.2.99)" test "$tun_spoofed" -eq 0
printf 'Proxy-Authorization: Bearer lab-relay-token-5c1e\n' > "$work/curl-proxy-headers"
check "curl (HTTP/1.1 CONNECT over TLS) fetches the office page through the relay" \
  bash -c "ip netns exec '$LAB_LAPTOP' curl -s -m 8 --proxytunnel --proxy https://203.0.113.2:8443 --proxy-cacert '$work/relay-ca.crt' --proxy-header @'$work/curl-proxy-headers' http://10.20.0.5:8080/ | grep -q 'office intranet page'"
ip_tunnel 10.30.0.0/24 '*' > "$work/connect-ip-outside.txt" 2>&1
check "connect-ip: a scope outside the allowed network is refused 403" grep -qx 'status=403' "$work/connect-ip-outside.txt"
office curl -s -m 5 http://127.0.0.1:9471/metrics > "$work/relay-metrics.txt"
check "the relay's metrics: one connect-ip tunnel, its 3 packets out and 3 back, the spoofed one dropped, nothing else from the interface, no tunnel left" \
  bash -c "grep -qx 'netext_masque_relay_streams_total{kind=\"ip\"} 1' '$work/relay-metrics.txt' && grep -qx 'netext_masque_relay_ip_packets_total{direction=\"to_network\"} 3' '$work/relay-metrics.txt' && grep -qx 'netext_masque_relay_ip_packets_total{direction=\"from_network\"} 3' '$work/relay-metrics.txt' && grep -qx 'netext_masque_relay_ip_dropped_total{side=\"from_clients\"} 1' '$work/relay-metrics.txt' && grep -qx 'netext_masque_relay_ip_dropped_total{side=\"from_network\"} 0' '$work/relay-metrics.txt' && grep -Eqx 'netext_masque_relay_ip_tunnels 0(\\.0)?' '$work/relay-metrics.txt'"
check "the relay's metrics: flows through it counted (TCP and UDP streams), the refused scope as forbidden" \
  bash -c "grep -Eq '^netext_masque_relay_streams_total\{kind=\"tcp\"\} [1-9]' '$work/relay-metrics.txt' && grep -Eq '^netext_masque_relay_streams_total\{kind=\"udp\"\} [1-9]' '$work/relay-metrics.txt' && grep -qx 'netext_masque_relay_refused_total{reason=\"forbidden\"} 1' '$work/relay-metrics.txt'"

# The relay restarts: the flows it carried end, a flow during its absence fails cleanly, the
# next ones after it is back go through a new connection.
kill "$RELAY_PID"; wait "$RELAY_PID" 2>/dev/null
check "while the relay is down, a flow fails cleanly (no page, no hang)" no_office_page intranet.office.test
check "the stopped relay logged its totals" grep -q 'msg="relay stopped".*ipDroppedFromClients=1' "$work/relay.log"
check "the stopped relay's TUN interface went with it" bash -c "! ip netns exec '$LAB_OFFICE' ip link show nxrelay0 2>/dev/null"
start_relay
check "after the relay is back, flows go through it again" office_page 10
check "and UDP too" udp_echo echo.office.test

# Chained relays: a second relay on the internet (100.64.0.90:8443, the same lab CA and token,
# only the office relay allowed as its target) is the first of the chain; the office's relay is
# reached through it with a nested CONNECT, and the flows go inside that one stream.
lab_in "$LAB_INTERNET" ip addr add 100.64.0.90/32 dev lo
lab_ca_issue "$work/ca" entry 100.64.0.90 || { echo "FAIL lab CA (entry relay)"; exit 1; }
lab_spawn "$LAB_INTERNET" "$bin/netext-server" relay --listen 100.64.0.90:8443 --certificate "$work/ca/entry.crt" --key "$work/ca/entry.key" \
  --allow 203.0.113.2/32 --token-file "$work/relay-tokens" --metrics-listen 127.0.0.1:9473 2>> "$work/relay-entry.log"
lab_wait "ip netns exec '$LAB_INTERNET' ss -ltn | grep -q '100.64.0.90:8443'" 15
check "chained relays: netext relay configure with two --relay (the entry relay on the internet, then the office's)" \
  netext relay configure --relay https://100.64.0.90:8443 --relay https://203.0.113.2:8443 --match-domain office.test \
  --exclude-fqdn login.office.test --header-file "$work/relay-headers" --name "Office relay" --enable
lab_wait "'$bin/netext' relay show | grep -q 'enabled, connected'" 15
"$bin/netext" relay show > "$work/chain-show.txt" 2>&1
lab_capture_start CHAIN_CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/uplink-chain.pcap"
check "the office page through the chain" lab_wait office_page 15
check "and the UDP echo (connect-udp inside the nested CONNECT)" udp_echo echo.office.test
lab_capture_stop "$CHAIN_CAPTURE_PID" "$work/uplink-chain.pcap"
chain_office=$(tcpdump -n -r "$work/uplink-chain.pcap" "host 203.0.113.2 or host 10.20.0.5" 2>/dev/null | wc -l)
chain_syns=$(tcpdump -n -r "$work/uplink-chain.pcap" "host 100.64.0.90 and tcp dst port 8443 and tcp[tcpflags] & tcp-syn != 0" 2>/dev/null | wc -l)
check "the uplink capture: one TLS connection to the entry relay, nothing to the office's relay or host ($chain_syns SYN, $chain_office other)" \
  test "$chain_syns" -eq 1 -a "$chain_office" -eq 0
ip netns exec "$LAB_INTERNET" curl -s -m 5 http://127.0.0.1:9473/metrics > "$work/relay-entry-metrics.txt"
check "the entry relay carried one CONNECT stream (to the office's relay) and no UDP of its own (its metrics)" \
  bash -c "grep -qx 'netext_masque_relay_streams_total{kind=\"tcp\"} 1' '$work/relay-entry-metrics.txt' && ! grep -Eq '^netext_masque_relay_streams_total\{kind=\"udp\"\} [1-9]' '$work/relay-entry-metrics.txt'"
check "the entry relay's log names neither the office's host nor a token" bash -c "! grep -Eq '10.20.0.5|lab-relay-token' '$work/relay-entry.log'"

# The relays' DNS-over-HTTPS server (NERelay.dnsOverHTTPSURL): unbound in the office answers
# viadoh.office.test; netextd's resolver reaches it through the relay (a flow to its name), so
# neither that name nor the server's goes to the laptop's resolver or crosses the uplink.
lab_ca_issue "$work/ca" dns doh.office.test || { echo "FAIL lab CA (doh)"; exit 1; }
printf 'local-zone: "office.test." static\nlocal-data: "viadoh.office.test. 60 IN A 10.20.0.5"\nlocal-data: "appdoh.office.test. 60 IN A 10.20.0.5"\n' | unbound_lab_config "$work/office-doh.conf" 10.20.0.53@443
lab_spawn "$LAB_OFFICE" unbound -d -c "$work/office-doh.conf"
lab_wait "office ss -ltn | grep -q '10.20.0.53:443'" 15
check "relays with a DNS-over-HTTPS server: netext relay configure --doh" netext relay configure --relay https://203.0.113.2:8443 \
  --doh https://doh.office.test/dns-query --match-domain office.test --exclude-fqdn login.office.test --header-file "$work/relay-headers" --name "Office relay" --enable
check "netextd routed the relays' names to it (logged) and pointed the laptop's resolver at its stub" \
  lab_wait "grep -q \"relay's names resolved through its DNS-over-HTTPS server\" '$work/netextd.log' && grep -q '^nameserver 127.0.0.153' '/etc/netns/$LAB_LAPTOP/resolv.conf'" 15
lab_capture_start DOH_CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/uplink-doh.pcap"
check "a page on a name only the office's DoH server knows loads through the relay" \
  lab_wait "laptop curl -s -m 8 http://viadoh.office.test:8080/ | grep -q 'office intranet page'" 15
check "a name outside office.test is still answered by the laptop's resolver" bash -c "ip netns exec '$LAB_LAPTOP' getent hosts www.public.test | grep -q 100.64.0.80 && grep -q '^www.public.test' '$work/dns.log'"
lab_capture_stop "$DOH_CAPTURE_PID" "$work/uplink-doh.pcap"
check "the office's DoH server answered viadoh.office.test (its log)" grep -q 'viadoh.office.test' "$work/unbound.log"
check "the laptop's resolver was never asked for it, nor for the DoH server's name" bash -c "! grep -Eq '^(viadoh|doh)\.office\.test' '$work/dns.log'"
doh_names=$(tcpdump -n -A -r "$work/uplink-doh.pcap" "port 53" 2>/dev/null | grep -c -E 'viadoh|doh.office' || true)
check "the uplink capture: no DNS packet names them ($doh_names)" test "$doh_names" -eq 0

# A packet tunnel over the relay's connect-ip (com.netext.relay.ip-tunnel, NetExt's own client):
# the relays are out of force first, so nothing but the tunnel takes the office's addresses.
check "netext relay disable (before the IP tunnel)" netext relay disable
check "a packet tunnel over connect-ip: netext create (the relay as the server; its token as the password, from standard input)" bash -c "
  echo lab-relay-token-5c1e | '$bin/netext' create --name 'Office IP' --provider com.netext.relay.ip-tunnel --server 203.0.113.2:8443 \
    --config caFile='$work/relay-ca.crt' --password-stdin --enable > /dev/null"
check "it connects: the relay assigned it an address" bash -c "'$bin/netext' start 'Office IP' > /dev/null && '$bin/netext' status 'Office IP' | grep -q 'Office IP: connected'"
check "its interface holds an address of the relay's pool and routes the office's network (advertised)" bash -c "
  ip netns exec '$LAB_LAPTOP' ip -4 addr show | grep -q 'inet 10.77.0.[0-9]*/32' && ip netns exec '$LAB_LAPTOP' ip -4 route show table all | grep -q '^10.20.0.0/24 dev netext'"
check "ICMP through it: three pings to the office's internal host answered (what CONNECT and connect-udp cannot carry)" laptop ping -c 3 -W 3 10.20.0.5
check "TCP through it: the office page by address" bash -c "ip netns exec '$LAB_LAPTOP' curl -s -m 8 http://10.20.0.5:8080/ | grep -q 'office intranet page'"
check "the provider logged the tunnel's address and routes" lab_wait "grep -q 'IP tunnel up through 203.0.113.2:8443: 10.77.0.[0-9]*/32, routes 10.20.0.0/24' '$work/netextd.log'" 5
check "netext stop: the tunnel goes, and the office is unreachable again" bash -c "'$bin/netext' stop 'Office IP' > /dev/null && ! ip netns exec '$LAB_LAPTOP' ping -c 1 -W 2 10.20.0.5 > /dev/null"
check "the provider's stop line counts the packets both ways" lab_wait "grep -Eq 'IP tunnel stopped \\(userInitiated\\): [1-9][0-9]* packets to the relay, [1-9][0-9]* from it' '$work/netextd.log'" 10
netext remove "Office IP" > /dev/null 2>&1

# Per-app relays: the same settings bound to one app, which netextd runs as an app proxy of the
# relay provider: that app's office names go through the relay, its other names direct (carried
# by the provider), and no other program's connection is touched.
as_browser() { laptop "$bin/netext" run --quiet --app org.example.Browser -- "$@"; }
per_app_in_force() {
  lab_wait "'$bin/netext' relay show | grep -q 'enabled, connected'" 15 || return 1
  "$bin/netext" relay show | grep -q '^apps: *org.example.Browser (per-app relays)'
}
browser_office_page() { as_browser curl -s -m 8 http://intranet.office.test:8080/ | grep -q 'office intranet page'; }
per_app_public() { local tag="p$RANDOM"; [ "$(as_browser curl -s -m 8 -o /dev/null -w '%{http_code}' "http://www.public.test:8080/?$tag")" = 200 ] && grep -F "$tag" "$work/public-web.log" | grep -q '^198.51.100.2 '; }
check "per-app relays: netext relay configure --bind-app saves them" netext relay configure --relay https://203.0.113.2:8443 --match-domain office.test \
  --exclude-fqdn login.office.test --header-file "$work/relay-headers" --bind-app org.example.Browser --name "Office relay" --enable
check "netextd put them in force as an app proxy of the relay provider (enabled, connected; apps: org.example.Browser)" per_app_in_force
check "the bound app reaches the office page through the relay" lab_wait browser_office_page 15
check "and its UDP echo (connect-udp)" as_browser python3 scripts/e2e/udp-probe.py echo.office.test 7 "per-app probe" 3
check "another program cannot reach the office: the relays are the app's alone" no_office_page intranet.office.test
check "the bound app's connection to a name the relays do not take goes direct (the public server saw the laptop)" per_app_public
# Per-app relays with the DNS-over-HTTPS server: netextd sends the bound app's DNS queries to a
# resolver of its own, which asks the office's server through the relay for office.test names
# (and the laptop's resolver for the rest); the resolver file and other programs are untouched.
check "per-app relays with a DNS-over-HTTPS server: netext relay configure --doh --bind-app" netext relay configure --relay https://203.0.113.2:8443 \
  --doh https://doh.office.test/dns-query --match-domain office.test --exclude-fqdn login.office.test --header-file "$work/relay-headers" \
  --bind-app org.example.Browser --name "Office relay" --enable
check "netextd started the apps' resolver (logged); the laptop's resolver file is its own" \
  lab_wait "grep -q \"per-app relays' apps resolve through the relays' DNS-over-HTTPS server\" '$work/netextd.log' && per_app_in_force && grep -qx 'nameserver 198.51.100.53' '/etc/netns/$LAB_LAPTOP/resolv.conf'" 15
"$bin/netext" relay show > "$work/per-app-doh-show.txt" 2>&1
lab_capture_start APPDOH_CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/uplink-appdoh.pcap"
check "the bound app loads a page on a name only the office's DoH server knows, through the relay" \
  lab_wait "as_browser curl -s -m 8 http://appdoh.office.test:8080/ | grep -q 'office intranet page'" 15
check "the bound app's name outside office.test is answered by the laptop's resolver" \
  bash -c "ip netns exec '$LAB_LAPTOP' '$bin/netext' run --quiet --app org.example.Browser -- getent hosts other.public.test | grep -q 10.20.0.5 && grep -q '^other.public.test' '$work/dns.log'"
lab_capture_stop "$APPDOH_CAPTURE_PID" "$work/uplink-appdoh.pcap"
check "the office's DoH server answered appdoh.office.test (its log)" grep -q 'appdoh.office.test' "$work/unbound.log"
check "the laptop's resolver was never asked for it" bash -c "! grep -q '^appdoh\.office\.test' '$work/dns.log'"
appdoh_names=$(tcpdump -n -A -r "$work/uplink-appdoh.pcap" "port 53" 2>/dev/null | grep -c -E 'appdoh|doh.office' || true)
check "the uplink capture: no DNS packet names it or the DoH server ($appdoh_names)" test "$appdoh_names" -eq 0
check "another program's query for the same name goes to the laptop's resolver as before" \
  bash -c "ip netns exec '$LAB_LAPTOP' getent hosts appdoh.office.test | grep -q 10.20.0.5 && grep -q '^appdoh.office.test' '$work/dns.log'"
# Client certificates: a second relay at the office's edge asks for them (--client-ca) and no
# token; netextd reads the laptop's identity file (root's, mode 600) and hands it to the provider.
lab_ca_issue_client "$work/ca" laptop-client
lab_spawn "$LAB_OFFICE" "$bin/netext-server" relay --listen 203.0.113.2:8444 --certificate "$work/ca/relay.crt" --key "$work/ca/relay.key" \
  --allow 10.20.0.0/24 --client-ca "$work/ca/ca.crt" 2>> "$work/relay-mtls.log"
lab_wait "office ss -ltn | grep -q '203.0.113.2:8444'" 15
check "client certificates: netext relay configure --client-identity (a relay that asks for them)" netext relay configure --relay https://203.0.113.2:8444 \
  --match-domain office.test --client-identity "$work/ca/laptop-client.pem" --name "Office relay" --enable
check "the office page through the relay that admitted the laptop by its certificate" lab_wait office_page 15
check "the identity's key appears in no log (netextd's and the provider's, the relay's)" bash -c "! grep -q 'PRIVATE KEY' '$work/netextd.log' && ! grep -q 'PRIVATE KEY' '$work/relay-mtls.log'"
check "without the identity the same relay refuses the laptop (TLS handshake)" \
  bash -c "! ip netns exec '$LAB_LAPTOP' curl -s -m 5 --proxytunnel --proxy https://203.0.113.2:8444 --proxy-cacert '$work/relay-ca.crt' http://10.20.0.5:8080/ > /dev/null"
# Privacy Pass: a third relay takes tokens of NetExt's issuer (both at the office's edge, TLS
# from the lab CA) instead of a bearer token; the laptop's relay client fetches them from the
# issuer with its credential (netextd's secret store → the provider), one fresh token a
# connection, so the relay cannot link the laptop's connections.
(umask 077; echo "lab-issuer-credential-8d21" > "$work/issuer-credentials")
lab_spawn "$LAB_OFFICE" "$bin/netext-server" issuer --listen 203.0.113.2:8446 --keys "$work/issuer-keys" --credentials "$work/issuer-credentials" \
  --tls-certificate "$work/ca/relay.crt" --tls-key "$work/ca/relay.key" 2>> "$work/issuer.log"
lab_wait "grep -q 'serving' '$work/issuer.log'" 20
start_pp_relay() {
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" relay --listen 203.0.113.2:8445 --certificate "$work/ca/relay.crt" --key "$work/ca/relay.key" \
    --allow 10.20.0.0/24 --privacy-pass-issuer https://203.0.113.2:8446 --upstream-ca "$work/ca/ca.crt" --spent-tokens "$work/relay-spent.sqlite" \
    --ip-pool 10.78.0.0/24 --ip-interface nxrelay1 --metrics-listen 127.0.0.1:9472 2>> "$work/relay-pp.log"; PP_RELAY_PID=$!
  lab_wait "office ss -ltn | grep -q '203.0.113.2:8445'" 15
}
start_pp_relay
pp_metric() { office curl -s -m 5 http://127.0.0.1:9472/metrics | grep -E "^netext_masque_relay_$1 " | awk '{print int($2)}'; }
pp_counts() { [ "$(pp_metric private_tokens_redeemed_total)" = "$1" ] && [ "$(pp_metric 'refused_total\{reason="unauthorized"\}')" = "$2" ]; }
pp_configure() {
  echo lab-issuer-credential-8d21 | netext relay configure --relay https://203.0.113.2:8445 --match-domain office.test \
    --privacy-pass-issuer https://203.0.113.2:8446 --privacy-pass-token-stdin --name 'Office relay' --enable > /dev/null
}
pp_pages() { lab_wait office_page 15 && two_pages; }
pp_reconnect() {
  kill "$PP_RELAY_PID" && wait "$PP_RELAY_PID" 2>/dev/null; start_pp_relay && lab_wait office_page 15
}
check "Privacy Pass: netext relay configure --privacy-pass-issuer (the issuer's credential from standard input)" pp_configure
check "netext relay show names the issuer, not the credential" bash -c "'$bin/netext' relay show | tee '$work/privacy-pass-show.txt' | grep -q 'tokens:      Privacy Pass from https://203.0.113.2:8446 (credential stored)'"
check "the office page through the relay that takes Privacy Pass tokens, then two more flows" pp_pages
check "the relay redeemed one token for that connection, after one 407 that taught the client its challenge (metrics)" pp_counts 1 1
check "the relay restarts: the provider's new connection carries the office page again" pp_reconnect
check "the restarted relay (its counts anew) redeemed a fresh token from that connection's first request, with no 407 (metrics)" pp_counts 1 0
check "the issuer's credential is in no log (netextd's and the provider's, the relay's, the issuer's)" bash -c "
  ! grep -q 'lab-issuer-credential' '$work/netextd.log' '$work/relay-pp.log' '$work/issuer.log'"
check "netext relay disable: the relays are out of force" netext relay disable
# connect-ip with Privacy Pass: NetExt's packet tunnel to the same relay, the issuer's credential
# as its password (a provider of its own: one 407 teaches it the challenge, then a token).
pp_ip_tunnel() {
  echo lab-issuer-credential-8d21 | netext create --name 'Office IP PP' --provider com.netext.relay.ip-tunnel --server 203.0.113.2:8445 \
    --config caFile="$work/relay-ca.crt" --config privacyPassIssuer=https://203.0.113.2:8446 --password-stdin --enable > /dev/null &&
    netext start 'Office IP PP' > /dev/null && netext status 'Office IP PP' | grep -q 'Office IP PP: connected' && laptop ping -c 2 -W 3 10.20.0.5 > /dev/null
}
check "connect-ip with Privacy Pass: a packet tunnel to the token-taking relay pings the office's internal host" pp_ip_tunnel
check "its connection spent one more token after one 407 (metrics since the relay's restart: two redeemed, one 407)" pp_counts 2 1
netext stop 'Office IP PP' > /dev/null 2>&1; netext remove 'Office IP PP' > /dev/null 2>&1
check "the per-app provider carried that flow itself, direct (its stop line)" \
  lab_wait "grep -Eq 'stopped \(configurationDisabled\): [0-9]+ TCP and [0-9]+ UDP flows carried, [1-9][0-9]* direct' '$work/netextd.log'" 10
check "after the stop: the office is unreachable again" no_office_page intranet.office.test
check "after the stop: the laptop's resolver file is its own again" grep -qx 'nameserver 198.51.100.53' "/etc/netns/$LAB_LAPTOP/resolv.conf"
check "after the stop: no transparent proxy rules are left" bash -c "! laptop nft list tables 2>/dev/null | grep -q netextd_apps || ! laptop nft list table inet netextd_apps 2>/dev/null | grep -q 'tph4_'"
e2e_finish "$work/netextd.log" "$work/relay.log"
