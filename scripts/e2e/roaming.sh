#!/usr/bin/env bash
# End-to-end check of roaming in a namespace lab: a long download runs through the tunnel while
# the laptop's default route moves to its second uplink and the first goes down; the tunnel
# follows (new source address, the server follows the authenticated client) and the TCP
# connection inside it survives. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/roaming.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh roam

lab_up || { echo "FAIL lab"; exit 1; }
lab_add_uplink2 || { echo "FAIL lab (second uplink)"; exit 1; }
mkdir -p "$work/www"
head -c 8000000 /dev/urandom > "$work/www/big.bin"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8080 --bind 10.20.0.5 --directory "$work/www" 2>/dev/null
e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "routes": ["10.20.0.0/16"],
 "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
e2e_netextd_environment "$work/resolv.conf"
e2e_start_server
e2e_start_netextd
lab_wait "ip netns exec $LAB_OFFICE curl -s -o /dev/null http://10.20.0.5:8080/" 10

echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
check "VPN starts on the first uplink" netext start Office
check "the server sees the client at its first address" bash -c "grep -q 'endpoint=198.51.100.2' '$work/server.log'"

# An 8 MB download at 2 MB/s (about 4 s), and the move once 3 MB have arrived.
laptop curl -s -m 60 --limit-rate 2M -o "$work/big.copy" http://10.20.0.5:8080/big.bin &
transfer=$!
lab_wait "[ \$(stat -c %s '$work/big.copy' 2>/dev/null || echo 0) -ge 3000000 ]" 10
laptop sh -c 'ip route replace default via 100.80.0.1 dev eth1 && ip link set eth0 down'
wait $transfer; transfer_status=$?
check "the download that was running across the move completes (curl exit $transfer_status)" test "$transfer_status" -eq 0
check "and arrives intact" cmp -s "$work/www/big.bin" "$work/big.copy"
lab_wait "grep 'peer roamed' '$work/server.log' | grep -q 'to=100.80.0.2'" 5
check "the server followed the client to its second address" bash -c "grep 'peer roamed' '$work/server.log' | grep -q 'to=100.80.0.2'"
lab_wait "grep -q 'network changed: now reaching the server from 100.80.0.2' '$work/netextd.log'" 5
check "the provider noticed the network change" grep -q 'network changed: now reaching the server from 100.80.0.2' "$work/netextd.log"
check "the connection stayed up" bash -c "'$bin/netext' status Office | grep -q 'Office: connected'"
check "a new connection through the tunnel works on the second uplink" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 -o /dev/null http://10.20.0.5:8080/"
check "stop" netext stop Office

e2e_finish "$work/netextd.log" "$work/server.log"
