#!/usr/bin/env bash
# End-to-end checks of the system DNS settings (netext dns) in a namespace lab, against unbound
# (Debian's, nobody here wrote it) serving DNS over TLS (port 853) and DNS over HTTPS (HTTP/2,
# port 443) with a lab CA's certificate for dns.lab.test: the laptop's names are answered
# through each, the captures on the laptop's uplink show no DNS in the clear (port 53); a dead
# first server falls over to the next; match domains send only their names; a server that does
# not answer gives SERVFAIL and nothing in the clear unless the settings allow it; a certificate
# for another name is refused; disabling restores the resolver file. Needs root and unbound.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns-encrypted.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dnsenc
source scripts/lib/lab-ca.sh
source scripts/lib/unbound-lab.sh
source scripts/lib/install-packages.sh
netext_install unbound nginx-light libnginx-mod-stream openssl tcpdump python3 > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

# The laptop's own (cleartext) resolver: 198.51.100.99, answering example.test. The encrypted
# servers: 198.51.100.53 (unbound) and 198.51.100.54 (nothing listens: a dead server).
dns_lab_up 198.51.100.54

unbound_lab_serve 198.51.100.53@853 198.51.100.53@443 <<'ZONE'
local-zone: "lab.test." static
local-data: "www.lab.test. A 198.51.100.80"
local-data: "mail.lab.test. A 198.51.100.81"
local-data: "corp.lab.test. A 10.20.0.5"
local-data: "www.corp.lab.test. A 10.20.0.6"
ZONE
lab_wait "ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.53:443'" 10
export NETEXT_DNS_CA_FILE="$work/ca/ca.crt"
e2e_start_netextd

resolves() { ip netns exec "$LAB_LAPTOP" getent hosts "$1" | grep -q "^$2 "; }
capture() { lab_capture_start CAPTURE_PID "$LAB_LAPTOP" eth0 "$work/$1.pcap"; }
captured() { lab_capture_stop "$CAPTURE_PID" "$work/$1.pcap"; tcpdump -n -r "$work/$1.pcap" "$2" 2>/dev/null | wc -l; }
queries_seen() { grep -c "info: 198.51.100.2 $1 A IN" "$work/unbound.log"; }

check "before: names resolve through the laptop's own resolver" resolves www.example.test 198.51.100.80
: > "$work/plain-dns.log"

# DNS over TLS, the first server dead.
capture dot
check "netext dns configure --tls (a dead server first) is saved and enabled" netext dns configure --tls --server 198.51.100.54 --server 198.51.100.53 --server-name dns.lab.test --name "Lab DoT" --enable
check "the resolver file points at netextd's stub" grep -qx "nameserver 127.0.0.153" "$resolv"
check "netext dns status says the names come through that file" bash -c "'$bin/netext' dns status | grep -qF \"the machine's names reach netextd through the resolver file $resolv\""
check "over TLS: a name resolves to unbound's answer" resolves www.lab.test 198.51.100.80
check "unbound saw the query from the laptop" bash -c "[ \$(grep -c 'info: 198.51.100.2 www.lab.test. A IN' '$work/unbound.log') -ge 1 ]"
check "another name over the same connection" resolves mail.lab.test 198.51.100.81
check "netext dns status: running over TLS, both servers, queries counted" bash -c "$bin/netext dns status | tee '$work/status-dot.txt' | grep -q 'running — Lab DoT (over TLS)' && grep -q 'server: tls://dns.lab.test@198.51.100.54:853' '$work/status-dot.txt' && grep -q 'server: tls://dns.lab.test@198.51.100.53:853' '$work/status-dot.txt' && $bin/netext dns status --json | python3 -c 'import json,sys; c=json.load(sys.stdin)[\"counters\"]; sys.exit(0 if c[\"bySettings\"] >= 2 and c[\"toSystem\"] == 0 else 1)'"
dot_clear=$(captured dot "port 53")
dot_tls=$(captured dot "tcp port 853 and host 198.51.100.53")
check "the uplink capture: no DNS in the clear ($dot_clear packets on port 53)" test "$dot_clear" -eq 0
check "the uplink capture: the queries went over TLS to 198.51.100.53 ($dot_tls packets on 853)" test "$dot_tls" -gt 0
check "the laptop's own resolver saw nothing" test ! -s "$work/plain-dns.log"
tls_connections=$(ip netns exec "$LAB_INTERNET" ss -tn state established '( sport = :853 )' | grep -c 198.51.100.2)
check "the queries shared at most one TLS connection a core ($tls_connections open, $(nproc) cores)" test "$tls_connections" -ge 1 -a "$tls_connections" -le "$(nproc)"

# DNS over HTTPS.
capture doh
check "netext dns configure --https replaces the settings" netext dns configure --https https://dns.lab.test/dns-query --server 198.51.100.53 --enable
check "over HTTPS: a name resolves to unbound's answer" resolves corp.lab.test 10.20.0.5
check "over HTTPS: a second name" resolves www.lab.test 198.51.100.80
check "netext dns status: running over HTTPS" bash -c "$bin/netext dns status | grep -q 'server: https://dns.lab.test/dns-query at 198.51.100.53'"
doh_clear=$(captured doh "port 53")
doh_https=$(captured doh "tcp port 443 and host 198.51.100.53")
check "the uplink capture: no DNS in the clear ($doh_clear packets on port 53)" test "$doh_clear" -eq 0
check "the uplink capture: the queries went over HTTPS ($doh_https packets on 443)" test "$doh_https" -gt 0
check "unbound answered them over HTTP/2 (its log names the queries)" bash -c "grep -q 'info: 198.51.100.2 corp.lab.test. A IN' '$work/unbound.log'"

# GET requests (RFC 8484 §4.1), and every server asked at once: a dead first server costs nothing.
check "netext dns configure --https --doh-get --parallel (a dead server first)" \
  netext dns configure --https https://dns.lab.test/dns-query --server 198.51.100.54 --server 198.51.100.53 --doh-get --parallel --enable
parallel_answer() {
  local before started elapsed
  before=$(queries_seen mail.lab.test.)
  started=$(date +%s%N)
  resolves mail.lab.test 198.51.100.81 || return 1
  elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
  echo "  answered in $elapsed ms"
  [ "$elapsed" -lt 1500 ] && [ "$(queries_seen mail.lab.test.)" -gt "$before" ]
}
check "a name resolves by GET through unbound at once, though the first server is dead" parallel_answer

# Match domains: only corp.lab.test's names go to the encrypted server.
: > "$work/plain-dns.log"
check "netext dns configure --match-domain corp.lab.test" netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --match-domain corp.lab.test --enable
before=$(grep -c 'www.corp.lab.test. A IN' "$work/unbound.log")
check "a name within the match domain: over TLS" resolves www.corp.lab.test 10.20.0.6
check "unbound saw it" test "$(grep -c 'www.corp.lab.test. A IN' "$work/unbound.log")" -gt "$before"
check "a name outside: through the laptop's own resolver" resolves www.example.test 198.51.100.80
check "the laptop's own resolver saw only that name" bash -c "grep -q '^www.example.test 1 from 198.51.100.2' '$work/plain-dns.log' && ! grep -q 'corp' '$work/plain-dns.log'"

# ProhibitDisablement: other programs' DNS is refused; netextd's own (marked) goes on.
direct_query() {
  ip netns exec "$LAB_LAPTOP" python3 - "$1" "$2" <<'PY'
import socket, sys
kind, port = sys.argv[1], int(sys.argv[2])
query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x07example\x04test\x00\x00\x01\x00\x01"
try:
    if kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(query, ("198.51.100.99", port)); s.recv(512)
    else:
        s = socket.create_connection(("198.51.100.53", port), timeout=2)
    print("answered")
except OSError as error:
    print("refused: %s" % error)
PY
}
capture guard
check "netext dns configure --prohibit-other-dns" netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --prohibit-other-dns --enable
check "the DNS guard table is installed" ip netns exec "$LAB_LAPTOP" nft list table inet netextd_dns
guard_udp=$(direct_query udp 53); guard_tls=$(direct_query tcp 853)
check "a program asking another resolver directly over UDP is refused ($guard_udp)" test "${guard_udp%%:*}" = refused
check "a program opening its own DNS-over-TLS connection is refused ($guard_tls)" test "${guard_tls%%:*}" = refused
check "names still resolve through netextd's resolver over TLS (its connection is marked)" resolves www.lab.test 198.51.100.80
check "netext dns status shows other DNS refused" bash -c "$bin/netext dns status | grep -q \"other programs' DNS (ports 53 and 853): refused\""
guard_clear=$(captured guard "port 53")
check "nothing left the laptop on port 53 ($guard_clear packets)" test "$guard_clear" -eq 0
check "settings without it remove the guard" netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --enable
check "the DNS guard table is gone" bash -c "! ip netns exec $LAB_LAPTOP nft list table inet netextd_dns 2>/dev/null"
direct_again=$(direct_query udp 53); tls_again=$(direct_query tcp 853)
check "the direct query is answered again ($direct_again)" test "$direct_again" = answered
check "a program's own TLS connection to port 853 opens again ($tls_again)" test "$tls_again" = answered

# A certificate for another name is refused: no answer, nothing in the clear.
capture wrongname
check "settings naming another server name are saved" netext dns configure --tls --server 198.51.100.53 --server-name other.lab.test --enable
check "a server whose certificate lacks the name gives no answer" bash -c "! ip netns exec $LAB_LAPTOP getent hosts www.lab.test"
wrong_clear=$(captured wrongname "port 53")
check "and nothing went in the clear ($wrong_clear packets on port 53)" test "$wrong_clear" -eq 0

# A DoT server that wants a client certificate: nginx's stream module (Debian's, nobody here wrote
# it) on 198.51.100.56:853 with ssl_verify_client on, passing the stream on over TLS to unbound.
lab_in "$LAB_INTERNET" ip addr add 198.51.100.56/32 dev lo
( cd "$work/ca" && umask 077 &&
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=laptop.lab.test" -keyout client.key -out client.csr 2> openssl.err &&
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > client.ext &&
  openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 -extfile client.ext -out client.crt 2>> openssl.err &&
  cat client.crt client.key > client-identity.pem && chmod 600 client-identity.pem ) || { echo "FAIL the client certificate"; exit 1; }
cat > "$work/nginx-dot.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_stream_module.so;
worker_processes 1;
pid $work/nginx-dot.pid;
error_log $work/nginx-dot-error.log info;
daemon off;
events { worker_connections 64; }
stream {
  log_format mtls '\$remote_addr \$ssl_client_verify \$ssl_client_s_dn';
  access_log $work/nginx-dot-access.log mtls;
  server {
    listen 198.51.100.56:853 ssl;
    ssl_certificate $work/ca/dns.crt;
    ssl_certificate_key $work/ca/dns.key;
    ssl_client_certificate $work/ca/ca.crt;
    ssl_verify_client on;
    proxy_pass 198.51.100.53:853;
    proxy_ssl on;
  }
}
CONF
lab_spawn "$LAB_INTERNET" nginx -c "$work/nginx-dot.conf" -e "$work/nginx-dot-error.log"
lab_wait "ip netns exec $LAB_INTERNET ss -ltn | grep -q '198.51.100.56:853'" 10
check "a DoT server that asks for a client certificate, without one: no answer" bash -c "'$bin/netext' dns configure --tls --server 198.51.100.56 --server-name dns.lab.test --enable > /dev/null && ! ip netns exec $LAB_LAPTOP getent hosts www.lab.test"
check "with --client-identity (a PEM file, mode 600) the name resolves through it" bash -c "'$bin/netext' dns configure --tls --server 198.51.100.56 --server-name dns.lab.test --client-identity '$work/ca/client-identity.pem' --enable | grep -q 'client identity' && ip netns exec $LAB_LAPTOP getent hosts www.lab.test | grep -q '^198.51.100.80 '"
cp "$work/ca/client-identity.pem" "$work/ca/client-identity-open.pem" && chmod 644 "$work/ca/client-identity-open.pem"
check "an identity file others may read is refused, and netext dns status says why" bash -c "'$bin/netext' dns configure --tls --server 198.51.100.56 --server-name dns.lab.test --client-identity '$work/ca/client-identity-open.pem' --enable > /dev/null; '$bin/netext' dns status | grep -q 'group or others may read it'"
# The refused settings left the working ones in force; nginx writes a stream's line when it ends,
# so they are switched off (the next checks enable settings again).
netext dns disable > /dev/null
check "nginx verified the laptop's certificate (its access log: SUCCESS CN=laptop.lab.test)" lab_wait "grep -q 'SUCCESS CN=laptop.lab.test' '$work/nginx-dot-access.log'" 10

# Every server dead: SERVFAIL unless cleartext fallback is allowed.
: > "$work/plain-dns.log"
check "settings with only a dead server" netext dns configure --tls --server 198.51.100.54 --server-name dns.lab.test --enable
check "no server answers: the name does not resolve (fails closed)" bash -c "! ip netns exec $LAB_LAPTOP getent hosts www.example.test"
check "the laptop's own resolver was not asked" test ! -s "$work/plain-dns.log"
check "status counts the failures" bash -c "$bin/netext dns status --json | python3 -c 'import json,sys; c=json.load(sys.stdin)[\"counters\"]; sys.exit(0 if c[\"encryptedFailures\"] >= 1 else 1)'"
check "with --allow-cleartext-fallback" netext dns configure --tls --server 198.51.100.54 --server-name dns.lab.test --allow-cleartext-fallback --enable
check "the name resolves through the former resolver in the clear" resolves www.example.test 198.51.100.80

# On-demand rules (NEDNSSettingsManager.onDemandRules): in force only where the last matching
# rule said Connect. The laptop's uplink is a veth: Ethernet to the rules.
netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --enable > /dev/null
dns_name=$("$bin/netext" dns status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])')
echo '[{"action": "disconnect", "interfaceTypeMatch": "ethernet"}, {"action": "connect", "interfaceTypeMatch": "any"}]' > "$work/rules-out.json"
echo '[{"action": "disconnect", "interfaceTypeMatch": "wiFi"}, {"action": "connect", "interfaceTypeMatch": "ethernet"}]' > "$work/rules-in.json"
dns_state() { for _ in $(seq 80); do "$bin/netext" dns status | grep -q "^DNS settings: $1 " && return 0; sleep 0.1; done; return 1; }
check "on-demand rules saying Disconnect on Ethernet (netext on-demand NAME on --rules)" netext on-demand "$dns_name" on --rules "$work/rules-out.json"
check "…take the settings out of force within seconds (netext dns status: paused)" dns_state paused
check "…the resolver file is the laptop's own again" grep -qx "nameserver 198.51.100.99" "$resolv"
check "…and names resolve through the laptop's own resolver" resolves www.example.test 198.51.100.80
check "rules saying Connect on Ethernet put them back in force (running)" bash -c "'$bin/netext' on-demand '$dns_name' on --rules '$work/rules-in.json' > /dev/null && $(declare -f dns_state); bin='$bin' dns_state running"
check "…names resolve over TLS again" resolves mail.lab.test 198.51.100.81
check "a rule asking EvaluateConnection is refused, naming it" bash -c "echo '[{\"action\": \"evaluateConnection\", \"interfaceTypeMatch\": \"any\", \"connectionRules\": [{\"matchDomains\": [\"x.test\"], \"action\": \"connectIfNeeded\"}]}]' > '$work/rules-bad.json'; ! '$bin/netext' on-demand '$dns_name' on --rules '$work/rules-bad.json' 2> '$work/rules-bad.err' && grep -q 'onDemandRules\[0\]: EvaluateConnection is for VPNs' '$work/rules-bad.err'"
check "netext on-demand NAME off: the settings apply on every network" bash -c "'$bin/netext' on-demand '$dns_name' off > /dev/null && $(declare -f dns_state); bin='$bin' dns_state running"

# netextd killed with the guard on: the guard stays (nothing goes around it); the next netextd
# puts the settings back; a graceful stop removes both.
netext dns configure --tls --server 198.51.100.53 --server-name dns.lab.test --prohibit-other-dns --enable > /dev/null
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
crashed=$(direct_query udp 53)
check "after kill -9 of netextd the DNS guard still refuses direct DNS ($crashed)" test "${crashed%%:*}" = refused
e2e_start_netextd
check "the next netextd puts the settings back: names resolve over TLS" resolves mail.lab.test 198.51.100.81
check "and the guard is in force" ip netns exec "$LAB_LAPTOP" nft list table inet netextd_dns
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
check "a graceful stop of netextd restores the resolver file" grep -qx "nameserver 198.51.100.99" "$resolv"
check "and removes the guard" bash -c "! ip netns exec $LAB_LAPTOP nft list table inet netextd_dns 2>/dev/null"
e2e_start_netextd

check "netext dns disable" netext dns disable
check "the resolver file is restored" grep -qx "nameserver 198.51.100.99" "$resolv"
lab_wait "! ip netns exec $LAB_LAPTOP ss -lun | grep -q '127.0.0.153:53'" 3
check "the stub no longer listens" bash -c "! ip netns exec $LAB_LAPTOP ss -lun | grep -q '127.0.0.153:53'"
check "netext dns status: off" bash -c "$bin/netext dns status | grep -qx 'DNS settings: off'"

e2e_finish "$work/netextd.log" "$work/unbound.log" "$work/plain-dns.log"
