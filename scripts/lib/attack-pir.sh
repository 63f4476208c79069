#!/usr/bin/env bash
# Issue 26 item 7 at full size: a 10,000-URL database served by `netext-server pir` on
# loopback; a polite two-connection client timed alone and beside eight connections sending
# 64-query messages; then 400 key uploads under fresh identifiers and the polite client's next
# query. Prints pir_* key=value lines. Usage: scripts/lib/attack-pir.sh BIN_DIR WORK_DIR
set -euo pipefail
bin="$1"; work="$2"
mkdir -p "$work"
pir_pid=""; sampler=""
cleanup() { for p in $sampler $pir_pid; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for i in $(seq 1 10000); do echo "https://www.site$i.example/path$((i % 7))/"; done > "$work/urls.txt"
"$bin/netext-urlfilter-db" build --urls "$work/urls.txt" --false-positive-rate 0.001 --use-case com.example.attack --output "$work/db" > /dev/null
# PIR_SERVER_ARGS: more options for the server (e.g. "--key-store-megabytes 64").
# shellcheck disable=SC2086
"$bin/netext-server" pir --database "$work/db" --listen 127.0.0.1:0 ${PIR_SERVER_ARGS:-} 2> "$work/pir.log" &
pir_pid=$!
for _ in $(seq 1 100); do grep -q 'serving' "$work/pir.log" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*listen=127.0.0.1:\([0-9]*\).*/\1/p' "$work/pir.log" | head -1)
[ -n "$port" ] || { echo "pir_server_started=no"; cat "$work/pir.log" >&2; exit 1; }
"$bin/netext-urlfilter-db" query --server "http://127.0.0.1:$port" --use-case com.example.attack \
  --record-requests "$work/recorded" https://www.site3.example/path3/ > /dev/null
flood() { timeout 120 /usr/bin/python3 scripts/lib/pir-flood.py "$@" --server "127.0.0.1:$port" --recorded "$work/recorded"; }
( while kill -0 "$pir_pid" 2>/dev/null; do awk '/VmRSS/ { printf "%.0f\n", $2 / 1024 }' "/proc/$pir_pid/status"; sleep 0.2; done ) > "$work/rss" 2>/dev/null &
sampler=$!
flood fairness --polite 2 --flooders 8 --seconds 10 | sed 's/^/pir_/'
flood keys --count 400 | sed 's/^/pir_/'
echo "pir_server_peak_rss_mb=$(sort -n "$work/rss" | tail -1)"
metrics=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" || true)
echo "pir_evaluation_keys_held=$(echo "$metrics" | awk '$1 == "netext_pir_evaluation_keys" { print $2 }')"
echo "pir_evaluation_key_mb_held=$(echo "$metrics" | awk '$1 == "netext_pir_evaluation_key_bytes" { printf "%.0f", $2 / 1048576 }')"
