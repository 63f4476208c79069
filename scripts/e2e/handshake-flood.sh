#!/usr/bin/env bash
# Handshake floods against the tunnel server in a namespace lab (issue 26, item 8), with the real
# binaries: an established tunnel keeps carrying pings while the internet floods the server with
# initiations that carry a valid mac1 (cookies engaged), and with initiations carrying one reused
# valid cookie (the per-source limit engaged); a legitimate reconnect completes during the flood;
# random datagrams of every length leave a short, fixed list of drop reasons. Needs root.
#
# The flood comes from the "internet" namespace to the office's server address only.
# FLOOD_RATE (datagrams/s, default 10000; CI uses 5000), FLOOD_SECONDS (default 5), MAX_LOSS_PERCENT (default 1)
# and MAX_RECONNECT_MS (default 1000) size it; scripts/attack runs it at 50,000/s for 10 s.
# FLOOD_SECOND_LOOK=1 (CI) measures a flood phase whose ping loss is over the bound a second time
# and judges the second (both figures printed): on a machine running other test suites at once, a
# scheduling stall of half a second shows as loss that the server did not cause.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/handshake-flood.sh   One PASS/FAIL line per check, and
# key=value figures; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh flood
rate="${FLOOD_RATE:-10000}"; seconds="${FLOOD_SECONDS:-5}"
max_loss="${MAX_LOSS_PERCENT:-1}"; max_reconnect="${MAX_RECONNECT_MS:-1000}"
e2e_netextd_environment
lab_up || { echo "FAIL lab"; exit 1; }
e2e_keys
e2e_office_server_config
echo "nameserver 198.51.100.53" > "$work/resolv.conf"
e2e_start_server
e2e_start_netextd
echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable >/dev/null
check "VPN starts" netext start Office
check "ping through the tunnel before any flood" laptop ping -c 3 -i 0.2 -W 2 -q 10.20.0.5

floods=0
flood() { ip netns exec "$LAB_INTERNET" timeout $((seconds + 30)) /usr/bin/python3 scripts/lib/tunnel-flood.py "$@" --server 203.0.113.2:51900 --server-key "$server_public" --rate "$rate" --seconds "$seconds"; }
# flood_with_pings MODE: floods in MODE while the laptop pings through the tunnel every 10 ms
# (from a second after the flood starts until shortly before it ends); prints the flood's figures
# and MODE_ping_loss_percent / MODE_ping_rtt_ms, and leaves the loss in $loss.
flood_with_pings() {
  local mode="$1" flooder
  floods=$((floods + 1))
  flood "$mode" --name "$mode" > "$work/$mode.out" 2>&1 &
  flooder=$!
  sleep 1
  laptop ping -i 0.01 -c $(( (seconds - 2) * 100 )) -W 1 -q 10.20.0.5 > "$work/$mode.ping" 2>/dev/null
  wait "$flooder"; cat "$work/$mode.out"
  loss=$(sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p' "$work/$mode.ping")
  echo "${mode}_ping_loss_percent=${loss:-none}"
  echo "${mode}_ping_rtt_ms=$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' "$work/$mode.ping")"
}
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }
# flood_measured MODE: flood_with_pings, and a second look when allowed and the loss is over the bound.
flood_measured() {
  flood_with_pings "$1"
  if [ "${FLOOD_SECOND_LOOK:-0}" = 1 ] && ! below "$loss" "$max_loss"; then
    echo "${1}_ping_loss_percent_first_look=${loss:-none}"
    flood_with_pings "$1"
  fi
}
ms_now() { date +%s%3N; }

# 1. valid mac1, no cookie.
flood_measured mac1
check "valid-mac1 flood at ${rate}/s: the established tunnel loses under ${max_loss} % (${loss:-no answer} %)" below "$loss" "$max_loss"

# 2. a legitimate reconnect during a valid-mac1 flood: it gets a cookie, retries at once, connects.
netext stop Office > /dev/null
floods=$((floods + 1))
flood mac1 --name reconnect > "$work/reconnect.out" 2>&1 &
flooder=$!
sleep 1
started=$(ms_now)
netext start Office > /dev/null; status=$?
took=$(( $(ms_now) - started ))
wait "$flooder"
echo "reconnect_during_flood_ms=$took"
check "a reconnect during the flood succeeds" test "$status" -eq 0
check "a reconnect during the flood takes under ${max_reconnect} ms ($took ms)" test "$took" -lt "$max_reconnect"
lab_wait "ip netns exec '$LAB_LAPTOP' ping -c 1 -W 1 -q 10.20.0.5 > /dev/null" 10

# 3. one valid cookie reused: the per-source limit holds it to a trickle of handshakes.
flood_measured mac2
check "the mac2 flooder obtained a cookie" grep -q "mac2_cookie_obtained=yes" "$work/mac2.out"
check "valid-mac2 flood at ${rate}/s: the established tunnel loses under ${max_loss} % (${loss:-no answer} %)" below "$loss" "$max_loss"

# 4. random datagrams of every length.
flood random --name random > "$work/random.out" 2>&1
cat "$work/random.out"
check "still connected after the floods" bash -c "'$bin/netext' status Office | grep -q 'Office: connected'"
check "ping through the tunnel after the floods" laptop ping -c 3 -i 0.2 -W 2 -q 10.20.0.5

# The server's counters, logged when it stops.
kill -TERM "$SERVER_PID"
lab_wait "grep -q 'tunnel server stopped' '$work/server.log'" 10
counter() { grep "item=\"dropped: $1" "$work/server.log" | tail -1 | sed -n 's/.*value=\([0-9]*\).*/\1/p'; }
cookies=$(counter "initiation under load without cookie")
limited=$(counter "initiation under load: over the per-source rate limit")
reasons=$(grep -o 'item="dropped: [^"]*"' "$work/server.log" | sort -u | wc -l)
undecryptable=$(counter "initiation: decryption failed")
echo "cookie_replies=${cookies:-0}"
echo "rate_limited_initiations=${limited:-0}"
echo "diffie_hellman_on_flood_initiations=${undecryptable:-0}"
echo "distinct_drop_reasons=$reasons"
check "under load the server answered with cookies (${cookies:-0})" test "${cookies:-0}" -gt 0
check "the reused cookie was rate-limited (${limited:-0} initiations)" test "${limited:-0}" -gt 0
# Each flood initiation that reaches the handshake costs an X25519 operation and fails to decrypt:
# at most the ~200/s before cookies engage, once per flood, plus 20/s for the reused cookie.
budget=$(( floods * 400 + 2 * 25 * seconds ))
check "the floods bought little Diffie-Hellman (${undecryptable:-0} operations, budget $budget)" test "${undecryptable:-0}" -lt "$budget"
check "random datagrams of every length left a short list of drop reasons ($reasons)" test "$reasons" -le 20
check "no line of the server's log names a length or an index" bash -c "! grep -qE 'dropped: .*(length [0-9]|index [0-9]|counter [0-9])' '$work/server.log'"

e2e_finish "$work/server.log" "$work/netextd.log"
