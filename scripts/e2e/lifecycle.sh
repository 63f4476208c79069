#!/usr/bin/env bash
# Lifecycle lab: netext-server's HTTP roles (loopback) and netextd (in a namespace of its own) run
# as systemd runs them, with a stand-in for systemd's notification socket (sd_notify): READY=1 once
# they serve; SIGHUP reloads between RELOADING=1 and READY=1 (the TLS certificate and key, the
# issuer's credentials, netextd's provider manifests); a reload of broken files is refused and the
# previous ones keep serving; SIGTERM gives STOPPING=1 and exit 0. Then every unit in dist/systemd
# passes `systemd-analyze verify` with no complaint.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/lifecycle.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh lifecycle

python3 scripts/lib/notify-receiver.py "$work/notify.sock" "$work/notify.log" 300 & LAB_PIDS+=($!)
lab_wait "test -S '$work/notify.sock'" 10
# Notifications of one process (lines are "KEY=VALUE | KEY=VALUE"), and waiting for one.
notified() { lab_wait "grep -q -- '$1' '$work/notify.log'" "${2:-15}"; }
bound_port() { sed -n 's/.*msg=serving .*listen=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" | head -1; }
# The subject of the certificate a TLS server on 127.0.0.1:$1 presents now.
served_subject() { openssl s_client -connect "127.0.0.1:$1" -servername localhost < /dev/null 2> /dev/null | openssl x509 -noout -subject 2> /dev/null; }
subject_is() { [[ "$(served_subject "$2")" == *"CN = $1"* ]]; }
self_signed() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" -days 2 -keyout "$2.key" -out "$2.crt" 2> /dev/null; }

# --- an HTTP role with TLS: the certificate is replaced live ---------------------------------
self_signed first "$work/first" && self_signed renewed "$work/renewed"
cp "$work/first.crt" "$work/tls.crt"; cp "$work/first.key" "$work/tls.key"
: > "$work/notify.log"
NOTIFY_SOCKET="$work/notify.sock" "$bin/netext-server" ohttp-relay --listen 127.0.0.1:0 --gateway http://127.0.0.1:9/gateway \
  --tls-certificate "$work/tls.crt" --tls-key "$work/tls.key" --log-format logfmt 2> "$work/relay.log" &
relay=$!; LAB_PIDS+=($relay)
check "relay: READY=1 once it serves, with where (and that it is TLS)" notified '^READY=1 | STATUS=serving on 127\.0\.0\.1:[0-9]* (TLS)$'
port="$(bound_port "$work/relay.log")"
check "relay: serves the first certificate" subject_is first "$port"
cp "$work/renewed.crt" "$work/tls.crt"; cp "$work/renewed.key" "$work/tls.key"
kill -HUP "$relay"
check "relay: SIGHUP gives RELOADING=1, then READY=1 with the new certificate's end" \
  bash -c "$(declare -f notified lab_wait); work='$work'; notified '^RELOADING=1 | MONOTONIC_USEC=[0-9]*$' && notified '^READY=1 | STATUS=reloaded: certificate valid until 20[0-9-]*T'"
check "relay: new connections get the renewed certificate" subject_is renewed "$port"
check "relay: the reload is logged with the certificate's file" grep -q "msg=\"TLS certificate reloaded\" certificate=$work/tls.crt" "$work/relay.log"
echo "not a certificate" > "$work/tls.crt"
kill -HUP "$relay"
check "relay: a broken certificate is refused (systemd is told why)" notified '^READY=1 | STATUS=reload refused, serving the previous configuration: .*tls\.crt'
check "relay: ... the refusal is logged, naming the file and what is wrong" grep -q 'level=error .*TLS reload refused.*tls\.crt: it holds no readable PEM certificate' "$work/relay.log"
check "relay: ... and the renewed certificate keeps serving" subject_is renewed "$port"
kill -TERM "$relay"; wait "$relay"; status=$?
check "relay: SIGTERM gives STOPPING=1 and exit 0" bash -c "test $status -eq 0 && grep -q '^STOPPING=1 | STATUS=shutting down (SIGTERM)$' '$work/notify.log'"

# --- the issuer: a credential added by a reload -----------------------------------------------
first_credential="credential-one-0123456789"; second_credential="credential-two-0123456789"
printf '# accepted\n%s\n' "$first_credential" > "$work/credentials"
: > "$work/notify.log"
NOTIFY_SOCKET="$work/notify.sock" "$bin/netext-server" issuer --listen 127.0.0.1:0 --keys "$work/issuer-keys" \
  --credentials "$work/credentials" --log-format logfmt 2> "$work/issuer.log" &
issuer=$!; LAB_PIDS+=($issuer)
check "issuer: READY=1 once it serves" notified '^READY=1 | STATUS=serving on 127\.0\.0\.1:[0-9]*$'
port="$(bound_port "$work/issuer.log")"
key_status() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "http://127.0.0.1:$port/token-key-for-user-token"; }
check "issuer: an unknown credential is refused (401)" test "$(key_status "$second_credential")" = 401
printf '%s\n' "$second_credential" >> "$work/credentials"
kill -HUP "$issuer"
check "issuer: SIGHUP reads the credentials file again" notified '^READY=1 | STATUS=reloaded: 2 credentials$'
check "issuer: the added credential is accepted at once (200)" test "$(key_status "$second_credential")" = 200
check "issuer: /metrics counts the 401 and the 200, every family with HELP and TYPE, no credential in it" bash -c \
  "curl -s http://127.0.0.1:$port/metrics > '$work/issuer-metrics.txt' && ! grep -q credential- '$work/issuer-metrics.txt' && python3 scripts/lib/prometheus-sample.py --check \
    'netext_issuer_requests_total{endpoint=\"/token-key-for-user-token\",status=\"401\"}' == 1 \
    'netext_issuer_requests_total{endpoint=\"/token-key-for-user-token\",status=\"200\"}' == 1 \
    'netext_issuer_request_duration_seconds_count{endpoint=\"/token-key-for-user-token\"}' == 2 < '$work/issuer-metrics.txt'"
printf 'short\n' >> "$work/credentials"
kill -HUP "$issuer"
check "issuer: a malformed credentials file is refused, naming the line" notified '^READY=1 | STATUS=reload refused, serving the previous configuration: .*line 4'
check "issuer: ... and both credentials still work" bash -c "$(declare -f key_status); port=$port; test \"\$(key_status $first_credential)\" = 200 && test \"\$(key_status $second_credential)\" = 200"
check "issuer: no credential reaches the log" bash -c "! grep -q 'credential-' '$work/issuer.log'"
kill -TERM "$issuer"; wait "$issuer"; status=$?
check "issuer: SIGTERM gives STOPPING=1 and exit 0" bash -c "test $status -eq 0 && grep -q '^STOPPING=1' '$work/notify.log'"

# --- netextd, in a namespace of its own: ready, manifests reloaded, stopped --------------------
ip netns add "$LAB_LAPTOP" && lab_in "$LAB_LAPTOP" ip link set lo up
e2e_netextd_environment
export NETEXT_FILTER_RULES_ROOT="$work/rules" NETEXT_DNS_STUB=127.0.0.1:0
echo "nameserver 127.0.0.1" > "$work/resolv.conf"
: > "$work/notify.log"
check "netextd: a metrics endpoint beyond loopback is refused (usage, exit 64)" bash -c \
  "ip netns exec '$LAB_LAPTOP' '$bin/netextd' --metrics-listen 0.0.0.0:9587 2> '$work/netextd-refused.txt'; test \$? -eq 64 && grep -q 'loopback only' '$work/netextd-refused.txt'"
NOTIFY_SOCKET="$work/notify.sock" ip netns exec "$LAB_LAPTOP" "$bin/netextd" --log-format logfmt --metrics-listen 127.0.0.1:9587 2> "$work/netextd.log" &
netextd=$!; LAB_PIDS+=($netextd)
check "netextd: READY=1 once its socket serves, with what it holds" notified "^READY=1 | STATUS=0 configurations, 1 providers; socket $work/netextd.sock$" 20
check "netextd: the CLI reaches it" "$bin/netext" list
check "netextd: --metrics-listen serves control requests by method and result, sessions by status" bash -c \
  "ip netns exec '$LAB_LAPTOP' curl -s http://127.0.0.1:9587/metrics | python3 scripts/lib/prometheus-sample.py --check \
    'netext_daemon_control_requests_total{method=\"listConfigurations\",result=\"ok\"}' '>=' 1 \
    'netext_daemon_configurations' == 0 'netext_daemon_sessions{status=\"connected\"}' == 0"
e2e_filter_provider com.example.school filter-data school nobody
echo '{"bundleIdentifier": ' > "$NETEXT_PROVIDERS_DIR/broken.json"
kill -HUP "$netextd"
check "netextd: SIGHUP reads the manifests again (and says one was refused)" notified '^READY=1 | STATUS=reloaded: 2 providers, 1 manifests refused (see the log)$'
check "netextd: ... the refused manifest is logged by name" grep -q 'provider manifest refused.*broken\.json' "$work/netextd.log"
check "netextd: ... and it keeps serving" "$bin/netext" list
kill -TERM "$netextd"; wait "$netextd"; status=$?
check "netextd: SIGTERM gives STOPPING=1, exit 0 and no socket left" \
  bash -c "test $status -eq 0 && grep -q '^STOPPING=1' '$work/notify.log' && test ! -e '$work/netextd.sock'"

# --- the units ----------------------------------------------------------------------------------
# Copies of the units point at this build's binaries (everything else as shipped).
e2e_verify_units dist/systemd "$work/verify.log" -e "s|/usr/s\?bin/\(netext[a-z-]*\)|$bin/\1|g" -e "s|/etc/netext/server/|$PWD/dist/etc/netext/server/|"
check "units: a unit for netextd and for every server role" \
  bash -c "ls '$work/units' | sort | tr '\n' ' ' | grep -qx 'netext-server-issuer.service netext-server-odoh-proxy.service netext-server-odoh-target.service netext-server-ohttp-gateway.service netext-server-ohttp-relay.service netext-server-pir.service netext-server-tunnel.service netextd.service '"
check "units: every one is Type=notify with a reload" bash -c "for u in '$work'/units/*.service; do grep -qx 'Type=notify' \"\$u\" && grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID' \"\$u\" || exit 1; done"
check "units: systemd-analyze verify finds nothing to say" bash -c "test \"\$(cat '$work/verify.log')\" = 'exit 0'"

e2e_finish "$work/relay.log" "$work/issuer.log" "$work/netextd.log" "$work/verify.log"
