#!/usr/bin/env bash
# Issue 26 item 6 at full size, on loopback: a Privacy-Pass-protected `netext-server pir` (with
# its issuer) and an Oblivious HTTP relay, each under 100 request bodies at once sent without a
# token (16 MiB to the PIR server's /key, 4 MiB to the relay), 500 slowloris connections from
# two sources (each under the per-source cap, so the deadline is what closes them) and 5 idle ones, and 1,100 held connections (from one source, then from eight) followed by one
# ordinary request from a source among them and one from another. Prints http_* key=value
# lines with each server's peak RSS. Usage: scripts/lib/attack-http.sh BIN_DIR WORK_DIR
set -euo pipefail
bin="$1"; work="$2"
mkdir -p "$work"
pids=(); sampler=""
cleanup() { for p in $sampler "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
# 1,100 held connections need more descriptors than the default 1,024 (the servers raise their own).
ulimit -n 8192
listening_port() {  # LOG: waits for the server's "serving" line and prints its port
  for _ in $(seq 1 100); do grep -q 'serving' "$1" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/.*listen=127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1
}
sample_rss() {  # PID FILE: the process's RSS in MB every 0.2 s while it runs
  ( while kill -0 "$1" 2>/dev/null; do awk '/VmRSS/ { printf "%.0f\n", $2 / 1024 }' "/proc/$1/status"; sleep 0.2; done ) > "$2" 2>/dev/null &
  sampler="$sampler $!"
}
flood() { timeout 200 /usr/bin/python3 scripts/lib/http-flood.py "$@"; }

# The issuer the PIR server trusts, and the PIR server.
printf 'attack-credential-0123456789\n' > "$work/credentials"
"$bin/netext-server" issuer --listen 127.0.0.1:0 --keys "$work/issuer-keys" --credentials "$work/credentials" 2> "$work/issuer.log" &
pids+=($!)
issuer_port=$(listening_port "$work/issuer.log")
[ -n "$issuer_port" ] || { echo "http_issuer_started=no"; cat "$work/issuer.log" >&2; exit 1; }
for i in $(seq 1 100); do echo "https://www.site$i.example/"; done > "$work/urls.txt"
"$bin/netext-urlfilter-db" build --urls "$work/urls.txt" --false-positive-rate 0.01 --use-case com.example.attack --output "$work/db" > /dev/null
"$bin/netext-server" pir --database "$work/db" --listen 127.0.0.1:0 --privacy-pass-issuer "http://127.0.0.1:$issuer_port" 2> "$work/pir.log" &
pir=$!; pids+=($pir)
pir_port=$(listening_port "$work/pir.log")
[ -n "$pir_port" ] || { echo "http_pir_started=no"; cat "$work/pir.log" >&2; exit 1; }
# The relay forwards to a loopback port nothing listens on: the floods never get that far.
"$bin/netext-server" ohttp-relay --listen 127.0.0.1:0 --gateway http://127.0.0.1:9/gateway 2> "$work/relay.log" &
relay=$!; pids+=($relay)
relay_port=$(listening_port "$work/relay.log")
[ -n "$relay_port" ] || { echo "http_relay_started=no"; cat "$work/relay.log" >&2; exit 1; }
sample_rss "$pir" "$work/pir.rss"
sample_rss "$relay" "$work/relay.rss"
rss_now() { awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

echo "http_pir_idle_rss_mb=$(rss_now "$pir")"
flood bodies --server "127.0.0.1:$pir_port" --count 100 --megabytes 16 --path /key --seconds 30 | sed 's/^/http_pir_bodies_/'
sleep 1
echo "http_pir_rss_after_bodies_mb=$(rss_now "$pir")"
flood bodies --server "127.0.0.1:$relay_port" --count 100 --megabytes 4 --path /relay --seconds 30 | sed 's/^/http_relay_wrong_type_bodies_/'
sleep 1
echo "http_relay_rss_after_wrong_type_bodies_mb=$(rss_now "$relay")"
flood bodies --server "127.0.0.1:$relay_port" --count 100 --megabytes 4 --path /relay --content-type message/ohttp-req --seconds 30 | sed 's/^/http_relay_bodies_/'
sleep 1
echo "http_relay_rss_after_bodies_mb=$(rss_now "$relay")"
flood slow --server "127.0.0.1:$pir_port" --count 500 --sources 2 --idle 5 --seconds 45 --interval 5 | sed 's/^/http_pir_/'
flood hold --server "127.0.0.1:$pir_port" --count 1100 --seconds 10 | sed 's/^/http_pir_hold_/'
sleep 1
flood hold --server "127.0.0.1:$pir_port" --count 1100 --sources 8 --seconds 10 | sed 's/^/http_pir_hold_8_sources_/'
echo "http_pir_peak_rss_mb=$(sort -n "$work/pir.rss" | tail -1)"
echo "http_relay_peak_rss_mb=$(sort -n "$work/relay.rss" | tail -1)"
