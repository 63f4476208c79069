#!/usr/bin/env bash
# End-to-end checks of Oblivious DNS over HTTPS (RFC 9230) in a namespace lab: the laptop's
# netextd seals each query to the target's key and posts it to NetExt's proxy
# (netext-server odoh-proxy, 198.51.100.56), which forwards it to NetExt's target
# (netext-server odoh-target, 198.51.100.55), whose resolver is unbound (Debian's, nobody here
# wrote it) over DNS over HTTPS. Checks: names resolve; the laptop's uplink carries only HTTPS
# to the proxy (nothing to the target, nothing on port 53); the proxy's log and the bytes it
# relays hold no name, while the target and unbound never see the laptop's address; the
# target's configuration is fetched through the proxy and followed across a key change; a
# pinned configuration of a foreign key fails closed; the proxy refuses targets it does not
# know. Needs root and unbound.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns-oblivious.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dnsodoh
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh

# 198.51.100.53: unbound (DoH); .55: the target; .56: the proxy — all in the internet namespace.
dns_lab_up 198.51.100.55 198.51.100.56
lab_ca_make "$work/ca" || { echo "FAIL lab CA"; exit 1; }
for leaf in "dns dns.lab.test" "target odoh-target.lab.test" "proxy odoh-proxy.lab.test"; do
  lab_ca_issue "$work/ca" $leaf || { echo "FAIL lab CA"; exit 1; }
done
chmod 644 "$work/ca/dns.key"
export NETEXT_DNS_CA_FILE="$work/ca/ca.crt"
unbound_lab_config "$work/unbound.conf" 198.51.100.53@443 <<'ZONE'
local-zone: "lab.test." static
local-data: "secret-one.lab.test. A 198.51.100.80"
local-data: "secret-two.lab.test. A 198.51.100.81"
local-data: "secret-three.lab.test. A 10.20.0.5"
ZONE
lab_spawn "$LAB_INTERNET" unbound -d -c "$work/unbound.conf"
# The proxy reaches the target by name: the internet namespace's hosts file names it.
mkdir -p "/etc/netns/$LAB_INTERNET"
printf '127.0.0.1 localhost\n198.51.100.55 odoh-target.lab.test\n' > "/etc/netns/$LAB_INTERNET/hosts"
lab_spawn "$LAB_INTERNET" "$bin/netext-server" odoh-target --listen 198.51.100.55:443 --keys "$work/odoh-keys" \
  --resolver-address 198.51.100.53 --resolver-url https://dns.lab.test/dns-query --resolver-ca "$work/ca/ca.crt" \
  --tls-certificate "$work/ca/target.crt" --tls-key "$work/ca/target.key" --log-level debug 2>> "$work/target.log"
lab_spawn "$LAB_INTERNET" "$bin/netext-server" odoh-proxy --listen 198.51.100.56:443 --target odoh-target.lab.test \
  --upstream-ca "$work/ca/ca.crt" --tls-certificate "$work/ca/proxy.crt" --tls-key "$work/ca/proxy.key" --log-level debug 2>> "$work/proxy.log"
lab_wait "ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.53:443' && ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.55:443' && ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.56:443'" 15
e2e_start_netextd

resolves() { ip netns exec "$LAB_LAPTOP" getent hosts "$1" | grep -q "^$2 "; }
metric() { ip netns exec "$LAB_INTERNET" curl -sk "https://$1/metrics" | awk -v name="$2" '$1 == name { print int($2) }'; }

lab_capture_start CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/uplink.pcap"
lab_capture_start PROXY_CAPTURE_PID "$LAB_INTERNET" lo "$work/inside.pcap"
check "netext dns configure --odoh-target --odoh-proxy (configuration fetched through the proxy) is saved and enabled" \
  netext dns configure --odoh-target https://odoh-target.lab.test/dns-query --odoh-proxy https://odoh-proxy.lab.test/dns-query --server 198.51.100.56 --name "Lab ODoH" --enable
check "the resolver file points at netextd's stub" grep -qx "nameserver 127.0.0.153" "$resolv"
check "through the proxy and the target: a name resolves to unbound's answer" resolves secret-one.lab.test 198.51.100.80
check "a second name" resolves secret-two.lab.test 198.51.100.81
check "netext dns status: running Oblivious DoH, the target through the proxy" bash -c "$bin/netext dns status | tee '$work/status.txt' | grep -q 'running — Lab ODoH (Oblivious DoH)' && grep -q 'server: https://odoh-target.lab.test/dns-query through https://odoh-proxy.lab.test/dns-query at 198.51.100.56' '$work/status.txt'"
lab_capture_stop "$CAPTURE_PID" "$work/uplink.pcap"
lab_capture_stop "$PROXY_CAPTURE_PID" "$work/inside.pcap"
uplink_clear=$(tcpdump -n -r "$work/uplink.pcap" port 53 2>/dev/null | wc -l)
uplink_proxy=$(tcpdump -n -r "$work/uplink.pcap" "tcp port 443 and host 198.51.100.56" 2>/dev/null | wc -l)
uplink_others=$(tcpdump -n -r "$work/uplink.pcap" "ip and not host 198.51.100.56" 2>/dev/null | wc -l)
check "the laptop's uplink: HTTPS to the proxy ($uplink_proxy packets)" test "$uplink_proxy" -gt 0
check "the laptop's uplink: nothing in the clear on port 53 ($uplink_clear packets)" test "$uplink_clear" -eq 0
check "the laptop's uplink: nothing to the target or to unbound ($uplink_others IP packets to others)" test "$uplink_others" -eq 0
# The proxy sees the laptop, not the names: its log and everything it relays are name-free.
forwarded=$(metric 198.51.100.56 netext_odoh_proxy_forwarded_total)
check "the proxy forwarded the queries (netext_odoh_proxy_forwarded_total ${forwarded:-missing} ≥ 2)" test "${forwarded:-0}" -ge 2
check "the proxy's log names no queried name" bash -c "! grep -q 'secret-' '$work/proxy.log'"
check "no name crossed the namespace's loopback in the clear (proxy → target → unbound are TLS)" bash -c "! tcpdump -n -A -r '$work/inside.pcap' 2>/dev/null | grep -q 'secret-'"
# The target sees names (it asks unbound) but never the laptop.
answered=$(metric 198.51.100.55 netext_odoh_target_answered_total)
check "the target answered them (netext_odoh_target_answered_total ${answered:-missing} ≥ 2)" test "${answered:-0}" -ge 2
check "unbound was asked the names — by the target, not by the laptop" bash -c "grep -q 'secret-one.lab.test. A IN' '$work/unbound.log' && ! grep -q '198.51.100.2 ' '$work/unbound.log'"
check "the target's connections come from the proxy, never from the laptop (198.51.100.2)" bash -c "ip netns exec $LAB_INTERNET ss -tn state established '( sport = :443 )' | grep -q '198.51.100.55:443' && ! ip netns exec $LAB_INTERNET ss -tn state established '( sport = :443 )' | grep '198.51.100.55:443' | grep -q '198.51.100.2:'"
check "the target's log names no queried name" bash -c "! grep -q 'secret-' '$work/target.log'"

# The target's keys change (its key directory replaced, restarted): 401, a new configuration
# fetched through the proxy, the answer.
target_pid=$(ip netns exec "$LAB_INTERNET" ss -ltnp | grep '198.51.100.55:443' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
kill "$target_pid"; lab_wait "! ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.55:443'" 10
rm -rf "$work/odoh-keys"
lab_spawn "$LAB_INTERNET" "$bin/netext-server" odoh-target --listen 198.51.100.55:443 --keys "$work/odoh-keys" \
  --resolver-address 198.51.100.53 --resolver-url https://dns.lab.test/dns-query --resolver-ca "$work/ca/ca.crt" \
  --tls-certificate "$work/ca/target.crt" --tls-key "$work/ca/target.key" --log-level debug 2>> "$work/target.log"
lab_wait "ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.55:443'" 10
check "after the target's keys changed, names still resolve (401, then the new configuration)" resolves secret-three.lab.test 10.20.0.5
stale=$(metric 198.51.100.55 netext_odoh_target_unknown_key_total)
check "the target refused the stale key (netext_odoh_target_unknown_key_total ${stale:-missing} ≥ 1)" test "${stale:-0}" -ge 1

# A pinned configuration of a key the target does not hold fails closed: no answer, nothing in the clear.
: > "$work/plain-dns.log"
python3 - "$work/foreign.configs" <<'PY'
import os, sys
key = os.urandom(32)  # any 32 bytes: an X25519 public key nobody holds the private key of
contents = bytes([0, 0x20, 0, 1, 0, 1, 0, 32]) + key
config = bytes([0, 1, 0, len(contents)]) + contents
open(sys.argv[1], "wb").write(len(config).to_bytes(2, "big") + config)
PY
check "settings pinning a foreign configuration (--odoh-configs) are saved" \
  netext dns configure --odoh-target https://odoh-target.lab.test/dns-query --odoh-proxy https://odoh-proxy.lab.test/dns-query --server 198.51.100.56 --odoh-configs "$work/foreign.configs" --enable
check "…a name does not resolve (the target cannot open the query)" bash -c "! ip netns exec $LAB_LAPTOP getent hosts secret-one.lab.test"
check "…and the laptop's own resolver was not asked" test ! -s "$work/plain-dns.log"

# The proxy forwards only to targets on its list.
check "the proxy refuses a target it does not know (403, Proxy-Status)" bash -c "ip netns exec $LAB_INTERNET curl -sk -o /dev/null -D - -X POST -H 'Content-Type: application/oblivious-dns-message' --data-binary x 'https://198.51.100.56/dns-query?targethost=dns.lab.test&targetpath=/dns-query' | tee '$work/refused.txt' | grep -q '^HTTP/[0-9.]* 403' && grep -qi '^proxy-status:.*http_request_denied' '$work/refused.txt'"

check "netext dns disable" netext dns disable
check "the resolver file is restored" grep -qx "nameserver 198.51.100.99" "$resolv"

e2e_finish "$work/netextd.log" "$work/unbound.log" "$work/proxy.log" "$work/target.log"
