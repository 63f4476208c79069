#!/usr/bin/env bash
# End-to-end checks of the app proxy in a namespace lab: an app bound to an app-proxy
# configuration has its TCP flows (IPv4 and IPv6) carried by the reference provider
# (netext-proxy-provider) through a SOCKS 5 server nobody here wrote (Debian's dante, in the
# office), while another app's flows go direct; the web servers' logs and dante's log show which
# way each flow took. Large transfers arrive intact; the provider's own connections are not
# captured again; after a kill -9 of the provider its apps' new flows go direct, and stop and
# netextd's crash leave no rule, table or listener behind. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/appproxy.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh appproxy
source scripts/lib/install-packages.sh
netext_install dante-server nftables iptables curl python3 >/dev/null || { echo "FAIL packages"; exit 1; }
danted="$(command -v danted || echo /usr/sbin/danted)"

source scripts/lib/app-cgroups.sh
appproxy_cleanup() {
  app_cgroups_remove
  [ -n "${APPPROXY_KEEP:-}" ] && cp -r "$work" "$APPPROXY_KEEP"
  e2e_cleanup
}
trap appproxy_cleanup EXIT

lab_up || { echo "FAIL lab"; exit 1; }
# The public web server (on the internet) logs who asked: the laptop (direct) or the office,
# where dante runs (proxied). 10.20.0.5 is reachable from the office only.
lab_in "$LAB_INTERNET" sh -c 'ip addr add 100.64.0.80/32 dev lo && ip addr add 100.64.0.81/32 dev lo && ip -6 addr add 2001:db8:ff::80/128 dev lo && ip addr add 198.51.100.53/32 dev lo'
# One resolver (on the internet) for the laptop and the office: www.site.test is 100.64.0.80.
for ns in "$LAB_LAPTOP" "$LAB_OFFICE"; do mkdir -p "/etc/netns/$ns"; echo "nameserver 198.51.100.53" > "/etc/netns/$ns/resolv.conf"; done
# shop.site.test has an address of its own (the transparent proxy's host rule names it).
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.53 site.test 100.64.0.80 "$work/dns.log" shop.site.test=100.64.0.81
mkdir -p "$work/www"; echo "public page" > "$work/www/public.html"; echo "internal page" > "$work/www/index.html"
head -c 50000000 /dev/urandom > "$work/www/large.bin"
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 100.64.0.80 --directory '$work/www' 2>> '$work/public4.log'"
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 100.64.0.81 --directory '$work/www' 2>> '$work/shop.log'"
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 2001:db8:ff::80 --directory '$work/www' 2>> '$work/public6.log'"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8080 --bind 10.20.0.5 --directory "$work/www"
# A UDP echo on the public web server that logs who sent each datagram (the transparent
# proxy's UDP checks tell taken from declined flows by it).
lab_spawn "$LAB_INTERNET" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("100.64.0.80", 7))
log = open(sys.argv[1], "a", buffering=1)
while True:
    data, peer = s.recvfrom(2048); log.write("%s %s\n" % (peer[0], data.decode(errors="replace"))); s.sendto(data, peer)' "$work/udpecho.log"
# A UDP echo on the office's internal host: only dante (in the office) reaches it.
lab_spawn "$LAB_OFFICE" python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.20.0.5", 7))
while True:
    data, peer = s.recvfrom(2048); s.sendto(data, peer)'

cat > "$work/danted.conf" <<CONF
logoutput: $work/dante.log
internal: 203.0.113.2 port = 1080
internal: 2001:db8:2::2 port = 1080
external: 203.0.113.2
external: 2001:db8:2::2
external: 10.20.0.5
external.rotation: route
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 0/0 to: 0/0
  log: error
}
socks pass {
  from: 0/0 to: 0/0
  command: connect udpassociate udpreply
  log: connect error
}
CONF
lab_spawn "$LAB_OFFICE" "$danted" -f "$work/danted.conf" -N 1
lab_wait "ip netns exec $LAB_INTERNET curl -s -o /dev/null http://100.64.0.80:8080/public.html" 15
lab_wait "ip netns exec $LAB_INTERNET curl -s -o /dev/null 'http://[2001:db8:ff::80]:8080/public.html'" 15
lab_wait "office curl -s -o /dev/null --socks5 203.0.113.2:1080 http://10.20.0.5:8080/" 15

e2e_netextd_environment
printf '{"bundleIdentifier": "com.netext.proxy", "extensionPoint": "app-proxy", "executable": "%s", "user": "nobody"}\n' "$bin/netext-proxy-provider" > "$NETEXT_PROVIDERS_DIR/proxy.json"
printf '{"bundleIdentifier": "com.netext.transparent", "extensionPoint": "transparent-proxy", "executable": "%s", "arguments": ["transparent"], "user": "nobody"}\n' "$bin/netext-proxy-provider" > "$NETEXT_PROVIDERS_DIR/transparent.json"
chmod 644 "$NETEXT_PROVIDERS_DIR/proxy.json" "$NETEXT_PROVIDERS_DIR/transparent.json"
app_cgroups_start_netextd

proxied_app="org.example.$LAB_PREFIX.Proxied"
direct_app="org.example.$LAB_PREFIX.Direct"
as_app() { local app="$1"; shift; laptop "$bin/netext" run --app "$app" -- "$@" 2>> "$work/run.log"; }
# seen_from LOG SOURCE PATH: the web server logged PATH asked from SOURCE.
seen_from() { grep -F "$3" "$1" | grep -q "^$2 "; }
provider_pid() { for pid in $(ip netns pids "$LAB_LAPTOP"); do grep -q netext-proxy-provider "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"; done | head -1; }

check "netext create an app proxy (per-app, provider type app-proxy)" netext create --name Proxy --per-app --provider com.netext.proxy --provider-type app-proxy --server 203.0.113.2:1080 --enable
check "netext app bind" netext app bind "$proxied_app" --vpn Proxy
check "netext start: the app proxy is connected" bash -c "'$bin/netext' start Proxy | grep -q 'connected'"
check "the provider runs as nobody" bash -c "[ \"\$(ps -o user= -p \$(echo $(provider_pid)))\" = nobody ]"

# fetch_seen APP URL LOG SOURCE: APP loads URL (200), and the server's LOG names SOURCE for it.
fetch_seen() {
  local tag="t$RANDOM$RANDOM"
  [ "$(as_app "$1" curl -s -m 8 -o /dev/null -w '%{http_code}' "$2?$tag")" = 200 ] && seen_from "$3" "$4" "$tag"
}
internal_page() { as_app "$1" curl -s -m "${2:-8}" http://10.20.0.5:8080/ | grep -q 'internal page'; }
check "the bound app's IPv4 flow reaches the server through dante (the server saw the office)" \
  fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 203.0.113.2
check "the bound app's IPv6 flow goes through dante too" \
  fetch_seen "$proxied_app" 'http://[2001:db8:ff::80]:8080/public.html' "$work/public6.log" 2001:db8:2::2
check "the provider was told the app, its process and executable" grep -Eq "first flow of $proxied_app \\(pid [0-9]+, /usr/bin/curl\\) to 100\\.64\\.0\\.80:8080" "$work/netextd.log"
check "dante's log shows the proxied connections" grep -q "100.64.0.80.8080" "$work/dante.log"
check "a flow to a name the app's resolver answered goes upstream by name (dante resolved www.site.test)" \
  fetch_seen "$proxied_app" http://www.site.test:8080/public.html "$work/public4.log" 203.0.113.2
check "the office asked the resolver for www.site.test (dante was given the name)" grep -Eq "^www.site.test 1 from 203.0.113.2" "$work/dns.log"
check "the bound app reaches the office's internal host (only dante can)" internal_page "$proxied_app"
check "another app's flow goes direct (the server saw the laptop)" \
  fetch_seen "$direct_app" http://100.64.0.80:8080/public.html "$work/public4.log" 198.51.100.2
no_internal_page() { ! internal_page "$1" 3; }
check "another app cannot reach the internal host" no_internal_page "$direct_app"
udp_echo() { as_app "$1" python3 scripts/e2e/udp-probe.py 10.20.0.5 7 "netext app proxy probe" 3; }
no_udp_echo() { ! udp_echo "$1"; }
check "the bound app's UDP datagrams reach the office's internal echo through dante (UDP ASSOCIATE) and back" udp_echo "$proxied_app"
check "dante's log shows the UDP association" grep -q "udpassociate" "$work/dante.log"
check "another app's UDP does not (it goes direct)" no_udp_echo "$direct_app"
sum="$(sha256sum < "$work/www/large.bin")"
large_intact() { [ "$(as_app "$proxied_app" curl -s -m 60 http://100.64.0.80:8080/large.bin | sha256sum)" = "$sum" ]; }
check "a 50 MB transfer through the proxy arrives intact" large_intact
check "the provider's own connections reach dante straight from the laptop (not captured again)" grep -Eq "198\.51\.100\.2\.[0-9]+ 203\.0\.113\.2\.1080 -> " "$work/dante.log"
check "netextd counted every proxied flow as handed over and taken" bash -c "'$bin/netext' stop Proxy >/dev/null && grep 'app proxy ended' '$work/netextd.log' | tail -1 | grep -Eq 'declined=0 .*handled=[1-9][0-9]* live=[0-9]+ lost=0 offered=[1-9]'"

# What the proxy leaves once stopped: nothing steers, nothing listens.
proxy_rules() { laptop ip rule show priority 7099; laptop ip -6 rule show priority 7099; }
listeners() { laptop ss -Htlnp | grep -c netextd; }
nothing_left() { [ -z "$(proxy_rules)" ] && [ -z "$(laptop ip route show table 7099)" ] && ! laptop nft list table inet netextd_apps 2>/dev/null | grep -q tproxy && [ "$(listeners)" = 0 ]; }
check "after stop: no proxy rule, route, tproxy rule or listener is left" nothing_left
check "after stop: the bound app's flows go direct" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 198.51.100.2

# The provider killed in the middle of a transfer: the app's connection ends at once (no hang),
# the session ends, and new flows go direct.
check "netext start again" bash -c "'$bin/netext' start Proxy | grep -q connected"
# (Rate-limited, so it is still running; what the app's socket already holds it may still read.)
as_app "$proxied_app" curl -s -m 60 --limit-rate 4M -o /dev/null http://100.64.0.80:8080/large.bin & transfer=$!
sleep 2
check "kill -9 of the provider mid-transfer" kill -9 "$(provider_pid)"
transfer_ended() { for _ in $(seq 1 100); do kill -0 "$transfer" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
check "the app's transfer ends within 10 s of the provider's death (reset: no hang)" transfer_ended
wait "$transfer" 2>/dev/null; code=$?
check "and curl reports the transfer cut short (exit $code)" [ "$code" != 0 ]
lab_wait "'$bin/netext' status Proxy | grep -q disconnected" 10
check "the session is disconnected, naming the provider's end" bash -c "'$bin/netext' status Proxy | grep -qi 'disconnected'"
check "after the provider's death: nothing is left" nothing_left
check "after the provider's death: new flows go direct" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 198.51.100.2

# netextd killed while the proxy runs: its successor removes what it left.
check "netext start before netextd's crash" bash -c "'$bin/netext' start Proxy | grep -q connected"
check "while running, the tproxy rules are in place" bash -c "[ -n \"\$(ip netns exec '$LAB_LAPTOP' ip rule show priority 7099)\" ]"
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
for pid in $(provider_pid); do kill -9 "$pid"; done
app_cgroups_start_netextd
check "after netextd's crash and restart: nothing of the old proxy is left" nothing_left
check "netext disable" netext disable Proxy
check "after disable: the app steering table is gone" bash -c "! ip netns exec '$LAB_LAPTOP' nft list table inet netextd_apps >/dev/null 2>&1"

# Fail closed: an app proxy with --include-all-networks never lets its apps' flows go direct while
# it is enabled. Its provider killed: the next flow is refused (reset, nothing reaches the
# server) and starts the provider again, so flows after it go through dante; `netext stop` keeps
# them refused (as a VPN's kill switch) until `netext disable`.
check "netext create a fail-closed app proxy (--include-all-networks), the app bound to it" bash -c "
  '$bin/netext' app unbind '$proxied_app' --vpn Proxy > /dev/null &&
  '$bin/netext' create --name Closed --per-app --provider com.netext.proxy --provider-type app-proxy --server 203.0.113.2:1080 --include-all-networks --enable > /dev/null &&
  '$bin/netext' app bind '$proxied_app' --vpn Closed > /dev/null && '$bin/netext' start Closed | grep -q connected"
check "while it runs, the app's flows go through dante" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 203.0.113.2
refused_not_direct() {
  local tag="t$RANDOM$RANDOM" started=$SECONDS code
  code="$(as_app "$proxied_app" curl -s -m 8 -o /dev/null -w '%{http_code}' "http://100.64.0.80:8080/public.html?$tag")"
  [ "$code" = 000 ] || { echo "  curl got $code"; return 1; }
  [ $((SECONDS - started)) -lt 5 ] || { echo "  refused only after $((SECONDS - started)) s"; return 1; }
  ! grep -qF "$tag" "$work/public4.log" || { echo "  the server saw the flow: it went direct"; return 1; }
}
kill -9 "$(provider_pid)"
lab_wait "'$bin/netext' status Closed | grep -q disconnected" 10
check "its provider killed: the app's next flow is refused at once, and nothing reaches the server" refused_not_direct
check "that flow started the provider again (netextd's log), and the session is connected" bash -c "
  grep -q 'a flow arrived while it fails closed; starting its provider again' '$work/netextd.log' &&
  for _ in \$(seq 1 100); do '$bin/netext' status Closed | grep -q connected && exit 0; sleep 0.1; done; exit 1"
check "…so the flows after it go through dante again" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 203.0.113.2
stopped_refused() {
  netext stop Closed > /dev/null || return 1
  refused_not_direct || return 1
  sleep 1
  netext status Closed | grep -q disconnected || { echo "  the user's stop was undone by a flow"; return 1; }
}
check "netext stop: its flows stay refused (no restart: the user stopped it)" stopped_refused
check "netext disable: its flows go direct, nothing of it is left" bash -c "'$bin/netext' disable Closed > /dev/null"
check "…the app's flow goes direct" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 198.51.100.2
check "…no proxy rule, route, tproxy rule or listener is left" nothing_left

# A transparent proxy: every program's flows to port 8080 go to the provider, which takes only
# those to www.site.test (through dante) and declines the rest: netextd sends those on directly.
fetch_plain_seen() { # fetch_plain_seen URL LOG SOURCE: any program (no app) loads URL; LOG names SOURCE for it
  local tag="t$RANDOM$RANDOM"
  [ "$(laptop curl -s -m 8 -o /dev/null -w '%{http_code}' "$1?$tag")" = 200 ] && seen_from "$2" "$3" "$tag"
}
check "netext create a transparent proxy (provider type transparent-proxy)" netext create --name Site --provider com.netext.transparent --provider-type transparent-proxy \
  --server 203.0.113.2:1080 --config "include=0.0.0.0/0 8080, ::/0 8080, 100.64.0.80/32 7 udp" --config hosts=www.site.test --enable
check "netext start: the transparent proxy is connected" bash -c "'$bin/netext' start Site | grep -q connected"
check "the provider asked for port 8080 (netextd logged its rules)" grep -q 'transparent proxy: its flows go to the provider.*0.0.0.0/0 port 8080 tcp' "$work/netextd.log"
check "a program's flow to www.site.test goes through dante (the server saw the office)" \
  fetch_plain_seen http://www.site.test:8080/public.html "$work/public4.log" 203.0.113.2
check "its flow to other.site.test is declined and goes direct (the server saw the laptop)" \
  fetch_plain_seen http://other.site.test:8080/public.html "$work/public4.log" 198.51.100.2
check "a declined IPv6 flow goes direct" fetch_plain_seen 'http://[2001:db8:ff::80]:8080/public.html' "$work/public6.log" 2001:db8:1::2
declined_intact() { [ "$(laptop curl -s -m 60 http://100.64.0.80:8080/large.bin | sha256sum)" = "$sum" ]; }
check "a declined 50 MB transfer arrives byte-identical" declined_intact
# UDP: a program's datagrams to www.site.test:7 are taken (through dante's UDP relay: the echo
# saw the office); to other.site.test:7 declined, and netextd carries them itself (the echo saw
# the laptop, and its answer came back through netextd's datagram relay).
udp_plain_seen() { # udp_plain_seen NAME SOURCE
  local tag="u$RANDOM$RANDOM"
  laptop python3 scripts/e2e/udp-probe.py "$1" 7 "$tag" 3 && grep -q "^$2 $tag\$" "$work/udpecho.log"
}
check "a program's UDP flow to www.site.test is taken and goes through dante (the echo saw the office)" udp_plain_seen www.site.test 203.0.113.2
check "its UDP flow to other.site.test is declined and netextd sends it on (the echo saw the laptop, the answer came back)" udp_plain_seen other.site.test 198.51.100.2
check "a flow to another port is not taken (no offer: netextd's counts stay)" bash -c "ip netns exec '$LAB_LAPTOP' curl -s -m 3 -o /dev/null http://100.64.0.80:9/ ; true"
check "netextd counted the declined flows sent on directly" bash -c "'$bin/netext' stop Site >/dev/null && grep 'app proxy ended' '$work/netextd.log' | tail -1 | grep -Eq 'declined=[1-9].*directFailed=0.*handled=[1-9].*sentDirect=[1-9].*udpOffered=[1-9]'"
check "after the transparent proxy's stop: nothing is left" nothing_left
check "netext disable Site" netext disable Site

# A host rule (NENetworkRule(destinationHost:)): the transparent proxy asks for shop.site.test
# port 8080 only. netextd holds every DNS answer until the addresses of a name the rule covers
# are in the rule's set, so the very first connection after the look-up is taken; flows to
# other names (other addresses) are never offered to the provider at all.
hold_rule() { laptop iptables-nft -w -t mangle -S NETEXTD-PXY-DNS 2>/dev/null | grep -q 'NFQUEUE --queue-num 7098 --queue-bypass'; }
check "netext create a transparent proxy whose only rule is a host rule" netext create --name Shop --provider com.netext.transparent --provider-type transparent-proxy \
  --server 203.0.113.2:1080 --config "include=shop.site.test 8080" --enable
check "netext start: it is connected" bash -c "'$bin/netext' start Shop | grep -q connected"
check "netextd took the host rule" grep -q 'transparent proxy: its flows go to the provider.*host shop.site.test port 8080 tcp' "$work/netextd.log"
check "while it runs, DNS answers are held (netextd's queue rule in the mangle table)" hold_rule
check "the first connection right after the look-up of shop.site.test goes through dante (the server saw the office)" \
  fetch_plain_seen http://shop.site.test:8080/public.html "$work/shop.log" 203.0.113.2
check "the name's address is in the rule's set, with a timeout" bash -c "ip netns exec '$LAB_LAPTOP' nft list table inet netextd_apps | grep -A3 'set tph4_' | grep -q '100.64.0.81 timeout'"
check "a second program's flow to it goes through dante too" fetch_plain_seen http://shop.site.test:8080/public.html "$work/shop.log" 203.0.113.2
check "a flow to www.site.test (another address, same port) goes direct" fetch_plain_seen http://www.site.test:8080/public.html "$work/public4.log" 198.51.100.2
check "the provider was offered only the two shop flows (netextd's counts)" bash -c "'$bin/netext' stop Shop >/dev/null && grep 'app proxy ended' '$work/netextd.log' | tail -1 | grep -Eq 'declined=0 .*handled=2 live=[0-9]+ lost=0 offered=2 '"
check "after its stop: the DNS hold rule is gone" bash -c "! ip netns exec '$LAB_LAPTOP' iptables-nft -w -t mangle -S NETEXTD-PXY-DNS >/dev/null 2>&1"
check "after its stop: nothing else is left" nothing_left
check "after its stop: shop.site.test goes direct" fetch_plain_seen http://shop.site.test:8080/public.html "$work/shop.log" 198.51.100.2
check "netext disable Shop" netext disable Shop

# Inbound rules (NENetworkRule(remoteNetwork:…direction: .inbound)): the office's TCP connections
# to the laptop's port 9090 are taken by the kernel on netextd's inbound listener and handed to the
# provider, which passes them on to the service itself (so the service sees the laptop's own
# address); connections from elsewhere reach the service untouched.
lab_spawn "$LAB_LAPTOP" sh -c "exec python3 -m http.server 9090 --bind 198.51.100.2 --directory '$work/www' 2>> '$work/inbound.log'"
lab_spawn "$LAB_LAPTOP" sh -c "exec python3 -m http.server 9090 --bind 2001:db8:1::2 --directory '$work/www' 2>> '$work/inbound.log'"
lab_wait "ip netns exec $LAB_LAPTOP ss -ltn | grep -q '198.51.100.2:9090' && ip netns exec $LAB_LAPTOP ss -ltn | grep -q '2001:db8:1::2\]:9090'" 10
inbound_seen() { # inbound_seen NAMESPACE URL SOURCE: a client in NAMESPACE loads URL; the service logged SOURCE for it
  local tag="i$RANDOM$RANDOM"
  [ "$(ip netns exec "$1" curl -s -m 8 -o /dev/null -w '%{http_code}' "$2?$tag")" = 200 ] && seen_from "$work/inbound.log" "$3" "$tag"
}
check "netext create a transparent proxy whose rules take the office's connections to port 9090" netext create --name Inbound --provider com.netext.transparent \
  --provider-type transparent-proxy --server 203.0.113.2:1080 --config "include=inbound 203.0.113.0/24 9090, inbound 2001:db8:2::/64 9090" --enable
check "netext start: it is connected" bash -c "'$bin/netext' start Inbound | grep -q connected"
check "netextd took the inbound rules" grep -q 'transparent proxy: its flows go to the provider.*inbound from 203.0.113.0/24 to port 9090 tcp' "$work/netextd.log"
check "the office's connection to the laptop's port 9090 goes through the provider (the service saw the laptop itself)" \
  inbound_seen "$LAB_OFFICE" http://198.51.100.2:9090/public.html 198.51.100.2
check "…over IPv6 too" inbound_seen "$LAB_OFFICE" 'http://[2001:db8:1::2]:9090/public.html' 2001:db8:1::2
check "the provider was told the inbound flow's two ends" grep -Eq "first inbound flow from 203\.0\.113\.2:[0-9]+ to 198\.51\.100\.2:9090" "$work/netextd.log"
check "a connection from another network (the internet's router) is not taken (the service saw it come from there)" \
  inbound_seen "$LAB_INTERNET" http://198.51.100.2:9090/public.html 198.51.100.1
check "netextd counted the two inbound flows as handed over and taken" bash -c "'$bin/netext' stop Inbound >/dev/null && grep 'app proxy ended' '$work/netextd.log' | tail -1 | grep -Eq 'declined=0 .*handled=2 live=[0-9]+ lost=0 offered=2 '"
check "after its stop: nothing is left" nothing_left
check "after its stop: the office's connection reaches the service directly" inbound_seen "$LAB_OFFICE" http://198.51.100.2:9090/public.html 203.0.113.2
check "netext disable Inbound" netext disable Inbound

# A provider holds at most $NETEXT_PROXY_FLOW_LIMIT flows (its end notices tell netextd when a
# taken flow is over): netextd restarted with a limit of 2, two slow transfers hold both, a
# third flow is refused at once (nothing reaches the server), and once the transfers end a new
# flow gets through again.
kill "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
NETEXT_PROXY_FLOW_LIMIT=2 app_cgroups_start_netextd
check "netext create an app proxy (netextd's flow limit 2), the app bound to it" bash -c "
  '$bin/netext' app unbind '$proxied_app' --vpn Closed > /dev/null &&
  '$bin/netext' create --name Limited --per-app --provider com.netext.proxy --provider-type app-proxy --server 203.0.113.2:1080 --enable > /dev/null &&
  '$bin/netext' app bind '$proxied_app' --vpn Limited > /dev/null && '$bin/netext' start Limited | grep -q connected"
slow="slow$RANDOM$RANDOM"
as_app "$proxied_app" curl -s -m 30 --limit-rate 1M -o /dev/null "http://100.64.0.80:8080/large.bin?$slow" & slow1=$!
as_app "$proxied_app" curl -s -m 30 --limit-rate 1M -o /dev/null "http://100.64.0.80:8080/large.bin?$slow" & slow2=$!
sleep 2
over_limit_refused() {
  refused_not_direct || return 1
  grep -q 'the provider holds its limit of flows; new flows are refused' "$work/netextd.log"
}
check "two transfers hold the limit: a third flow is refused at once, and netextd says why" over_limit_refused
pkill -f "large.bin?$slow"; wait "$slow1" "$slow2" 2>/dev/null
sleep 1
check "the transfers over (their end notices counted), the next flow goes through dante" fetch_seen "$proxied_app" http://100.64.0.80:8080/public.html "$work/public4.log" 203.0.113.2
check "netextd counted the refusal and no flow left held" bash -c "'$bin/netext' stop Limited >/dev/null && grep 'app proxy ended' '$work/netextd.log' | tail -1 | grep -Eq 'live=0 .*overLimit=1 '"
check "netext disable Limited" netext disable Limited

e2e_finish "$work/netextd.log" "$work/dante.log" "$work/run.log"
