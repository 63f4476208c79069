#!/usr/bin/env bash
# App Transport Security in NetExtHTTP (issue 24), against nginx (scripts/lib/http-lab.sh): the
# good server loads over HTTP/2 and HTTP/1.1; each weak server is refused by the rule it breaks,
# with the exception that lifts it named; each exception lifts exactly its rule; pins; the
# allow-all policy with a protected domain; a misspelt policy key; `netext http diagnose`; 100
# loads on one HTTP/2 connection, counted in a capture; Digest authentication against lighttpd.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/http-ats.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh http-ats
source scripts/lib/http-lab.sh
source scripts/lib/install-packages.sh
netext_install nginx-light lighttpd lighttpd-mod-openssl dante-server tcpdump openssl python3 > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

check "nginx serves the good and the weak servers in the office" http_lab_up

# expect_refused RULE URL [ARGS...]: exit 12, the rule named, and the load's advice printed.
expect_refused() {
  local rule="$1" url="$2"; shift 2
  local out status
  out="$(lab_http get "$@" "$url" 2>&1)"; status=$?
  [ $status = 12 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "(rule: $rule, " || { echo "  said: $out"; return 1; }
  echo "$out" | grep -q "To allow it, " || { echo "  no advice: $out"; return 1; }
}
# expect_loads URL WHAT [ARGS...]: the lab page, and WHAT in the verbose lines.
expect_loads() {
  local url="$1" what="$2"; shift 2
  local out
  out="$(lab_http get -v "$@" "$url" 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  no page: $out"; return 1; }
  echo "$out" | grep -qF -- "$what" || { echo "  no '$what' in: $out"; return 1; }
}
# policy FILE JSON: an NSAppTransportSecurity dictionary.
policy() { echo "$2" > "$work/$1"; }

check "the good server loads under the default rules over HTTP/2 and TLS 1.3" \
  expect_loads https://good.lab.test:8443/ "(h2, TLS 1.3)"
check "the HTTP/1.1-only server loads over HTTP/1.1 (ALPN fallback)" \
  expect_loads https://h1.lab.test:8444/ "(http/1.1, TLS 1.3)"
check "a redirect is followed and held to the same rules" \
  expect_loads https://good.lab.test:8443/redirect "after 1 redirect(s)"
# Unprivileged, as apps run: no socket option that needs a capability (a TCP option once set at
# the socket level became SO_DEBUG, refused to non-root), and --interface binds without one.
chmod 755 "$work" "$(dirname "$HTTP_LAB_CA")"; chmod 644 "$HTTP_LAB_CA"
check "an unprivileged user loads the page, bound to the laptop's eth0 (SO_BINDTODEVICE)" bash -c "
  ip netns exec '$LAB_LAPTOP' runuser -u nobody -- '$bin/netext' http get --cacert '$HTTP_LAB_CA' ${HTTP_LAB_RESOLVE[*]} --interface eth0 https://good.lab.test:8443/ | grep -q 'hello from the ATS lab'"
check "bound to loopback it cannot reach the office: the binding holds" bash -c "
  ! ip netns exec '$LAB_LAPTOP' runuser -u nobody -- '$bin/netext' http get --cacert '$HTTP_LAB_CA' ${HTTP_LAB_RESOLVE[*]} --interface lo --max-time 3 https://good.lab.test:8443/ > /dev/null 2>&1"

check "cleartext HTTP is refused by default" expect_refused "cleartext HTTP" http://plain.lab.test:8080/
check "a TLS 1.0-only server is refused by the TLS version rule" expect_refused "TLS version" https://tls10.lab.test:8445/
check "an RSA-key-exchange-only server is refused by the forward secrecy rule" expect_refused "forward secrecy" https://rsakx.lab.test:8446/
check "a 1024-bit RSA certificate is refused by the key size rule" expect_refused "key size" https://weakkey.lab.test:8447/
check "a SHA-1-signed certificate is refused by the signature hash rule" expect_refused "signature hash" https://sha1.lab.test:8448/
expired_refused() {
  local out status
  out="$(lab_http get https://expired.lab.test:8449/ 2>&1)"; status=$?
  [ $status = 5 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "the server's certificate expired on 2021-01-01" || { echo "  said: $out"; return 1; }
}
check "an expired certificate fails TLS itself (exit 5), saying when it expired" expired_refused

policy insecure.json '{"NSExceptionDomains": {"plain.lab.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}'
check "NSExceptionAllowsInsecureHTTPLoads lets cleartext through for its domain" \
  expect_loads http://plain.lab.test:8080/ "allowed under NSExceptionDomains › plain.lab.test rules" --ats "$work/insecure.json"
policy tls10.json '{"NSExceptionDomains": {"tls10.lab.test": {"NSExceptionMinimumTLSVersion": "TLSv1.0"}}}'
check "NSExceptionMinimumTLSVersion TLSv1.0 lets the TLS 1.0 server through" \
  expect_loads https://tls10.lab.test:8445/ "(http/1.1, TLS 1.0)" --ats "$work/tls10.json"
policy rsakx-tls.json '{"NSExceptionDomains": {"rsakx.lab.test": {"NSExceptionMinimumTLSVersion": "TLSv1.0"}}}'
check "…but lifts nothing else: the RSA key exchange server is still refused for forward secrecy" \
  expect_refused "forward secrecy" https://rsakx.lab.test:8446/ --ats "$work/rsakx-tls.json"
policy rsakx.json '{"NSExceptionDomains": {"rsakx.lab.test": {"NSExceptionRequiresForwardSecrecy": false}}}'
check "NSExceptionRequiresForwardSecrecy false lets the RSA key exchange server through" \
  expect_loads https://rsakx.lab.test:8446/ "no forward secrecy required" --ats "$work/rsakx.json"
policy weakkey-fs.json '{"NSExceptionDomains": {"weakkey.lab.test": {"NSExceptionRequiresForwardSecrecy": false, "NSExceptionMinimumTLSVersion": "TLSv1.0"}}}'
check "…which lifts nothing else: the 1024-bit key is still refused" \
  expect_refused "key size" https://weakkey.lab.test:8447/ --ats "$work/weakkey-fs.json"
policy weak.json '{"NSExceptionDomains": {"weakkey.lab.test": {"NSExceptionAllowsInsecureHTTPLoads": true}, "sha1.lab.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}'
check "NSExceptionAllowsInsecureHTTPLoads lifts the key size rule" \
  expect_loads https://weakkey.lab.test:8447/ "RSA 1024-bit" --ats "$work/weak.json"
check "NSExceptionAllowsInsecureHTTPLoads lifts the signature hash rule" \
  expect_loads https://sha1.lab.test:8448/ "ecdsa-with-SHA1" --ats "$work/weak.json"
policy all.json '{"NSAllowsArbitraryLoads": true}'
expired_still() {
  local out
  out="$(lab_http get --ats "$work/all.json" https://expired.lab.test:8449/ 2>&1)" && { echo "  loaded: $out"; return 1; }
  echo "$out" | grep -q "expired on" || { echo "  said: $out"; return 1; }
}
check "NSAllowsArbitraryLoads lifts ATS but not TLS: the expired certificate still fails" expired_still

policy protected.json '{"NSAllowsArbitraryLoads": true, "NSExceptionDomains": {"tls10.lab.test": {}}}'
check "allow-all with a protected domain: cleartext loads elsewhere" \
  expect_loads http://plain.lab.test:8080/ "allowed under NSAllowsArbitraryLoads rules" --ats "$work/protected.json"
check "…while the protected domain keeps the default rules" \
  expect_refused "TLS version" https://tls10.lab.test:8445/ --ats "$work/protected.json"
policy local.json '{"NSAllowsArbitraryLoads": true, "NSAllowsLocalNetworking": true}'
check "NSAllowsLocalNetworking switches NSAllowsArbitraryLoads off, as on Apple platforms" \
  expect_refused "cleartext HTTP" http://plain.lab.test:8080/ --ats "$work/local.json"

good_pin() { openssl x509 -in "$work/ca/good.crt" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64; }
check "a pin on the good server's key lets it load" \
  eval 'policy pin.json "{\"NSPinnedDomains\": {\"good.lab.test\": {\"NSPinnedLeafIdentities\": [{\"SPKI-SHA256-BASE64\": \"$(good_pin)\"}]}}}" && expect_loads https://good.lab.test:8443/ "pinned" --ats "$work/pin.json"'
policy wrongpin.json '{"NSPinnedDomains": {"lab.test": {"NSIncludesSubdomains": true, "NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}}}'
check "a pin on another key refuses the good server (pins apply to subdomains)" \
  expect_refused "pinned identity" https://good.lab.test:8443/ --ats "$work/wrongpin.json"

# The session's delegate judging server trust (netext http --pinned-key): tightening refuses the
# good server with another key; loosening accepts the expired one by its key, with ATS's leave.
spki_pin() { openssl x509 -in "$work/ca/$1.crt" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64; }
pinned_key_tightens() {
  local out
  out="$(lab_http get -v --pinned-key "$(spki_pin good)" https://good.lab.test:8443/ 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "server trust: good.lab.test's key is the pinned one" || { echo "  $out"; return 1; }
  out="$(lab_http get --pinned-key "$(spki_pin expired)" https://good.lab.test:8443/ 2>&1)" && { echo "  loaded: $out"; return 1; }
  echo "$out" | grep -q "good.lab.test's certificate has the key .*, not the pinned .*: refused" || { echo "  $out"; return 1; }
}
check "--pinned-key: the good server loads with its key, and is refused with another" pinned_key_tightens
pinned_key_loosens() {
  local out status
  out="$(lab_http get --pinned-key "$(spki_pin expired)" https://expired.lab.test:8449/ 2>&1)"; status=$?
  [ $status = 12 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "(rule: server trust, " || { echo "  $out"; return 1; }
  policy expired.json '{"NSExceptionDomains": {"expired.lab.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}'
  out="$(lab_http get -v --ats "$work/expired.json" --pinned-key "$(spki_pin expired)" https://expired.lab.test:8449/ 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  no page: $out"; return 1; }
  echo "$out" | grep -q "accepted although the server's certificate expired on 2021-01-01" || { echo "  $out"; return 1; }
}
check "--pinned-key accepts the expired server by its key only with NSExceptionAllowsInsecureHTTPLoads (else ATS's server trust rule)" pinned_key_loosens

misspelt() {
  local out status
  echo '{"NSExceptionDomains": {"tls10.lab.test": {"NSExceptionMinimumTLSVersion": "TLSv1.0", "NSIncludesSubdomain": true}}}' > "$work/typo.json"
  out="$(lab_http get --ats "$work/typo.json" https://tls10.lab.test:8445/ 2>&1)"; status=$?
  [ $status = 64 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -qF "NSAppTransportSecurity › NSExceptionDomains › tls10.lab.test › NSIncludesSubdomain is not an NSExceptionDomains key" || { echo "  said: $out"; return 1; }
}
check "a misspelt policy key is refused with its path, nothing loaded" misspelt

diagnose() {
  local out
  out="$(lab_http diagnose https://tls10.lab.test:8445/ 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "FAIL  Default ATS: TLS version" || { echo "  $out"; return 1; }
  echo "$out" | grep -q "PASS  TLS 1.0 minimum (http/1.1, TLS 1.0)" || { echo "  $out"; return 1; }
  echo "$out" | tail -1 | grep -qF "result: needs NSExceptionDomains › tls10.lab.test › NSExceptionMinimumTLSVersion = TLSv1.0" || { echo "  $out"; return 1; }
  out="$(lab_http diagnose https://rsakx.lab.test:8446/ 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | tail -1 | grep -qF "result: needs NSExceptionDomains › rsakx.lab.test › NSExceptionRequiresForwardSecrecy = false" || { echo "  $out"; return 1; }
}
check "netext http diagnose names the least exception each weak server needs" diagnose

# Cookies shared by an app group: two processes of group A, one of group B, one with none.
export NETEXT_GROUP_CONTAINERS="$work/groups"
cookie_echo() { lab_http get "$@" https://good.lab.test:8443/cookie/echo; }
group_cookies() {
  local a b none mode
  lab_http get --cookie-group group.com.example.a https://good.lab.test:8443/cookie/set > /dev/null || return 1
  a="$(cookie_echo --cookie-group group.com.example.a)"; b="$(cookie_echo --cookie-group group.com.example.b)"; none="$(cookie_echo)"
  [ "$a" = "cookie=session=s3cr3t; theme=dark" ] || { echo "  group A's second process sent: $a"; return 1; }
  [ "$b" = "cookie=" ] && [ "$none" = "cookie=" ] || { echo "  group B sent '$b', no group sent '$none'"; return 1; }
  mode="$(stat -c %a "$work/groups/group.com.example.a/Library/Cookies/cookies.json")"
  [ "$mode" = 600 ] || { echo "  the cookie file's mode is $mode"; return 1; }
}
check "cookies set in one process of a group are sent by another, not by another group's" group_cookies
parallel_cookies() {
  local pids=() i out
  for i in 0 1 2 3 4 5 6 7 8 9; do lab_http get --cookie-group group.com.example.c "https://good.lab.test:8443/cookie/add?n=$i" > /dev/null & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || return 1; done
  out="$(cookie_echo --cookie-group group.com.example.c)"
  for i in 0 1 2 3 4 5 6 7 8 9; do echo "$out" | grep -q "c$i=$i" || { echo "  c$i lost: $out"; return 1; }; done
}
check "ten processes of a group storing cookies at once lose none (the file is locked)" parallel_cookies

# A download killed mid-way (SIGKILL: no chance to save anything then) goes on from where its file
# ends when the same command runs again: a Range request with If-Range, a 206, the file identical.
killed_download() {
  local pid size
  ip netns exec "$LAB_LAPTOP" "$bin/netext" http get --cacert "$HTTP_LAB_CA" "${HTTP_LAB_RESOLVE[@]}" -o "$work/dl.bin" https://good.lab.test:8443/slow/big.bin 2> "$work/dl.err" &
  pid=$!
  lab_wait "[ \$(stat -c %s '$work/dl.bin' 2>/dev/null || echo 0) -ge 1000000 ]" 15 || { kill -9 $pid; echo "  the download did not start: $(cat "$work/dl.err")"; return 1; }
  kill -9 $pid; wait $pid 2>/dev/null
  size=$(stat -c %s "$work/dl.bin")
  [ -f "$work/dl.bin.netext-resume" ] || { echo "  no checkpoint beside the file"; return 1; }
  [ "$size" -lt $((4 << 20)) ] || { echo "  the download had finished before the kill"; return 1; }
  lab_http get -v -o "$work/dl.bin" https://good.lab.test:8443/slow/big.bin 2> "$work/dl2.err" || { echo "  the resume failed: $(cat "$work/dl2.err")"; return 1; }
  grep -q "resuming after $size bytes" "$work/dl2.err" || { echo "  $(cat "$work/dl2.err")"; return 1; }
  cmp -s "$work/dl.bin" "$work/www/slow/big.bin" || { echo "  the file differs from the server's"; return 1; }
  [ ! -e "$work/dl.bin.netext-resume" ] || { echo "  the checkpoint was left behind"; return 1; }
  grep -q '"GET /slow/big.bin HTTP/2.0" 206' "$work/nginx-access.log" || { echo "  no 206 in nginx's log"; return 1; }
  echo "  killed after $size bytes, resumed, identical"
}
check "a download killed mid-way resumes with a Range request and ends byte-identical" killed_download

# Proxies: dante (SOCKS5) and a CONNECT proxy in the internet namespace, resolving the lab's names
# themselves (/etc/netns hosts file); the laptop's link must carry nothing but the proxy's traffic.
mkdir -p "/etc/netns/$LAB_INTERNET"
for name in $HTTP_LAB_NAMES; do echo "$HTTP_LAB_ADDRESS $name.lab.test"; done > "/etc/netns/$LAB_INTERNET/hosts"
cat > "$work/danted.conf" <<CONF
logoutput: $work/dante.log
internal: 198.51.100.1 port = 1080
external: 203.0.113.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 0/0 to: 0/0
}
socks pass {
  from: 0/0 to: 0/0
  command: connect
  log: connect error
}
CONF
lab_spawn "$LAB_INTERNET" "$(command -v danted || echo /usr/sbin/danted)" -f "$work/danted.conf" -N 1
ip netns exec "$LAB_INTERNET" python3 -u scripts/e2e/connect-proxy.py 198.51.100.1 3128 > "$work/connect-proxy.log" 2>&1 &
LAB_PIDS+=($!)
proxied() {
  local proxy="$1" url="$2" expect="$3" out
  lab_wait "ip netns exec '$LAB_INTERNET' ss -Hltn 'sport = :1080' | grep -q LISTEN && ip netns exec '$LAB_INTERNET' ss -Hltn 'sport = :3128' | grep -q LISTEN" 10 || { echo "  the proxies did not start"; return 1; }
  lab_capture_start proxy_dump "$LAB_LAPTOP" eth0 "$work/proxy.pcap" -s 0 tcp || return 1
  # No --resolve: the proxy resolves the lab's names.
  out="$(ip netns exec "$LAB_LAPTOP" "$bin/netext" http get -v --cacert "$HTTP_LAB_CA" --proxy "$proxy" "$url" 2>&1)" || { lab_capture_stop "$proxy_dump" "$work/proxy.pcap"; echo "  failed: $out"; return 1; }
  lab_capture_stop "$proxy_dump" "$work/proxy.pcap"
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  no page: $out"; return 1; }
  echo "$out" | grep -qF -- "$expect" || { echo "  no '$expect' in: $out"; return 1; }
  if tcpdump -nn -r "$work/proxy.pcap" 'not host 198.51.100.1' 2>/dev/null | grep -q .; then echo "  the laptop reached something other than the proxy"; return 1; fi
}
check "through dante (SOCKS5): https to the good server, ATS applied to the origin, the laptop talking to the proxy only" \
  proxied socks5://198.51.100.1:1080 https://good.lab.test:8443/ "(h2, TLS 1.3)"
check "through an HTTP proxy: https by CONNECT" proxied http://198.51.100.1:3128 https://h1.lab.test:8444/ "(http/1.1, TLS 1.3)"
policy plain-proxy.json '{"NSExceptionDomains": {"plain.lab.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}'
proxied_plain() {
  local out
  out="$(ip netns exec "$LAB_LAPTOP" "$bin/netext" http get --ats "$work/plain-proxy.json" --proxy http://198.51.100.1:3128 http://plain.lab.test:8080/ 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  $out"; return 1; }
  grep -q "^GET http://plain.lab.test:8080/" "$work/connect-proxy.log" && grep -q "^CONNECT h1.lab.test:8444" "$work/connect-proxy.log" || { echo "  proxy log: $(cat "$work/connect-proxy.log")"; return 1; }
}
check "through an HTTP proxy: cleartext http with the absolute URL (the proxy logged both)" proxied_plain
refused_by_proxy() {
  local out status
  out="$(ip netns exec "$LAB_LAPTOP" "$bin/netext" http get --cacert "$HTTP_LAB_CA" --proxy socks5://198.51.100.1:1080 https://nowhere.lab.test:8443/ 2>&1)"; status=$?
  [ $status = 5 ] && echo "$out" | grep -q "through the proxy socks5://198.51.100.1:1080" || { echo "  exit $status: $out"; return 1; }
}
check "a name the SOCKS proxy cannot reach fails naming the proxy" refused_by_proxy

# A proxy that wants a user name and password (Basic, RFC 7617): the password reaches netext by
# its environment, never its command line.
ip netns exec "$LAB_INTERNET" env LAB_PROXY_CREDENTIALS="alice:lab-s3cret" python3 -u scripts/e2e/connect-proxy.py 198.51.100.1 3129 > "$work/auth-proxy.log" 2>&1 &
LAB_PIDS+=($!)
proxy_login() {
  lab_wait "ip netns exec '$LAB_INTERNET' ss -Hltn 'sport = :3129' | grep -q LISTEN" 10 || { echo "  the proxy did not start"; return 1; }
  local out status
  out="$(ip netns exec "$LAB_LAPTOP" "$bin/netext" http get --cacert "$HTTP_LAB_CA" --proxy http://198.51.100.1:3129 https://good.lab.test:8443/ 2>&1)"; status=$?
  [ $status = 5 ] && echo "$out" | grep -q "the proxy wants a user name and password (407)" || { echo "  without: exit $status: $out"; return 1; }
  out="$(ip netns exec "$LAB_LAPTOP" env NETEXT_PROXY_PASSWORD=lab-s3cret "$bin/netext" http get --cacert "$HTTP_LAB_CA" --proxy http://198.51.100.1:3129 --proxy-user alice https://good.lab.test:8443/ 2>&1)" ||
    { echo "  with: $out"; return 1; }
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  with: $out"; return 1; }
  out="$(ip netns exec "$LAB_LAPTOP" env NETEXT_PROXY_PASSWORD=lab-s3cret "$bin/netext" http get --ats "$work/plain-proxy.json" --proxy http://198.51.100.1:3129 --proxy-user alice http://plain.lab.test:8080/ 2>&1)" ||
    { echo "  cleartext: $out"; return 1; }
  echo "$out" | grep -q "hello from the ATS lab" || { echo "  cleartext: $out"; return 1; }
  grep -q "^407 CONNECT good.lab.test:8443" "$work/auth-proxy.log" && grep -q "^CONNECT good.lab.test:8443" "$work/auth-proxy.log" && grep -q "^GET http://plain.lab.test:8080/" "$work/auth-proxy.log" ||
    { echo "  proxy log: $(cat "$work/auth-proxy.log")"; return 1; }
}
check "a proxy that wants Basic credentials: refused (407, said) without them, https and cleartext through with them" proxy_login

# Stream tasks (netext http stream) go through the session's proxy, as Foundation's do (seed 002).
streamed() {
  local proxy="$1" out
  out="$(printf 'HEAD / HTTP/1.0\r\nHost: plain.lab.test\r\n\r\n' | ip netns exec "$LAB_LAPTOP" timeout 10 "$bin/netext" http stream --proxy "$proxy" plain.lab.test 8080 2> "$work/stream.err")" ||
    { echo "  failed: $out $(cat "$work/stream.err")"; return 1; }
  echo "$out" | grep -q "^HTTP/1.1 200 OK" && echo "$out" | grep -qi "^Server: nginx" || { echo "  said: $out"; return 1; }
  grep -q "readClosed" "$work/stream.err" || { echo "  events: $(cat "$work/stream.err")"; return 1; }
}
check "a stream task through the HTTP proxy's CONNECT talks to the plain server (the name resolved by the proxy)" streamed http://198.51.100.1:3128
check "a stream task through dante (SOCKS5) talks to the plain server" streamed socks5://198.51.100.1:1080

# betterRouteDiscovered: a second uplink comes up and the default route moves to it while a stream
# task is open; the task is told, its connection left as it was.
better_route() {
  local fifo="$work/stream.in"; mkfifo "$fifo"
  ip netns exec "$LAB_LAPTOP" "$bin/netext" http stream "$HTTP_LAB_ADDRESS" 8080 < "$fifo" > /dev/null 2> "$work/route.err" &
  local pid=$!; LAB_PIDS+=($pid)
  exec 7> "$fifo"
  lab_wait "grep -q 'connected to' '$work/route.err'" 10 || { echo "  no connection: $(cat "$work/route.err")"; exec 7>&-; return 1; }
  lab_add_uplink2 && ip netns exec "$LAB_LAPTOP" ip route replace default via 100.80.0.1 dev eth1
  local told=0; lab_wait "grep -q 'betterRouteDiscovered' '$work/route.err'" 10 && told=1
  ip netns exec "$LAB_LAPTOP" ip route replace default via 198.51.100.1 dev eth0
  exec 7>&-; kill "$pid" 2>/dev/null
  [ $told = 1 ] || { echo "  not told: $(cat "$work/route.err")"; return 1; }
  [ "$(grep -c betterRouteDiscovered "$work/route.err")" = 1 ] || { echo "  told more than once before the change back: $(cat "$work/route.err")"; return 1; }
}
check "an open stream task is told of a better route when the default route moves to a new uplink" better_route

multiplexed() {
  local out syns
  lab_capture_start mux_dump "$LAB_LAPTOP" eth0 "$work/mux.pcap" -s 0 'tcp port 8443' || return 1
  out="$(lab_http get --parallel 100 https://good.lab.test:8443/ 2>&1)"
  lab_capture_stop "$mux_dump" "$work/mux.pcap"
  echo "$out" | grep -q "loads=100 answered=100 protocol=h2 connections=1 " || { echo "  $out"; return 1; }
  syns=$(tcpdump -nn -r "$work/mux.pcap" 'tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn' 2>/dev/null | wc -l)
  [ "$syns" = 1 ] || { echo "  $syns connections in the capture"; return 1; }
  echo "  $out"
}
check "100 loads at once go over one HTTP/2 connection (one SYN in the capture)" multiplexed

# HTTP Digest (RFC 7616) against lighttpd, a server nobody here wrote: SHA-256 under /private/,
# MD5 (its default) under /md5/, plain-file users; TLS with the lab CA on digest.lab.test:8450.
digest_up() {
  http_lab_issue digest ec sha256 || return 1
  mkdir -p "$work/digest-www/private" "$work/digest-www/md5"
  echo "the private page" > "$work/digest-www/private/index.html"; echo "the md5 page" > "$work/digest-www/md5/index.html"
  ( umask 077; echo "carol:sw0rdfish" > "$work/digest-users"; echo "sw0rdfish" > "$work/digest-password"; echo "guess" > "$work/digest-wrong" )
  cat > "$work/lighttpd.conf" <<CONF
server.document-root = "$work/digest-www"
server.bind = "$HTTP_LAB_ADDRESS"
server.port = 8450
server.errorlog = "$work/lighttpd-error.log"
server.modules = ("mod_openssl", "mod_auth", "mod_authn_file")
index-file.names = ("index.html")
ssl.engine = "enable"
ssl.pemfile = "$work/ca/digest.crt"
ssl.privkey = "$work/ca/digest.key"
auth.backend = "plain"
auth.backend.plain.userfile = "$work/digest-users"
auth.require = ( "/private/" => ("method" => "digest", "realm" => "lab", "require" => "valid-user", "algorithm" => "SHA-256"),
                 "/md5/" => ("method" => "digest", "realm" => "lab", "require" => "valid-user") )
CONF
  lab_spawn "$LAB_OFFICE" lighttpd -D -f "$work/lighttpd.conf"
  lab_wait "ip netns exec '$LAB_OFFICE' ss -Hltn 'sport = :8450' | grep -q LISTEN" 10 || { cat "$work/lighttpd-error.log" >&2; return 1; }
}
check "lighttpd asks for Digest credentials in the office" digest_up
digest_load() {
  local path="$1" algorithm="$2" out
  out="$(lab_http get -v -i --user carol --password-file "$work/digest-password" "https://digest.lab.test:8450/$path/" 2>&1)" || { echo "  failed: $out"; return 1; }
  echo "$out" | grep -q "the $path page" || { echo "  no page: $out"; return 1; }
  echo "$out" | grep -qF 'answering the Digest challenge (realm "lab") as carol' || { echo "  $out"; return 1; }
  # What lighttpd offers there, asked by curl: the algorithm answered.
  out="$(ip netns exec "$LAB_LAPTOP" curl -s -i --cacert "$HTTP_LAB_CA" --resolve "digest.lab.test:8450:$HTTP_LAB_ADDRESS" "https://digest.lab.test:8450/$path/")"
  echo "$out" | grep -i "^www-authenticate: Digest" | grep -q "algorithm=$algorithm," || { echo "  lighttpd did not offer $algorithm: $out"; return 1; }
}
check "netext http get --user answers lighttpd's SHA-256 Digest challenge (password from a file)" digest_load private SHA-256
check "…and its MD5 one" digest_load md5 MD5
digest_refused() {
  local out
  out="$(lab_http get -v -i --user carol --password-file "$work/digest-wrong" https://digest.lab.test:8450/private/ 2>&1)"
  echo "$out" | grep -Eq "^HTTP/(1.1|2) 401" || { echo "  $out"; return 1; }
  echo "$out" | grep -q "Digest credential for carol refused" || { echo "  $out"; return 1; }
  out="$(lab_http get -i https://digest.lab.test:8450/private/ 2>&1)"
  echo "$out" | grep -Eq "^HTTP/(1.1|2) 401" || { echo "  without --user: $out"; return 1; }
  ! grep -q "guess\|sw0rdfish" "$work/lighttpd-error.log" || { echo "  a password reached lighttpd's log"; return 1; }
}
check "a wrong password gets the 401 (said once, not retried), as does no --user" digest_refused

e2e_finish
