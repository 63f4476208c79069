#!/usr/bin/env bash
# End-to-end checks of the content filter in a namespace lab: netextd in the laptop queues new
# flows, the reference school filter (sandboxed) judges them by host name (TLS server name, HTTP
# Host), URL prefix and address; decided flows stay in the kernel; rules change on the fly; a
# stalled or crashed provider fails open or closed as configured; keyword rules read HTTP answers
# through peek windows (filterData); disabling removes every rule.
# The web server (HTTP, HTTPS with a self-signed certificate, UDP echo) is the office. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/filter.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh filter

lab_up || { echo "FAIL lab"; exit 1; }
e2e_netextd_environment
export NETEXT_FILTER_RULES_ROOT="$work/filter-rules"
e2e_filter_provider com.netext.filter.school filter-data school nobody
# A second office address that the rules block by address, for UDP and ICMP.
lab_in "$LAB_OFFICE" sh -c 'ip addr add 203.0.113.9/24 dev eth0 && ip -6 addr add 2001:db8:2::9/64 dev eth0 nodad'
# A third address no rule names, known to DNS as names under blocked.test (the office answers).
lab_in "$LAB_OFFICE" ip addr add 203.0.113.7/24 dev eth0
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=lab.test -days 1 -keyout "$work/web.key" -out "$work/web.crt" 2>/dev/null
# Pages for the keyword rules: one with the phrase, one without, one with it after the first
# chunk, one with it beyond the 64 KiB the filter reads.
mkdir -p "$work/site"
printf '<html><body>Play the CASINO Bonus now!</body></html>\n' > "$work/site/casino.html"
printf '<html><body>Homework for Monday.</body></html>\n' > "$work/site/clean.html"
python3 -c 'import sys; sys.stdout.write("a" * 40000 + " casino bonus " + "b" * 40000)' > "$work/site/mid.txt"
python3 -c 'import sys, random; random.seed(7); sys.stdout.write("".join(random.choice("xyz ") for _ in range(100000)) + " casino bonus " + "c" * 100000)' > "$work/site/late.txt"
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/web-server.py "$work/web.crt" "$work/web.key" "$work/web.log" "$work/site"
lab_spawn "$LAB_LAPTOP" python3 -m http.server --bind :: --directory "$work" 8080 2>/dev/null
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/dns-responder.py 203.0.113.2 dns.blocked.test 203.0.113.7 "$work/dns.log"
lab_wait "grep -q 'web server ready' '$work/web.log'" 10
lab_wait "ip netns exec $LAB_LAPTOP ss -ltn | grep -q ':8080'" 10
e2e_start_netextd

# fetch URL HOST ADDRESS: curl from the laptop with HOST resolved to ADDRESS (so the TLS server
# name and the Host header carry HOST).
fetch() {
  local url="$1" host="$2" address="$3" port
  case "$url" in https:*) port=443 ;; *) port=80 ;; esac
  laptop curl -sS -k --max-time 6 --resolve "$host:$port:$address" -o "$work/fetched" "$url" 2>>"$work/curl.log"
}
# fetched_has URL HOST ADDRESS TEXT: the fetch succeeds and the body contains TEXT.
fetched_has() { fetch "$1" "$2" "$3" && grep -q "$4" "$work/fetched"; }
# fetched_size URL HOST ADDRESS BYTES: the fetch succeeds with exactly BYTES bytes.
fetched_size() { fetch "$1" "$2" "$3" && [ "$(stat -c %s "$work/fetched")" -eq "$4" ]; }
udp() { laptop python3 scripts/e2e/udp-probe.py "$@"; }
# refused URL HOST ADDRESS: the fetch fails with a reset or refusal (curl 7, 35 or 56), not by
# timing out: a blocked flow is ended at once.
refused() {
  fetch "$@"; local status=$?
  [ "$status" -eq 7 ] || [ "$status" -eq 35 ] || [ "$status" -eq 56 ] || { echo "  (curl exit status $status)"; return 1; }
}
rules_dir="$NETEXT_FILTER_RULES_ROOT/com.netext.filter.school"

check "before the filter: the blocked site loads over HTTPS" fetch https://www.blocked.test/ www.blocked.test 203.0.113.2
seen_before=$(wc -l < "$work/web.log")
cat > "$work/rules.txt" <<'RULES'
# host names cover their subdomains
blocked.test
example.com
# a cleartext URL prefix
http://school.test/private/
# addresses, whatever the protocol
203.0.113.9
2001:db8:2::9
RULES
check "filter created and enabled" bash -c "'$bin/netext' filter create --name School --provider com.netext.filter.school --organization 'Lab <School> & Co' \
  --request-access-url 'https://help.school.test/ask?a=1&b=2' --request-access-text 'Ask the librarian' --rules '$work/rules.txt' --enable > /dev/null"
lab_wait "'$bin/netext' filter status | grep -q 'content filter: running'" 15
check "filter status says running" bash -c "'$bin/netext' filter status | grep -q 'content filter: running'"
check "steering rules installed (IPv4 and IPv6)" bash -c "ip netns exec $LAB_LAPTOP iptables-nft -S OUTPUT | grep -q NETEXTD-FLT-OUT && ip netns exec $LAB_LAPTOP ip6tables-nft -S INPUT | grep -q NETEXTD-FLT-IN"

check "HTTPS to a blocked subdomain is reset (TLS server name)" refused https://www.blocked.test/ www.blocked.test 203.0.113.2
check "HTTPS to the blocked domain itself is reset" refused https://blocked.test/ blocked.test 203.0.113.2
check "HTTPS to a name that only ends like it loads (label boundary)" fetch https://notblocked.test/ notblocked.test 203.0.113.2
check "HTTPS to an allowed site loads" fetch https://school.test/ school.test 203.0.113.2
# block_page URL HOST ADDRESS: the answer is netextd's block page (403) naming the organization
# (escaped), the URL and the request-access link.
block_page() {
  laptop curl -sS -i --max-time 6 --resolve "$2:80:$3" -o "$work/page" "$1" 2>>"$work/curl.log" &&
    head -1 "$work/page" | grep -q "^HTTP/1.1 403" &&
    grep -q 'Lab &lt;School&gt; &amp; Co does not allow this page' "$work/page" &&
    grep -qF "<code id=\"blocked-url\">$1</code>" "$work/page" &&
    grep -qF 'href="https://help.school.test/ask?a=1&amp;b=2">Ask the librarian</a>' "$work/page"
}
check "HTTP to a blocked host gets the block page (Host header)" block_page http://www.blocked.test/ www.blocked.test 203.0.113.2
check "HTTP under the blocked URL prefix gets the block page" block_page http://school.test/private/report.html school.test 203.0.113.2
check "IPv6: HTTP under the blocked URL prefix gets the block page" block_page http://school.test/private/v6.html school.test 2001:db8:2::2
check "HTTP outside the prefix loads" fetched_has http://school.test/privateer school.test 203.0.113.2 "hello from school.test /privateer"
check "the web server never saw the blocked requests" bash -c "! tail -n +$((seen_before + 1)) '$work/web.log' | grep -q ' blocked.test\| www.blocked.test\|/private/'"
check "IPv6: HTTPS to the blocked domain is reset" refused https://blocked.test/ blocked.test 2001:db8:2::2
check "IPv6: HTTPS to an allowed site loads" fetch https://school.test/ school.test 2001:db8:2::2
check "UDP to an allowed address is echoed" udp 203.0.113.2 7
check "UDP to a blocked address is dropped" bash -c "! ip netns exec $LAB_LAPTOP python3 scripts/e2e/udp-probe.py 203.0.113.9 7"
check "IPv6 UDP: allowed echoed, blocked dropped" bash -c "ip netns exec $LAB_LAPTOP python3 scripts/e2e/udp-probe.py 2001:db8:2::2 7 && ! ip netns exec $LAB_LAPTOP python3 scripts/e2e/udp-probe.py 2001:db8:2::9 7"
check "ICMP: allowed address answers, blocked does not" bash -c "ip netns exec $LAB_LAPTOP ping -c1 -W2 203.0.113.2 >/dev/null && ! ip netns exec $LAB_LAPTOP ping -c1 -W2 203.0.113.9 >/dev/null"
check "ICMPv6: allowed address answers, blocked does not" bash -c "ip netns exec $LAB_LAPTOP ping -6 -c1 -W2 2001:db8:2::2 >/dev/null && ! ip netns exec $LAB_LAPTOP ping -6 -c1 -W2 2001:db8:2::9 >/dev/null"
# QUIC: the server name from a client's Initial packet (the RFC 9001 A.2 packet names example.com).
check "QUIC: an Initial whose ClientHello names a blocked host is dropped" bash -c "! ip netns exec $LAB_LAPTOP python3 scripts/e2e/quic-probe.py 203.0.113.2"
check "QUIC: the log names the host from the ClientHello" bash -c "'$bin/netext' filter log | grep -q 'drop.*udp.*203.0.113.2:443.*example.com'"
check "QUIC: other UDP to port 443 of the same server is echoed" udp 203.0.113.2 443
check "address rules are decided in the kernel (FilterSettings: drop rules in netextd's settings chain)" bash -c "ip netns exec $LAB_LAPTOP iptables-nft -S NETEXTD-FLT-SET-OUT | grep -q -- '-d 203.0.113.9/32 -j CONNMARK' && ip netns exec $LAB_LAPTOP ip6tables-nft -S NETEXTD-FLT-SET-IN | grep -q -- '-s 2001:db8:2::9/128 -j CONNMARK'"
check "so the provider never saw those flows" bash -c "! '$bin/netext' filter log --limit 2000 | grep -q '203.0.113.9\\|2001:db8:2::9'"
# Names from DNS answers: a flow with no name of its own (UDP, ICMP) is judged by the name its
# address was looked up as.
# resolve NAME: one A query to the office's DNS server from the laptop; succeeds with an answer.
resolve() {
  laptop python3 -c 'import socket, struct, sys
query = struct.pack(">HHHHHH", 0x2b2b, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in sys.argv[1].split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(query, ("203.0.113.2", 53))
sys.exit(0 if s.recv(1500)[7] > 0 else 1)' "$1"
}
check "DNS: before any lookup, UDP to the unnamed address is echoed" udp 203.0.113.7 7
check "DNS: the laptop looks up udp.dns.blocked.test (answer 203.0.113.7)" resolve udp.dns.blocked.test
check "DNS: now UDP to that address is judged by the name and dropped" bash -c "! ip netns exec $LAB_LAPTOP python3 scripts/e2e/udp-probe.py 203.0.113.7 7"
check "DNS: ICMP to it too" bash -c "! ip netns exec $LAB_LAPTOP ping -c1 -W2 203.0.113.7 >/dev/null"
check "DNS: the log names the flow by the looked-up name" bash -c "'$bin/netext' filter log | grep -q 'drop.*udp.*203.0.113.7:7.*udp.dns.blocked.test'"
check "inbound: a connection from an allowed address reaches the laptop's server" office curl -sS --max-time 5 -o /dev/null http://198.51.100.2:8080/
# (an inbound connection is judged at its first data, so curl sees its request reset: 56)
inbound_refused() { office curl -sS --max-time 5 --interface 203.0.113.9 -o /dev/null http://198.51.100.2:8080/ 2>/dev/null; local s=$?; [ $s -eq 7 ] || [ $s -eq 56 ]; }
check "inbound: a connection from a blocked address is refused (reset)" inbound_refused

# A decided flow stays in the kernel: a 20 MB download adds only a few queued packets.
before=$("$bin/netext" filter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["packetsQueued"])')
check "a 20 MB allowed download arrives whole" fetched_size "http://school.test/big?n=20000000" school.test 203.0.113.2 20000000
after=$("$bin/netext" filter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["packetsQueued"])')
echo "  packets queued for the 20 MB flow: $((after - before))"
check "its packets after the verdict never left the kernel (< 16 queued)" test $((after - before)) -lt 16

log="$("$bin/netext" filter log --limit 200)"
check "the log names the blocked TLS server name" grep -q "drop.*www.blocked.test" <<<"$log"
check "the log names the blocked URL and the block page" grep -q "drop.*http://school.test/private/report.html.*block page" <<<"$log"
check "the log shows the owning program, its pid and user (curl as root)" grep -q "drop.*www.blocked.test.*curl\[[0-9]*\] uid 0" <<<"$log"
check "the filter log is refused to other users" bash -c "! ip netns exec $LAB_LAPTOP setpriv --reuid=65534 --regid=65534 --clear-groups '$bin/netext' filter log 2>/dev/null"

# The block page in a real browser (headless Chromium; every other host name resolves to nothing,
# background networking off, so it reaches only the lab).
browser() {
  laptop chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-default-apps --disable-domain-reliability --user-data-dir="$work/chromium" --window-size=900,700 \
    --host-resolver-rules="MAP school.test 203.0.113.2, MAP * ~NOTFOUND" "$@" 2>>"$work/chromium.log"
}
if command -v chromium > /dev/null; then
  browser --dump-dom http://school.test/private/browser.html > "$work/dom.html"
  check "browser: the page's DOM has the title, organization, blocked URL and link" bash -c "grep -q '<h1 id=\"title\">This page is blocked</h1>' '$work/dom.html' &&
    grep -q 'id=\"organization\">Lab &lt;School&gt; &amp; Co does not allow' '$work/dom.html' &&
    grep -q 'id=\"blocked-url\">http://school.test/private/browser.html<' '$work/dom.html' &&
    grep -q 'id=\"request-access\" href=\"https://help.school.test/ask?a=1&amp;b=2\"' '$work/dom.html'"
  browser --screenshot="$work/block-page.png" http://school.test/private/screenshot.html > /dev/null
  read -r width height blue < <(python3 scripts/e2e/png-colors.py "$work/block-page.png" 29 78 216 2>/dev/null || echo 0 0 0)
  echo "  screenshot ${width}x${height}, request-access button pixels: $blue"
  check "browser: the screenshot shows the page with its request-access button" bash -c "[ '$width' -eq 900 ] && [ '$blue' -gt 1000 ]"
  [ -n "${NETEXT_KEEP_SCREENSHOT:-}" ] && cp "$work/block-page.png" "$NETEXT_KEEP_SCREENSHOT"
else
  check "browser: chromium is installed (scripts/lib/install-packages.sh)" false
fi

# The sandbox.
provider_pid() { e2e_descendants 'netext-filter-provider school' "$NETEXTD_PID" | head -1; }
pid="$(provider_pid)"
check "the provider runs as nobody" bash -c "[ -n '$pid' ] && [ \$(stat -c %u /proc/$pid) -eq 65534 ]"
check "the provider has a network namespace of its own" bash -c "[ \$(readlink /proc/$pid/ns/net) != \$(readlink /proc/$NETEXTD_PID/ns/net) ] || [ \$(readlink /proc/$pid/ns/net) != \$(ip netns exec $LAB_LAPTOP readlink /proc/self/ns/net) ]"
check "the provider's namespace has no interface up" bash -c "! nsenter -t $pid -n ip -o addr show up | grep -q inet"
check "a connection from the provider's namespace fails" bash -c "! nsenter -t $pid -n curl -sS --max-time 3 -o /dev/null http://203.0.113.2/ 2>/dev/null"
check "the provider cannot write its rules directory" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups touch '$rules_dir/x' 2>/dev/null"

# netextd killed: with fail-open the queue rules let traffic pass (--queue-bypass); a new netextd
# removes the old chains and starts the enabled filter again.
kill -9 "$NETEXTD_PID"
lab_wait "! kill -0 $NETEXTD_PID 2>/dev/null" 5
check "netextd killed: fail-open traffic still flows" fetch https://school.test/ school.test 203.0.113.2
# Its provider (found above, so this lab's) ends when netextd's socket closes; in case it has not.
[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
e2e_start_netextd
lab_wait "'$bin/netext' filter status | grep -q 'content filter: running'" 15
check "restarted netextd runs the enabled filter again" refused https://blocked.test/ blocked.test 203.0.113.2
check "with one set of steering rules" bash -c "[ \$(ip netns exec $LAB_LAPTOP iptables-nft -S OUTPUT | grep -c NETEXTD-FLT-OUT) -eq 1 ]"
pid="$(provider_pid)"

# Rules change on the fly (as a control provider would write them).
echo "late.test" > "$rules_dir/blocklist.txt"
# The provider looks at the file at most every 0.5 s, on a new flow: new flows until one is
# refused (at most 5 s); the check then asks once more.
lab_wait "refused https://late.test/ late.test 203.0.113.2" 5
check "a rule added while running applies to new flows" refused https://late.test/ late.test 203.0.113.2
check "the earlier rules still apply" refused https://blocked.test/ blocked.test 203.0.113.2

# Peek windows: a keyword rule makes the provider read cleartext HTTP answers (filterData) before
# any byte of them reaches the program.
printf 'late.test\nkeyword:Casino Bonus\n' > "$rules_dir/blocklist.txt"
lab_wait "block_page http://school.test/files/casino.html school.test 203.0.113.2" 5
reading_before=$("$bin/netext" filter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["flowsReadingData"])')
check "peek: an answer containing the keyword gets the block page" block_page http://school.test/files/casino.html school.test 203.0.113.2
check "peek: the web server did answer it (the answer was blocked, not the request)" grep -q "/files/casino.html" "$work/web.log"
check "peek: an answer without it arrives" fetched_has http://school.test/files/clean.html school.test 203.0.113.2 "Homework for Monday"
# mid_reset: the phrase after the first 16 KiB chunk (already passed): the connection is reset
# and the program never gets the whole answer.
mid_reset() { fetch http://school.test/files/mid.txt school.test 203.0.113.2; local s=$?; [ $s -eq 56 ] || [ $s -eq 18 ] || { echo "  (curl exit status $s)"; return 1; }; }
check "peek: the phrase later in the answer resets the connection" mid_reset
check "peek: beyond the 64 KiB read the answer passes byte for byte (200 KB)" bash -c "ip netns exec $LAB_LAPTOP curl -sS --max-time 8 --resolve school.test:80:203.0.113.2 -o '$work/late.got' http://school.test/files/late.txt && cmp -s '$work/late.got' '$work/site/late.txt'"
check "peek: IPv6 too" block_page http://school.test/files/casino.html school.test 2001:db8:2::2
reading_after=$("$bin/netext" filter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["flowsReadingData"])')
check "peek: filter status counts the flows read as data" test $((reading_after - reading_before)) -ge 5
check "peek: the log names the URL whose answer was blocked" bash -c "'$bin/netext' filter log | grep -q 'drop.*http://school.test/files/casino.html.*block page'"
check "peek: an answer without a length is held until the server closes, then judged at its completion" fetched_has http://school.test/unsized school.test 203.0.113.2 "an answer without a length"
check "peek: (by the provider at the completion, not by the failure policy after a stall)" bash -c "'$bin/netext' filter log | grep 'http://school.test/unsized' | grep -q 'allow.*provider\$'"
check "peek: HTTPS flows are not read (the keyword cannot be seen)" fetch https://school.test/ school.test 203.0.113.2

# A stalled provider: the failure policy (open) decides after the verdict deadline.
kill -STOP "$pid"
check "fail open: with the provider stalled a blocked site loads after the deadline" fetch https://stalled.blocked.test/ stalled.blocked.test 203.0.113.2
kill -CONT "$pid"
check "the log says the failure policy decided" bash -c "'$bin/netext' filter log | grep -q 'allow.*stalled.blocked.test.*failure-policy'"
# A crashed provider is restarted and filters again.
kill -9 "$pid"
lab_wait "'$bin/netext' filter status --json | grep -q '\"providerRestarts\" : 1' && '$bin/netext' filter status | grep -q 'running'" 15
check "a killed provider is restarted" bash -c "'$bin/netext' filter status | grep -q 'restarts: 1'"
check "and blocks again" refused https://blocked.test/ blocked.test 203.0.113.2

# Fail closed: the same stall now blocks an allowed site.
check "filter re-created to fail closed" bash -c "'$bin/netext' filter create --name School --provider com.netext.filter.school --rules '$work/rules.txt' --fail-closed --enable > /dev/null"
lab_wait "'$bin/netext' filter status | grep -q 'running.*fails closed'" 15
pid="$(provider_pid)"
kill -STOP "$pid"
check "fail closed: with the provider stalled an allowed site is refused" refused https://school.test/ school.test 203.0.113.2
kill -CONT "$pid"

check "filter disabled" bash -c "'$bin/netext' filter disable School > /dev/null"
check "no steering rule or chain is left (IPv4 and IPv6)" bash -c "! ip netns exec $LAB_LAPTOP iptables-nft -S | grep -q NETEXTD && ! ip netns exec $LAB_LAPTOP ip6tables-nft -S | grep -q NETEXTD"
lab_wait '[ -z "$(provider_pid)" ]' 8
check "the blocked site loads again" fetch https://www.blocked.test/ www.blocked.test 203.0.113.2
check "filter status says off" bash -c "'$bin/netext' filter status | grep -q 'content filter: off'"

e2e_finish "$work/netextd.log" "$work/curl.log" "$work/web.log"
