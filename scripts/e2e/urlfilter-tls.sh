#!/usr/bin/env bash
# The URL filter's whole path over TLS (issue 19, item 4), every part real and in its own
# namespace (scripts/lib/urlfilter-lab.sh with UF_TLS=1): lab host names under a lab CA, the
# prefilter fetched over HTTPS, tokens and PIR queries through the Oblivious HTTP relay, the
# relay → gateway hop over HTTP/2, the gateway → PIR server and issuer hops over TLS. Captures on
# every hop show TLS records only: no HTTP in the clear anywhere; the privacy checks of the
# plain lab still hold.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/urlfilter-tls.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh urlfilter-tls
UF_TLS=1
source scripts/lib/urlfilter-lab.sh

python3 - "$work/blocklist.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(2000):
        f.write(f"https://blocked{i}.example/\n")
    f.write("casino.example\n")
PY
# Captures on every hop, from before the first connection (pooled connections are checked
# from their first byte): the laptop's link (to the relay and the CDN), the relay's link to the
# provider (relay → gateway), and the provider's loopback (gateway → PIR server and issuer).
start_captures() {
  lab_capture_start laptop_dump "$LAB_LAPTOP" eth0 "$work/laptop.pcap" -s 0 tcp &&
  lab_capture_start provider_dump "$LAB_OFFICE" eth0 "$work/provider.pcap" -s 0 tcp &&
  lab_capture_start loopback_dump "$LAB_OFFICE" lo "$work/loopback.pcap" -s 0 'tcp port 8080 or tcp port 8081'
}
UF_ON_LAB_UP=start_captures
check "the lab comes up over TLS: prefilter fetched from https://cdn.lab.test, the URL filter running" urlfilter_lab_up "$work/blocklist.txt"

check "listed URLs are denied and others allowed, through relay, gateway and PIR over TLS" urlfilter_verdicts "deny deny allow allow" \
  https://blocked17.example/ https://www.casino.example/table https://fine.example/ https://blocked17.example.org/
private_lookups() {
  netext urlfilter status --json > "$work/status.json" && python3 - "$work/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["counters"]
assert s["state"] == "running" and c["privateLookups"] >= 2 and c["denied"] >= 2 and s["tokensFetched"] >= 1 and s["prefilterBits"] > 0, s
PY
}
check "the verdicts came from private lookups with tokens and the fetched prefilter" private_lookups
# The gateway answers HTTP/2 on its TLS port, as Apple's relay requires (curl from the relay's side).
h2_gateway() {
  local version
  version="$(ip netns exec "$LAB_INTERNET" curl -s --http2 --cacert "$work/ca/ca.crt" -o /dev/null -w '%{http_version}' https://gateway.lab.test:8082/ohttp-keys)"
  [ "$version" = 2 ] || { echo "  curl negotiated HTTP/$version"; return 1; }
}
check "the gateway serves HTTP/2 over TLS to the relay's side (ALPN h2)" h2_gateway
# The lab's service URLs are host names alone, as Apple requires of a deployment since iOS 26.4;
# a path instead of a subdomain is refused unless the configuration is a development one, and the
# configuration in force is left as it was.
path_refused() {
  local out
  if out="$(netext urlfilter configure --app "$UF_APP" --pir-server https://lab.test/pir --issuer "https://$UF_ISSUER_NAME" \
      --token-stdin --control-provider "$UF_CONTROL" --relay "$UF_RELAY_URL" --enable <<< "$UF_CREDENTIAL" 2>&1)"; then
    echo "  accepted: $out"; return 1
  fi
  echo "$out" | grep -q "pirServerURL: 'https://lab.test/pir' has the path '/pir'; since iOS and macOS 26.4" || { echo "  said: $out"; return 1; }
  netext urlfilter status | grep -q "PIR server: https://$UF_PIR_NAME," || { echo "  the configuration in force changed"; return 1; }
}
check "a service URL with a path instead of a subdomain is refused, naming the fault, and nothing changes" path_refused

lab_capture_stop "$laptop_dump" "$work/laptop.pcap"
lab_capture_stop "$provider_dump" "$work/provider.pcap"
lab_capture_stop "$loopback_dump" "$work/loopback.pcap"

# What each capture's TCP payloads are: TLS records (content types 20–23, version 3.x, RFC 8446
# §5.1) from the first byte of each direction of each connection, or anything else.
tls_only() {
  python3 scripts/e2e/pcap-tls-only.py "$1" "$2" || return 1
  ! grep -aEq 'HTTP/1\.[01]|PRI \* HTTP/2|POST /|GET /|message/ohttp|private-token' "$1" || { echo "  cleartext HTTP in $1"; return 1; }
}
check "the laptop's link carries TLS only (relay and prefilter CDN), at least 2 connections" tls_only "$work/laptop.pcap" 2
check "the relay → gateway hop carries TLS only" tls_only "$work/provider.pcap" 1
check "the gateway → PIR server and issuer hops carry TLS only" tls_only "$work/loopback.pcap" 1
offers_h2() { python3 scripts/e2e/pcap-tls-only.py "$work/provider.pcap" 1 --alpn h2; }
check "the relay offers h2 in its ClientHello to the gateway" offers_h2
check "the laptop's link names no URL, target or credential (only the relay's and CDN's names in SNI)" \
  bash -c "[ -s '$work/laptop.pcap' ] && ! grep -aEq 'blocked17|casino|fine\.example|pir\.lab\.test|issuer\.lab\.test|gateway\.lab\.test|url\.filtering|Bearer|PrivateToken' '$work/laptop.pcap'"
no_laptop_at_provider() {
  local total laptop
  total="$(tcpdump -nr "$work/provider.pcap" 2>/dev/null | wc -l)"
  laptop="$(tcpdump -nr "$work/provider.pcap" 'host 198.51.100.2' 2>/dev/null | wc -l)"
  [ "$total" -gt 0 ] && [ "$laptop" -eq 0 ] || { echo "  provider-side packets: $total, with the laptop's address: $laptop"; return 1; }
}
check "the provider side never sees the laptop's address" no_laptop_at_provider
check "the PIR server's, gateway's and relay's logs name no URL or client address" \
  bash -c "[ -s '$work/pir.log' ] && [ -s '$work/gateway.log' ] && [ -s '$work/relay.log' ] && ! grep -Eqi 'blocked[0-9]|casino|fine\.example|198\.51\.100\.2' '$work/pir.log' '$work/gateway.log' '$work/relay.log'"
check "every role says it serves TLS" bash -c "grep -q 'tls=on' '$work/pir.log' && grep -q 'tls=on' '$work/issuer.log' && grep -q 'tls=on' '$work/gateway.log' && grep -q 'tls=on' '$work/relay.log'"
e2e_finish "$work/netextd.log" "$work/pir.log" "$work/gateway.log" "$work/relay.log" "$work/issuer.log" "$work/check.err"
