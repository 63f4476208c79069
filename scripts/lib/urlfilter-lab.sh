# The URL filter's lab (sourced after scripts/lib/e2e.sh or lab.sh, with $bin and $work set):
#
#   laptop (netextd, 198.51.100.2) ── relay (ohttp-relay :8083, prefilter CDN :8090 or :443; 198.51.100.1 / 203.0.113.1)
#                                       └── provider (ohttp-gateway 203.0.113.2:8082; pir 127.0.0.1:8080, issuer 127.0.0.1:8081)
#
# The relay namespace is also the router between the other two; the PIR server and the issuer
# listen on the provider's loopback only, so the gateway is the only way in. The laptop asks
# through the relay; the provider never sees the laptop's address.
#
# With UF_TLS=1 every hop is TLS, by lab host name, under a lab CA (scripts/lib/lab-ca.sh):
# the laptop reaches relay.lab.test and cdn.lab.test (the prefilter, on port 443), the relay
# gateway.lab.test (HTTP/2), the gateway pir.lab.test and issuer.lab.test on the provider's
# loopback. Names come from each namespace's own /etc/hosts and the laptop trusts the lab CA
# through its own /etc/ssl (ip netns exec mounts /etc/netns/NAME/* over /etc), as a machine
# whose admin added the CA would; nothing of the host's is changed.
# Usage: urlfilter_lab_up BLOCKLIST  (then `netext urlfilter check …` in $LAB_LAPTOP); lab_down.

LAB_INTERNET="$LAB_PREFIX-relay"
LAB_OFFICE="$LAB_PREFIX-provider"
UF_APP=org.netext.urlfilter
UF_CONTROL=org.netext.urlfilter.control
UF_USE_CASE=org.netext.urlfilter.url.filtering
UF_CREDENTIAL="lab-credential-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
UF_TLS="${UF_TLS:-0}"
# Where each party is reached; UF_PLAIN_BEYOND_LOOPBACK lets the plain lab's gateway and relay
# serve plain HTTP on their namespace addresses.
if [ "$UF_TLS" = 1 ]; then
  UF_SCHEME=https UF_PIR_NAME=pir.lab.test UF_ISSUER_NAME=issuer.lab.test
  UF_RELAY_URL=https://relay.lab.test:8083/relay UF_GATEWAY_URL=https://gateway.lab.test:8082/gateway
  UF_PIR_DIRECT=https://pir.lab.test:8080 UF_ISSUER_DIRECT=https://issuer.lab.test:8081
  UF_PREFILTER_FROM=https://cdn.lab.test/files/ UF_PLAIN_BEYOND_LOOPBACK=
  # Host-only https service URLs: the deployment rules apply (docs/url-filter.md).
  UF_DEVELOPMENT=
else
  UF_SCHEME=http UF_PIR_NAME=pir.netext UF_ISSUER_NAME=issuer.netext
  UF_RELAY_URL=http://198.51.100.1:8083/relay UF_GATEWAY_URL=http://203.0.113.2:8082/gateway
  UF_PIR_DIRECT=http://127.0.0.1:8080 UF_ISSUER_DIRECT=http://127.0.0.1:8081
  UF_PREFILTER_FROM=http://198.51.100.1:8090/ UF_PLAIN_BEYOND_LOOPBACK=--insecure-http
  # http service URLs: a development configuration, as Apple allows for apps run from Xcode.
  UF_DEVELOPMENT=--development
fi
UF_PREFILTER_INTERVAL="${UF_PREFILTER_INTERVAL:-5}"
[ -n "${UF_CONFIGURE_FLAGS+x}" ] || UF_CONFIGURE_FLAGS=()

# Builds the databases from $1 into $work/db and publishes the prefilter on the CDN directory.
urlfilter_build() {
  "$bin/netext-urlfilter-db" build --urls "$1" --false-positive-rate 0.001 --use-case "$UF_USE_CASE" --output "$work/db" > "$work/build.out" 2>&1 || return 1
  mkdir -p "$work/cdn" && cp "$work/db/prefilter.json" "$work/cdn/prefilter.json.new" && cp "$work/db/prefilter.bin" "$work/cdn/prefilter.bin.new" &&
    mv "$work/cdn/prefilter.json.new" "$work/cdn/prefilter.json" && mv "$work/cdn/prefilter.bin.new" "$work/cdn/prefilter.bin"
}

# TLS options of a role: its certificate from the lab CA, and with $2 = upstream the CA its own
# requests trust.
urlfilter_tls() {
  [ "$UF_TLS" = 1 ] || return 0
  echo "--tls-certificate $work/ca/$1.crt --tls-key $work/ca/$1.key"
  [ "${2:-}" = upstream ] && echo "--upstream-ca $work/ca/ca.crt"
  return 0
}

# Makes the lab CA, the roles' certificates, and each namespace's host names and trust.
urlfilter_tls_setup() {
  source scripts/lib/lab-ca.sh
  lab_ca_make "$work/ca" && lab_ca_issue "$work/ca" relay relay.lab.test && lab_ca_issue "$work/ca" cdn cdn.lab.test &&
    lab_ca_issue "$work/ca" gateway gateway.lab.test && lab_ca_issue "$work/ca" pir pir.lab.test && lab_ca_issue "$work/ca" issuer issuer.lab.test || return 1
  mkdir -p "/etc/netns/$LAB_LAPTOP/ssl/certs" "/etc/netns/$LAB_INTERNET" "/etc/netns/$LAB_OFFICE"
  cp "$work/ca/ca.crt" "/etc/netns/$LAB_LAPTOP/ssl/certs/ca-certificates.crt"
  chmod 755 "/etc/netns/$LAB_LAPTOP/ssl" "/etc/netns/$LAB_LAPTOP/ssl/certs"; chmod 644 "/etc/netns/$LAB_LAPTOP/ssl/certs/ca-certificates.crt"
  printf '127.0.0.1 localhost\n198.51.100.1 relay.lab.test cdn.lab.test\n' > "/etc/netns/$LAB_LAPTOP/hosts"
  printf '127.0.0.1 localhost\n203.0.113.2 gateway.lab.test\n' > "/etc/netns/$LAB_INTERNET/hosts"
  printf '127.0.0.1 localhost pir.lab.test issuer.lab.test\n' > "/etc/netns/$LAB_OFFICE/hosts"
  chmod 644 /etc/netns/"$LAB_PREFIX"-*/hosts
}

# Starts the PIR server in the provider namespace (again, after urlfilter_stop_pir). Sets UF_PIR_PID.
urlfilter_start_pir() {
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" pir --database "$work/db" --listen 127.0.0.1:8080 --threads 2 $(urlfilter_tls pir upstream) \
    --privacy-pass-issuer "$UF_ISSUER_DIRECT" --issuer-name "$UF_ISSUER_NAME" \
    --origin-name "$UF_PIR_NAME" 2>> "$work/pir.log"
  UF_PIR_PID=$!
  local trust=""
  [ "$UF_TLS" = 1 ] && trust="--cacert $work/ca/ca.crt"
  lab_wait "grep -q 'privacy_pass=required' '$work/pir.log' && ip netns exec '$LAB_OFFICE' curl -s -o /dev/null $trust $UF_PIR_DIRECT/metrics" 30
}
urlfilter_stop_pir() { kill "$UF_PIR_PID" 2>/dev/null; wait "$UF_PIR_PID" 2>/dev/null; }

urlfilter_lab_up() {
  local blocklist="$1"
  lab_up || return 1
  # A hook for what must start before the first connection (captures).
  if [ -n "${UF_ON_LAB_UP:-}" ]; then "$UF_ON_LAB_UP" || { echo "$UF_ON_LAB_UP failed"; return 1; }; fi
  if [ "$UF_TLS" = 1 ]; then urlfilter_tls_setup || { echo "the lab CA could not be made"; return 1; }; fi
  urlfilter_build "$blocklist" || { echo "the block list did not build:"; tail -5 "$work/build.out"; return 1; }
  echo "$UF_CREDENTIAL" > "$work/credentials"
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" issuer --listen 127.0.0.1:8081 --keys "$work/issuer-keys" --credentials "$work/credentials" $(urlfilter_tls issuer) 2>> "$work/issuer.log"
  lab_wait "grep -q 'serving' '$work/issuer.log'" 20 || { echo "the issuer did not start"; return 1; }
  urlfilter_start_pir || { echo "the PIR server did not start"; tail -5 "$work/pir.log"; return 1; }
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" ohttp-gateway --listen 203.0.113.2:8082 $UF_PLAIN_BEYOND_LOOPBACK $(urlfilter_tls gateway upstream) \
    --keys "$work/gateway-keys" --target "$UF_PIR_NAME=$UF_PIR_DIRECT" --target "$UF_ISSUER_NAME=$UF_ISSUER_DIRECT" 2>> "$work/gateway.log"
  lab_spawn "$LAB_INTERNET" "$bin/netext-server" ohttp-relay --listen 198.51.100.1:8083 $UF_PLAIN_BEYOND_LOOPBACK $(urlfilter_tls relay upstream) \
    --gateway "$UF_GATEWAY_URL" 2>> "$work/relay.log"
  if [ "$UF_TLS" = 1 ]; then
    lab_spawn "$LAB_INTERNET" python3 scripts/e2e/web-server.py "$work/ca/cdn.crt" "$work/ca/cdn.key" "$work/cdn.log" "$work/cdn"
  else
    lab_spawn "$LAB_INTERNET" python3 -m http.server --bind 198.51.100.1 --directory "$work/cdn" 8090 2>> "$work/cdn.log"
  fi
  lab_wait "grep -q serving '$work/gateway.log' && grep -q serving '$work/relay.log' && ip netns exec '$LAB_LAPTOP' curl -sf -o /dev/null ${UF_PREFILTER_FROM}prefilter.json" 20 ||
    { echo "the gateway, relay or prefilter server did not start"; return 1; }
  export NETEXT_STATE_DIR="$work/state" NETEXT_SOCKET="$work/netextd.sock" NETEXT_PROVIDERS_DIR="$work/providers"
  export NETEXT_RESOLV_CONF="$work/resolv.conf" NETEXT_PREFILTER_INTERVAL="$UF_PREFILTER_INTERVAL"
  mkdir -p "$NETEXT_PROVIDERS_DIR"
  printf '{"bundleIdentifier": "%s", "extensionPoint": "url-filter-control", "executable": "%s", "arguments": ["url-prefilter", "--from", "%s"], "user": "nobody"}\n' \
    "$UF_CONTROL" "$bin/netext-filter-provider" "$UF_PREFILTER_FROM" > "$NETEXT_PROVIDERS_DIR/urlfilter.json"
  chmod 644 "$NETEXT_PROVIDERS_DIR/urlfilter.json"
  lab_spawn "$LAB_LAPTOP" "$bin/netextd" 2>> "$work/netextd.log"; NETEXTD_PID=$!
  lab_wait "'$bin/netext' status" 30 || { echo "netextd did not start"; return 1; }
  "$bin/netext" urlfilter configure --app "$UF_APP" --name "Lab URL filter" --pir-server "$UF_SCHEME://$UF_PIR_NAME" --issuer "$UF_SCHEME://$UF_ISSUER_NAME" \
    --token-stdin <<< "$UF_CREDENTIAL" --control-provider "$UF_CONTROL" --relay "$UF_RELAY_URL" --enable $UF_DEVELOPMENT "${UF_CONFIGURE_FLAGS[@]}" > "$work/configure.out" 2>&1 ||
    { cat "$work/configure.out"; return 1; }
  lab_wait "'$bin/netext' urlfilter status | grep -q 'URL filter: running'" 30 || { echo "the URL filter did not start"; tail -5 "$work/netextd.log"; return 1; }
}

# `netext urlfilter check` as the lab's app; prints 'URL verdict…' lines.
urlfilter_check() { "$bin/netext" urlfilter check --app "$UF_APP" "$@"; }

# Checks the verdicts of URLs: urlfilter_verdicts "deny allow" URL1 URL2 (stderr to $work/check.err).
urlfilter_verdicts() {
  local expected="$1"; shift
  local got
  got="$(urlfilter_check "$@" 2>>"$work/check.err" | awk '{print $2}' | paste -sd ' ')"
  [ "$got" = "$expected" ] || { echo "  got: $got; expected: $expected"; return 1; }
}
