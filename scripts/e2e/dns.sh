#!/usr/bin/env bash
# End-to-end checks of DNS match domains in a namespace lab: the tunnel server pushes DNS servers
# with match domains; netextd's DNS stub sends names within them through the tunnel to the
# office's DNS server and every other name to the laptop's own resolver; stopping restores the
# resolver file and closes the stub. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/dns.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh dns

lab_up || { echo "FAIL lab"; exit 1; }
# The laptop's own resolver is the internet's (198.51.100.53); the office's is 10.20.0.53.
# ip netns exec shows /etc/netns/NAME/resolv.conf as the namespace's /etc/resolv.conf.
mkdir -p "/etc/netns/$LAB_LAPTOP"
resolv="/etc/netns/$LAB_LAPTOP/resolv.conf"
echo "nameserver 198.51.100.53" > "$resolv"
e2e_netextd_environment "$resolv"
lab_in "$LAB_OFFICE" ip addr add 10.20.0.53/32 dev lo
lab_in "$LAB_INTERNET" ip addr add 198.51.100.53/32 dev lo
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/dns-responder.py 10.20.0.53 office.test 10.20.0.5 "$work/office-dns.log"
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.53 example.test 198.51.100.80 "$work/public-dns.log"

e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "routes": ["10.20.0.0/16"],
 "peers": [{"name": "laptop", "publicKey": "$client_public"}],
 "dnsServers": ["10.20.0.53"], "searchDomains": ["office.test"], "matchDomains": ["office.test"]}
JSON
umask 022
e2e_start_server
e2e_start_netextd

check "before the VPN: office names do not resolve" bash -c "! ip netns exec $LAB_LAPTOP getent hosts intranet.office.test"
echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
check "VPN starts" netext start Office
: > "$work/public-dns.log"
check "the resolver file points at netextd's stub" grep -qx "nameserver 127.0.0.153" "$resolv"
check "with the tunnel's search domain" grep -qx "search office.test" "$resolv"
check "an office name resolves to the office's answer" bash -c "ip netns exec $LAB_LAPTOP getent hosts intranet.office.test | grep -q '^10.20.0.5 '"
check "the office's DNS server saw it from the tunnel address" grep -q "^intranet.office.test 1 from 10.99.0.2$" "$work/office-dns.log"
check "a short name completes with the search domain" bash -c "ip netns exec $LAB_LAPTOP getent hosts wiki | grep -q '^10.20.0.5 '"
check "another name resolves through the laptop's own resolver" bash -c "ip netns exec $LAB_LAPTOP getent hosts www.example.test | grep -q '^198.51.100.80 '"
check "the public resolver saw it" grep -q "^www.example.test 1 from 198.51.100.2$" "$work/public-dns.log"
# (glibc may also try www.example.test.office.test with the search domain: that one is the office's.)
check "the office's DNS server never saw names outside its match domain" bash -c "! grep -q '^www.example.test ' '$work/office-dns.log'"
check "the public resolver never saw the office's names while the VPN was up" bash -c "! grep -q 'office.test ' '$work/public-dns.log'"
check "a truncated answer is retried over TCP through the stub and resolves" bash -c "ip netns exec $LAB_LAPTOP getent hosts big.office.test | grep -q '^10.20.0.5 '"
check "the office's DNS server got the TCP retry from the tunnel address" grep -q "^big.office.test 1 from 10.99.0.2 tcp$" "$work/office-dns.log"
check "the stub listens on loopback only (UDP and TCP)" bash -c "ip netns exec $LAB_LAPTOP ss -lun | grep -q '127.0.0.153:53' && ip netns exec $LAB_LAPTOP ss -ltn | grep -q '127.0.0.153:53' && ! ip netns exec $LAB_LAPTOP ss -lun | grep -q '0.0.0.0:53'"
check "a malformed query gets no answer and the stub keeps working" bash -c "ip netns exec $LAB_LAPTOP python3 -c \"
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1); s.sendto(b'\\\\x12\\\\x34\\\\x01\\\\x00\\\\x00\\\\x01\\\\x00\\\\x00\\\\x00\\\\x00\\\\x00\\\\x00\\\\x3f', ('127.0.0.153', 53))
try: s.recv(512); raise SystemExit(1)
except socket.timeout: pass
\" && ip netns exec $LAB_LAPTOP getent hosts intranet.office.test > /dev/null"
check "VPN stops" netext stop Office
check "the resolver file is restored" grep -qx "nameserver 198.51.100.53" "$resolv"
lab_wait "! ip netns exec $LAB_LAPTOP ss -ltn | grep -q '127.0.0.153:53'" 3
check "the stub no longer listens" bash -c "! ip netns exec $LAB_LAPTOP ss -lun | grep -q '127.0.0.153:53' && ! ip netns exec $LAB_LAPTOP ss -ltn | grep -q '127.0.0.153:53'"

e2e_finish "$work/netextd.log" "$work/server.log" "$work/office-dns.log" "$work/public-dns.log"
