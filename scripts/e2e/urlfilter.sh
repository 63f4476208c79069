#!/usr/bin/env bash
# End-to-end checks of the URL filter with every part real and in its own namespace
# (scripts/lib/urlfilter-lab.sh): netextd and the reference control provider on the laptop, the
# Oblivious HTTP relay, and on the provider side the gateway, the PIR server (which demands
# Privacy Pass tokens) and the issuer. Verdicts, Bloom false positives resolved through PIR,
# captures proving the privacy split, fail-open and fail-closed with the PIR server down,
# token exhaustion and refill, and a prefilter refresh at the fetch interval.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/urlfilter.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh urlfilter
source scripts/lib/urlfilter-lab.sh

python3 - "$work/blocklist.txt" "$work/fp.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        f.write(f"https://blocked{i}.example/\n")
    f.write("news.example/politics/\ncasino.example\n")
PY
check "the lab comes up and the URL filter runs with the fetched prefilter" urlfilter_lab_up "$work/blocklist.txt"
netext urlfilter status >> "$work/status.log" 2>&1

# Captures on the relay's laptop-side link and on the provider's link, for the privacy checks.
lab_capture_start relay_dump "$LAB_INTERNET" eth0 "$work/relay-side.pcap" -s 0 'tcp port 8083'
lab_capture_start provider_dump "$LAB_OFFICE" eth0 "$work/provider-side.pcap" -s 0

check "listed URLs are denied (paths, parent domains), others allowed" urlfilter_verdicts "deny deny deny allow allow" \
  https://blocked17.example/ https://www.casino.example/table https://news.example/politics/today.html https://news.example/sport/ https://fine.example/

# NetExtHTTP asks the same filter before connecting (seed 004: the system's HTTP API is
# filtered): a listed URL fails with exit 1 and nothing is connected; an unlisted one goes on to
# connect (here to a closed port on the host's loopback, so it fails there, exit 5).
# http_load EXPECTED_STATUS EXPECTED_TEXT URL
http_load() {
  local out status
  out="$("$bin/netext" http get --resolve "$(echo "$3" | sed 's|https://\([^/:]*\).*|\1|'):127.0.0.1" --max-time 3 "$3" 2>&1)"; status=$?
  [ "$status" = "$1" ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "$2" || { echo "  said: $out"; return 1; }
}
check "netext http: a listed URL is denied by the URL filter before any connection" \
  http_load 1 "was not loaded: the URL filter denies it" https://blocked17.example:9/
check "netext http: an unlisted URL is let through to connect" http_load 5 "Cannot connect to https://fine.example:9" https://fine.example:9/

# A URL that passes the prefilter without being listed: PIR must say allow.
fp="$(python3 - "$work/db" <<'PY'
import json, struct, sys
d = sys.argv[1]
meta = json.load(open(f"{d}/prefilter.json")); bits = open(f"{d}/prefilter.bin", "rb").read()
m, k, seed = meta["bitCount"], meta["hashCount"], meta["murmurSeed"]
def fnv(b):
    h = 0x811c9dc5
    for c in b: h = ((h ^ c) * 0x01000193) & 0xffffffff
    return h
def murmur(b, seed):
    c1, c2, h = 0xcc9e2d51, 0x1b873593, seed
    n = len(b) // 4
    for i in range(n):
        x = struct.unpack_from("<I", b, 4 * i)[0]
        x = (x * c1) & 0xffffffff; x = ((x << 15) | (x >> 17)) & 0xffffffff; x = (x * c2) & 0xffffffff
        h ^= x; h = ((h << 13) | (h >> 19)) & 0xffffffff; h = (h * 5 + 0xe6546b64) & 0xffffffff
    t = b[4 * n:]; x = 0
    if len(t) >= 3: x ^= t[2] << 16
    if len(t) >= 2: x ^= t[1] << 8
    if len(t) >= 1:
        x ^= t[0]; x = (x * c1) & 0xffffffff; x = ((x << 15) | (x >> 17)) & 0xffffffff; x = (x * c2) & 0xffffffff; h ^= x
    h ^= len(b); h ^= h >> 16; h = (h * 0x85ebca6b) & 0xffffffff; h ^= h >> 13; h = (h * 0xc2b2ae35) & 0xffffffff; h ^= h >> 16
    return h
def contains(key):
    b = key.encode(); h1, h2 = fnv(b), murmur(b, seed)
    return all(bits[(((h1 + i * h2) & 0xffffffff) % m) // 8] >> ((((h1 + i * h2) & 0xffffffff) % m) % 8) & 1 for i in range(k))
for i in range(500000):
    host = f"fp{i}.example"
    if contains(host) or contains(host + "/"):
        print(f"https://{host}/"); break
PY
)"
fp_resolves() { [ -n "$fp" ] && urlfilter_verdicts "allow" "$fp"; }
check "a Bloom false positive ($fp) resolves to allow through PIR" fp_resolves
counted() { netext urlfilter status --json > "$work/status.json" && python3 - "$work/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["counters"]
assert s["state"] == "running" and c["privateLookups"] >= 4 and c["prefilterNegative"] >= 1 and c["denied"] >= 3, s
assert s["tokensFetched"] >= 1 and s["prefilterBits"] > 0, s
PY
}
check "status counts prefilter negatives, private lookups, denials and tokens" counted

lab_capture_stop "$relay_dump" "$work/relay-side.pcap"
lab_capture_stop "$provider_dump" "$work/provider-side.pcap"
no_plaintext_at_relay() {
  [ -s "$work/relay-side.pcap" ] || { echo "  empty relay capture"; return 1; }
  ! grep -aEq 'blocked17|casino|news\.example|fine\.example|url\.filtering|pir\.netext|issuer\.netext|PrivateToken|Bearer|User-Identifier' "$work/relay-side.pcap"
}
check "the relay carries no URL, use case, server name, token or credential in the clear" no_plaintext_at_relay
seen_at_relay() { [ "$(tcpdump -nr "$work/relay-side.pcap" 'src host 198.51.100.2' 2>/dev/null | wc -l)" -gt 0 ]; }
check "the relay does see the laptop (it is the one that may)" seen_at_relay
no_laptop_at_provider() {
  local total laptop
  total="$(tcpdump -nr "$work/provider-side.pcap" 2>/dev/null | wc -l)"
  laptop="$(tcpdump -nr "$work/provider-side.pcap" 'host 198.51.100.2' 2>/dev/null | wc -l)"
  [ "$total" -gt 0 ] && [ "$laptop" -eq 0 ] || { echo "  provider-side packets: $total, with the laptop's address: $laptop"; return 1; }
}
check "the provider side never sees the laptop's address" no_laptop_at_provider
check "no request reaching the gateway carries Forwarded or X-Forwarded-For" bash -c "! grep -aiq 'forwarded' '$work/provider-side.pcap'"
check "the PIR server's log names no URL" bash -c "! grep -Eqi 'blocked[0-9]|casino|news|fine\.example|fp[0-9]' '$work/pir.log'"
check "the gateway and relay logs name no URL or client address" bash -c "! grep -Eqi 'blocked[0-9]|casino|198\.51\.100\.2' '$work/gateway.log' '$work/relay.log'"

# Tokens run out and are refilled in batches of 16 (each PIR request spends one).
refill() {
  local before after
  before="$(netext urlfilter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokensFetched"])')"
  urlfilter_check $(seq -f 'https://blocked%g.example/' 100 120) > /dev/null 2>>"$work/check.err"
  after="$(netext urlfilter status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["tokensFetched"], s["tokensAvailable"])')"
  set -- $after
  [ "$1" -ge $((before + 16)) ] && [ $(( $1 % 16 )) -eq 0 ] || { echo "  tokens fetched before $before, after $1 (available $2)"; return 1; }
}
check "tokens run out and are refilled in batches" refill
denied_21() { [ "$(urlfilter_check $(seq -f 'https://blocked%g.example/' 100 120) 2>/dev/null | grep -c ' deny$')" -eq 21 ]; }
check "the refilled tokens serve further private lookups" denied_21

# The PIR server goes down: undecidable URLs follow the failure policy.
urlfilter_stop_pir
check "with the PIR server down, a prefilter positive is unknown and allowed (fail open)" bash -c \
  "'$bin/netext' urlfilter check --app '$UF_APP' https://blocked2500.example/ | grep -qx 'https://blocked2500.example/ unknown (allow by policy)'"
check "prefilter negatives still answer at once" urlfilter_verdicts "allow" https://other.example/
fail_closed() {
  netext urlfilter configure --app "$UF_APP" --pir-server "$UF_SCHEME://$UF_PIR_NAME" --issuer "$UF_SCHEME://$UF_ISSUER_NAME" --token-stdin <<< "$UF_CREDENTIAL" \
    --control-provider "$UF_CONTROL" --relay "$UF_RELAY_URL" --fail-closed --enable $UF_DEVELOPMENT > /dev/null &&
  lab_wait "'$bin/netext' urlfilter status | grep -q 'running.*fails closed'" 30 || { echo "  not running: $("$bin/netext" urlfilter status | head -1)"; return 1; }
  local got
  got="$("$bin/netext" urlfilter check --app "$UF_APP" https://blocked2501.example/)"
  [ "$got" = 'https://blocked2501.example/ unknown (deny by policy)' ] || { echo "  got: $got"; return 1; }
}
check "after reconfiguring to fail closed, the same situation denies" fail_closed
urlfilter_start_pir
check "with the PIR server back, verdicts are decided again" urlfilter_verdicts "deny" https://blocked2502.example/

# A new block list: the PIR server reloads, the CDN publishes the new prefilter, netextd fetches it.
refresh() {
  local fetches
  fetches="$(netext urlfilter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["prefilterFetches"])')"
  { cat "$work/blocklist.txt"; echo "https://newly-listed.example/"; } > "$work/blocklist2.txt"
  urlfilter_build "$work/blocklist2.txt" && kill -HUP "$UF_PIR_PID" && lab_wait "grep -q reloaded '$work/pir.log'" 60 &&
  lab_wait "[ \$('$bin/netext' urlfilter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"prefilterFetches\"])') -ge $((fetches + 2)) ]" 30 &&
  urlfilter_verdicts "deny allow" https://newly-listed.example/page https://not-listed.example/
}
check "a rebuilt list is picked up: the prefilter is fetched again at the interval and the new URL is denied" refresh

check "disabling the URL filter turns it off" bash -c "'$bin/netext' urlfilter disable --app '$UF_APP' > /dev/null && '$bin/netext' urlfilter status | grep -qx 'URL filter: off'"
check "with no URL filter, everything is allowed" urlfilter_verdicts "allow" https://blocked17.example/
check "…and netext http loads a listed URL again (it goes on to connect)" \
  http_load 5 "Cannot connect to https://blocked17.example:9" https://blocked17.example:9/
e2e_finish "$work/netextd.log" "$work/pir.log" "$work/gateway.log" "$work/relay.log" "$work/issuer.log" "$work/check.err" "$work/status.log"
