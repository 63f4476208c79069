#!/usr/bin/env bash
# End-to-end checks of a DNS proxy bound to apps (Apple's per-app DNS proxy) in a namespace lab:
# the reference DNS proxy provider (as nobody) answers over its own DNS-over-HTTPS connection to
# unbound (Debian's; www.example.test is 198.51.100.90 there, 198.51.100.80 at the laptop's own
# cleartext resolver, so each answer names its path) the DNS of the one app bound to it —
# launched in its cgroup by `netext run --app` — and of nothing else: another app and a program
# outside any app resolve through the laptop's resolver, the bound app's other connections go
# their own way. A stop lets the bound app's DNS go direct with no steering left.
# Needs root, cgroup v2 and unbound. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns-proxy-apps.sh
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dnsapps
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh
source scripts/lib/install-packages.sh
netext_install unbound openssl curl tcpdump python3 nftables > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

source scripts/lib/app-cgroups.sh

dns_lab_up
dns_proxy_lab_serve
app_cgroups_start_netextd

bound_app="org.example.$LAB_PREFIX.Bound"
other_app="org.example.$LAB_PREFIX.Other"
as_app() { local app="$1"; shift; laptop "$bin/netext" run --app "$app" -- "$@" 2>> "$work/run.log"; }
resolves_as() { as_app "$1" getent hosts "$2" | grep -q "^$3 "; }
capture() { lab_capture_start CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/$1.pcap"; }
captured() { lab_capture_stop "$CAPTURE_PID" "$work/$1.pcap"; tcpdump -n -r "$work/$1.pcap" "$2" 2>/dev/null | wc -l; }
steering_left() { laptop nft list ruleset 2>/dev/null | grep -c "tproxy" || true; }

check "netext create a DNS proxy bound to apps (--per-app, provider type dns-proxy)" netext create --name "Apps DNS" --per-app --provider com.netext.dns-proxy \
  --provider-type dns-proxy --config doh-url=https://dns.lab.test/dns-query --config doh-address=198.51.100.53 --config "ca-file=$work/public/ca.crt" --enable
check "netext app bind the app to it" netext app bind "$bound_app" --vpn "Apps DNS"
check "netext start: connected" bash -c "'$bin/netext' start 'Apps DNS' | grep -q connected"
check "netextd steers only the bound apps' DNS" grep -q "DNS proxy: the bound apps' DNS flows go to the provider" "$work/netextd.log"
: > "$work/plain-dns.log"
capture apps
check "the bound app: www.example.test from unbound over DoH (198.51.100.90)" resolves_as "$bound_app" www.example.test 198.51.100.90
# The app's cgroup exists now (netext run made it): the steering names it.
ip netns exec "$LAB_LAPTOP" nft list ruleset > "$work/ruleset.txt" 2>&1
check "the steering marks the app's TCP and UDP to port 53, nothing else of it" bash -c "grep 'socket cgroupv2' '$work/ruleset.txt' | grep -q 'th dport 53 ' && ! grep 'socket cgroupv2' '$work/ruleset.txt' | grep -vq 'th dport 53 '"
ANSWER=198.51.100.91
asks_as() { [ "$(as_app "$1" python3 scripts/e2e/dns-query.py "${@:2}" | head -1)" = "$ANSWER" ]; }
check "the bound app's UDP query to the laptop's resolver: answered by the proxy" asks_as "$bound_app" 198.51.100.99 mail.example.test
check "the bound app's TCP query too" asks_as "$bound_app" 198.51.100.99 mail.example.test tcp
check "the laptop's resolver saw none of the bound app's queries" test ! -s "$work/plain-dns.log"
check "another app: www.example.test from the laptop's resolver (198.51.100.80)" resolves_as "$other_app" www.example.test 198.51.100.80
check "a program outside any app too" bash -c "ip netns exec $LAB_LAPTOP getent hosts www.example.test | grep -q '^198.51.100.80 '"
check "the laptop's resolver saw those two" bash -c "[ \$(grep -c '^www.example.test 1 from 198.51.100.2' '$work/plain-dns.log') -ge 2 ]"
code=$(as_app "$bound_app" curl -sk -m 5 -o /dev/null -w '%{http_code}' https://198.51.100.53/ 2>/dev/null)
check "the bound app's HTTPS connection goes its own way, straight to the server (HTTP $code)" test "${code:-000}" != 000
apps_clear=$(captured apps "udp port 53 and host 198.51.100.99 and not src host 198.51.100.99")
echo "  uplink: $apps_clear cleartext queries to the laptop's resolver (the other app's and the program's)"
check "in the clear on the uplink: only the other app's and the program's getent (A and AAAA each)" test "$apps_clear" -ge 2 -a "$apps_clear" -le 4
check "unbound saw the bound app's names" bash -c "[ \$(grep -c 'info: 198.51.100.2 mail.example.test. A IN' '$work/unbound.log') -ge 2 ]"
check "netext stop" bash -c "'$bin/netext' stop 'Apps DNS' > /dev/null"
direct_again() { resolves_as "$bound_app" www.example.test 198.51.100.80 && [ "$(steering_left)" -eq 0 ]; }
check "after the stop: the bound app's DNS goes direct, no tproxy rule left" direct_again
check "netext disable" netext disable "Apps DNS"
e2e_finish "$work/netextd.log" "$work/run.log" "$work/ruleset.txt"
