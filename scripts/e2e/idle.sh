#!/usr/bin/env bash
# End-to-end check of the tunnel's liveness in a namespace lab (issue 18, item 1): a connected
# tunnel with IPv4 and IPv6 left idle for IDLE_SECONDS (default 120) shows no status change and
# almost nothing on the underlay (the kernel's link-scoped IPv6 packets stay out of it), then
# carries traffic at once; a server that goes silent (SIGSTOP) while the laptop sends is noticed
# within keepaliveTimeout + rekeyTimeout (15 s, docs/tunnel-protocol.md), and the tunnel
# recovers when it answers again. Needs root.
# Usage: NETEXT_BIN_DIR=DIR [IDLE_SECONDS=N] scripts/e2e/idle.sh   Prints one line per check and key=value figures.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh idle
idle_seconds="${IDLE_SECONDS:-120}"

lab_up || { echo "FAIL lab"; exit 1; }
mkdir -p "$work/www"
echo "internal page" > "$work/www/index.html"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8080 --bind 10.20.0.5 --directory "$work/www" 2>/dev/null
e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "ipv6Pool": "fd99::/64",
 "routes": ["10.20.0.0/16", "fd20::/64"], "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
echo "nameserver 198.51.100.53" > "$work/resolv.conf"
e2e_netextd_environment "$work/resolv.conf"
e2e_start_server
e2e_start_netextd
lab_wait "office curl -s -o /dev/null http://10.20.0.5:8080/" 10

echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
check "VPN starts" netext start Office
check "a page loads through the tunnel" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://10.20.0.5:8080/ | grep -q 'internal page'"

# Idle: watch status changes and the underlay for the whole period, and on through the first
# 16 s of traffic after it (an idle tunnel used to reassert at its first packet).
sleep 2
lab_capture_start capture "$LAB_LAPTOP" eth0 "$work/idle.pcap" udp port 51900
timeout $((idle_seconds + 40)) "$bin/netext" status --watch --timeout $((idle_seconds + 20)) > "$work/watch.log" 2>&1 &
watcher=$!
sleep "$idle_seconds"
lab_capture_stop "$capture" "$work/idle.pcap"
datagrams=$(tcpdump -r "$work/idle.pcap" -n 2>/dev/null | wc -l)
echo "idle_seconds=$idle_seconds"
echo "idle_underlay_datagrams=$datagrams"
link_scoped=$(netext message Office status | sed -n 's/.*"linkScopedPacketsDropped":\([0-9]*\).*/\1/p')
echo "link_scoped_packets_not_carried=${link_scoped:-unknown}"
# At most: a passive keepalive each way after the last request, and one rekey (rekeyAfterTime is
# 120 s: initiation, response, the keepalive that confirms it).
check "idle: at most 6 datagrams on the underlay ($datagrams)" test "$datagrams" -le 6
check "idle: the server dropped nothing as spoofed (link-scoped packets stay out of the tunnel)" bash -c "! grep -q 'source address not assigned' '$work/server.log'"
began=$(date +%s%N)
check "after idling, a page loads at once" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 3 http://10.20.0.5:8080/ | grep -q 'internal page'"
echo "first_request_after_idle_ms=$((($(date +%s%N) - began) / 1000000))"
check "after idling, IPv6 inside the tunnel works" bash -c "ip netns exec $LAB_LAPTOP ping -6 -c 1 -W 3 fd20::5 > /dev/null"
laptop ping -c 16 -i 1 -W 1 10.20.0.5 > /dev/null 2>&1
wait "$watcher"
changes=$(grep -c -E 'reasserting|disconnect|connecting' "$work/watch.log")
echo "status_changes_idle_and_after=$changes"
check "no status change while idle for ${idle_seconds} s nor in the 16 s of traffic after (watch: $(tr '\n' ' ' < "$work/watch.log" | cut -c1-160))" test "$changes" -eq 0
check "still connected" bash -c "'$bin/netext' status Office | grep -q 'Office: connected'"
check "the provider never said the server was silent" bash -c "! grep -q 'no answer from the server' '$work/netextd.log'"

# A silent server while the laptop sends: reasserting within 15 s (plus a timer tick), then back.
kill -STOP "$SERVER_PID"
laptop ping -c 40 -i 0.5 -W 1 10.20.0.5 > /dev/null 2>&1 &
pinger=$!
began=$SECONDS
lab_wait "'$bin/netext' status Office | grep -q reasserting" 25
noticed=$((SECONDS - began))
echo "silent_server_noticed_s=$noticed"
check "a silent server is noticed after 15 s, not before, and within 17 s (${noticed} s)" bash -c "'$bin/netext' status Office | grep -q reasserting && test $noticed -ge 14 && test $noticed -le 17"
kill -CONT "$SERVER_PID"
lab_wait "'$bin/netext' status Office | grep -q 'Office: connected'" 20
check "the server answers again: connected" bash -c "'$bin/netext' status Office | grep -q 'Office: connected'"
check "and traffic flows" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 5 http://10.20.0.5:8080/ | grep -q 'internal page'"
kill "$pinger" 2>/dev/null; wait "$pinger" 2>/dev/null
netext stop Office > /dev/null
e2e_finish "$work/netextd.log" "$work/server.log" "$work/watch.log"
