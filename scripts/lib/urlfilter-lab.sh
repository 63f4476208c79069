# The URL filter's lab (sourced after scripts/lib/e2e.sh or lab.sh, with $bin and $work set):
#
#   laptop (netextd, 198.51.100.2) ── relay (ohttp-relay :8083, prefilter CDN :8090; 198.51.100.1 / 203.0.113.1)
#                                       └── provider (ohttp-gateway 203.0.113.2:8082; pir 127.0.0.1:8080, issuer 127.0.0.1:8081)
#
# The relay namespace is also the router between the other two; the PIR server and the issuer
# listen on the provider's loopback only, so the gateway is the only way in. The laptop asks
# through the relay; the provider never sees the laptop's address.
# Usage: urlfilter_lab_up BLOCKLIST  (then `netext urlfilter check …` in $LAB_LAPTOP); lab_down.

LAB_INTERNET="$LAB_PREFIX-relay"
LAB_OFFICE="$LAB_PREFIX-provider"
UF_APP=org.netext.urlfilter
UF_CONTROL=org.netext.urlfilter.control
UF_USE_CASE=org.netext.urlfilter.url.filtering
UF_CREDENTIAL="lab-credential-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
UF_RELAY_URL=http://198.51.100.1:8083/relay
UF_PREFILTER_INTERVAL="${UF_PREFILTER_INTERVAL:-5}"
[ -n "${UF_CONFIGURE_FLAGS+x}" ] || UF_CONFIGURE_FLAGS=()

# Builds the databases from $1 into $work/db and publishes the prefilter on the CDN directory.
urlfilter_build() {
  "$bin/netext-urlfilter-db" build --urls "$1" --false-positive-rate 0.001 --use-case "$UF_USE_CASE" --output "$work/db" > "$work/build.out" 2>&1 || return 1
  mkdir -p "$work/cdn" && cp "$work/db/prefilter.json" "$work/cdn/prefilter.json.new" && cp "$work/db/prefilter.bin" "$work/cdn/prefilter.bin.new" &&
    mv "$work/cdn/prefilter.json.new" "$work/cdn/prefilter.json" && mv "$work/cdn/prefilter.bin.new" "$work/cdn/prefilter.bin"
}

# Starts the PIR server in the provider namespace (again, after urlfilter_stop_pir). Sets UF_PIR_PID.
urlfilter_start_pir() {
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" pir --database "$work/db" --listen 127.0.0.1:8080 --threads 2 \
    --privacy-pass-issuer http://127.0.0.1:8081 --issuer-name issuer.netext --origin-name pir.netext 2>> "$work/pir.log"
  UF_PIR_PID=$!
  lab_wait "grep -q 'privacy_pass=required' '$work/pir.log' && ip netns exec '$LAB_OFFICE' curl -s -o /dev/null http://127.0.0.1:8080/metrics" 30
}
urlfilter_stop_pir() { kill "$UF_PIR_PID" 2>/dev/null; wait "$UF_PIR_PID" 2>/dev/null; }

urlfilter_lab_up() {
  local blocklist="$1"
  lab_up || return 1
  urlfilter_build "$blocklist" || { echo "the block list did not build:"; tail -5 "$work/build.out"; return 1; }
  echo "$UF_CREDENTIAL" > "$work/credentials"
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" issuer --listen 127.0.0.1:8081 --keys "$work/issuer-keys" --credentials "$work/credentials" 2>> "$work/issuer.log"
  lab_wait "grep -q 'serving' '$work/issuer.log'" 20 || { echo "the issuer did not start"; return 1; }
  urlfilter_start_pir || { echo "the PIR server did not start"; tail -5 "$work/pir.log"; return 1; }
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" ohttp-gateway --listen 203.0.113.2:8082 --keys "$work/gateway-keys" \
    --target pir.netext=http://127.0.0.1:8080 --target issuer.netext=http://127.0.0.1:8081 2>> "$work/gateway.log"
  lab_spawn "$LAB_INTERNET" "$bin/netext-server" ohttp-relay --listen 198.51.100.1:8083 --gateway http://203.0.113.2:8082/gateway 2>> "$work/relay.log"
  lab_spawn "$LAB_INTERNET" python3 -m http.server --bind 198.51.100.1 --directory "$work/cdn" 8090 2>> "$work/cdn.log"
  lab_wait "grep -q serving '$work/gateway.log' && grep -q serving '$work/relay.log' && ip netns exec '$LAB_LAPTOP' curl -sf -o /dev/null http://198.51.100.1:8090/prefilter.json" 20 ||
    { echo "the gateway, relay or prefilter server did not start"; return 1; }
  export NETEXT_STATE_DIR="$work/state" NETEXT_SOCKET="$work/netextd.sock" NETEXT_PROVIDERS_DIR="$work/providers"
  export NETEXT_RESOLV_CONF="$work/resolv.conf" NETEXT_PREFILTER_INTERVAL="$UF_PREFILTER_INTERVAL"
  mkdir -p "$NETEXT_PROVIDERS_DIR"
  printf '{"bundleIdentifier": "%s", "extensionPoint": "url-filter-control", "executable": "%s", "arguments": ["url-prefilter", "--from", "http://198.51.100.1:8090/"], "user": "nobody"}\n' \
    "$UF_CONTROL" "$bin/netext-filter-provider" > "$NETEXT_PROVIDERS_DIR/urlfilter.json"
  chmod 644 "$NETEXT_PROVIDERS_DIR/urlfilter.json"
  lab_spawn "$LAB_LAPTOP" "$bin/netextd" 2>> "$work/netextd.log"; NETEXTD_PID=$!
  lab_wait "'$bin/netext' status" 15 || { echo "netextd did not start"; return 1; }
  "$bin/netext" urlfilter configure --app "$UF_APP" --name "Lab URL filter" --pir-server http://pir.netext --issuer http://issuer.netext \
    --token-stdin <<< "$UF_CREDENTIAL" --control-provider "$UF_CONTROL" --relay "$UF_RELAY_URL" --enable "${UF_CONFIGURE_FLAGS[@]}" > "$work/configure.out" 2>&1 ||
    { cat "$work/configure.out"; return 1; }
  lab_wait "'$bin/netext' urlfilter status | grep -q 'URL filter: running'" 30 || { echo "the URL filter did not start"; tail -5 "$work/netextd.log"; return 1; }
}

# `netext urlfilter check` as the lab's app; prints 'URL verdict…' lines.
urlfilter_check() { "$bin/netext" urlfilter check --app "$UF_APP" "$@"; }
