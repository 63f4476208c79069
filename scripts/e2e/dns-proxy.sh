#!/usr/bin/env bash
# End-to-end checks of a DNS proxy provider (Apple's NEDNSProxyProvider) in a namespace lab: the
# reference provider (netext-dns-proxy-provider, as nobody) answers every program's DNS — UDP and
# TCP, to any server — over its own DNS-over-HTTPS connection to unbound (Debian's; nobody here
# wrote it) with a lab CA. unbound answers www.example.test differently (198.51.100.90) from the
# laptop's own cleartext resolver (198.51.100.80), so each answer names its path; the laptop's
# uplink capture shows no DNS in the clear while the proxy runs. Then: the provider's log holds no
# names; a stop, and a provider killed with SIGKILL, let DNS go direct again (fail open) with
# nothing of the steering left.
# Needs root and unbound. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns-proxy.sh
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dnsproxy
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh

# Two cleartext resolvers: the laptop's own (.99) and another a program might ask directly (.98).
dns_lab_up 198.51.100.98
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.98 example.test 198.51.100.80 "$work/other-dns.log"

dns_proxy_lab_serve
e2e_start_netextd

resolves() { laptop getent hosts "$1" | grep -q "^$2 "; }
asks() { [ "$(laptop python3 scripts/e2e/dns-query.py "$@" | head -1)" = "$ANSWER" ]; }
capture() { lab_capture_start CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/$1.pcap"; }
captured() { lab_capture_stop "$CAPTURE_PID" "$work/$1.pcap"; tcpdump -n -r "$work/$1.pcap" "$2" 2>/dev/null | wc -l; }
steering_left() { laptop nft list ruleset 2>/dev/null | grep -c "tproxy" || true; }

check "before: www.example.test resolves through the laptop's own resolver (198.51.100.80)" resolves www.example.test 198.51.100.80
: > "$work/plain-dns.log"

capture proxy
check "netext create a DNS proxy (provider type dns-proxy, no server address)" netext create --name "Lab DNS proxy" --provider com.netext.dns-proxy --provider-type dns-proxy \
  --config doh-url=https://dns.lab.test/dns-query --config doh-address=198.51.100.53 --config "ca-file=$work/public/ca.crt" --enable
check "netext start: the DNS proxy is connected" bash -c "'$bin/netext' start 'Lab DNS proxy' | grep -q connected"
check "netextd steers every program's DNS to the provider" grep -q "DNS proxy: every program's DNS flows go to the provider" "$work/netextd.log"
check "getent: www.example.test now comes from unbound over DoH (198.51.100.90)" resolves www.example.test 198.51.100.90
ANSWER=198.51.100.91
check "a UDP query straight to the laptop's resolver is answered by the proxy" asks 198.51.100.99 mail.example.test
check "a TCP query (two-byte length, RFC 1035 §4.2.2) too" asks 198.51.100.99 mail.example.test tcp
check "a query to another server a program chose itself too" asks 198.51.100.98 mail.example.test
check "unbound saw the laptop's queries over HTTPS" bash -c "[ \$(grep -c 'info: 198.51.100.2 mail.example.test. A IN' '$work/unbound.log') -ge 3 ]"
check "neither cleartext resolver saw a query" bash -c "[ ! -s '$work/plain-dns.log' ] && [ ! -s '$work/other-dns.log' ]"
proxy_clear=$(captured proxy "port 53")
proxy_https=$(captured proxy "tcp port 443 and host 198.51.100.53")
check "the uplink capture: no DNS in the clear ($proxy_clear packets on port 53)" test "$proxy_clear" -eq 0
check "the uplink capture: the queries went over HTTPS to unbound ($proxy_https packets on 443)" test "$proxy_https" -gt 0
provider_pid=$(e2e_descendants netext-dns-proxy-provider "$NETEXTD_PID" | head -1)
check "the provider runs as nobody" bash -c "[ \"\$(ps -o user= -p '$provider_pid')\" = nobody ]"

check "netext stop: the provider counted its flows and answers" bash -c "'$bin/netext' stop 'Lab DNS proxy' > /dev/null && grep -Eq 'netext-dns-proxy-provider: stopped .*[1-9][0-9]* UDP and [1-9][0-9]* TCP flows, [1-9][0-9]* answers, 0 failed' '$work/netextd.log'"
check "…and logged no name it answered" bash -c "! grep -q 'example.test' '$work/netextd.log'"
direct_and_clean() { resolves www.example.test 198.51.100.80 && [ "$(steering_left)" -eq 0 ]; }
check "after the stop: DNS goes direct again (198.51.100.80), no tproxy rule is left" direct_and_clean
check "netext start again" bash -c "'$bin/netext' start 'Lab DNS proxy' | grep -q connected"
check "the proxy answers again" resolves www.example.test 198.51.100.90
provider_pid=$(e2e_descendants netext-dns-proxy-provider "$NETEXTD_PID" | head -1)
check "the provider killed with SIGKILL" kill -9 "$provider_pid"
ended() { # the session is no longer connected and its steering is gone (within 5 s)
  for _ in $(seq 50); do
    if ! netext status 'Lab DNS proxy' 2>/dev/null | grep -qw connected && [ "$(steering_left)" -eq 0 ]; then return 0; fi
    sleep 0.1
  done
  return 1
}
check "fail open: the session ends and its steering goes" ended
check "…and DNS goes direct" resolves www.example.test 198.51.100.80
check "netext disable" netext disable 'Lab DNS proxy'

e2e_finish "$work/netextd.log" "$work/unbound.log"
