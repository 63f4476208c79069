#!/usr/bin/env bash
# Captive portal detection in a namespace lab (issue 25, first part), with the real binaries:
# the lab's "internet" namespace plays the hotspot's router — dnsmasq (Debian) hands out DHCP
# with option 114 (RFC 8910), nftables holds every client until it logs in (port 80 sent to the
# portal, the rest dropped), and scripts/e2e/captive-portal-server.py serves the redirect, the
# captive portal API (RFC 8908, HTTPS with a lab CA) and the login form. The office is "the
# internet" behind it, with the connectivity check's real answer. netextd runs in the laptop;
# `netext hotspot detect` asks it; last, with a kill switch on, `netext hotspot allow-login` lets
# one user log in to the portal while everything else stays held, and the VPN connects. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/captive-portal.sh   One PASS/FAIL line per check;
# exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh portal
source scripts/lib/lab-ca.sh
source scripts/lib/install-packages.sh
source scripts/lib/wifi-mock.sh
netext_install dnsmasq-base nftables tcpdump curl python3 dbus-daemon python3-dbusmock > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }
session_seconds=6
table="${LAB_PREFIX}_portal"
internet() { ip netns exec "$LAB_INTERNET" "$@"; }
lab_up || { echo "FAIL lab"; exit 1; }
lab_ca_make "$work/ca" && lab_ca_issue "$work/ca" portal 198.51.100.1 portal.lab.test || { echo "FAIL lab CA"; exit 1; }
# The laptop's resolver is the hotspot's router (198.51.100.1; it answers only while dnsmasq
# serves DNS there): no lookup in the laptop leaves the lab (lab_down removes the file).
mkdir -p "/etc/netns/$LAB_LAPTOP" && printf 'nameserver 198.51.100.1\n' > "/etc/netns/$LAB_LAPTOP/resolv.conf"

# The office: "the internet", with the connectivity check's real answer ("hello from …").
lab_ca_issue "$work/ca" web 203.0.113.2
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/web-server.py "$work/ca/web.crt" "$work/ca/web.key" "$work/web.log"

# The hotspot's router: hold the laptop until it logs in.
internet nft -f - <<NFT || { echo "FAIL nftables"; exit 1; }
table inet $table {
  set allowed { type ipv4_addr; flags timeout; }
  chain prerouting { type nat hook prerouting priority dstnat; iifname "eth0" ip saddr != @allowed tcp dport 80 dnat ip to 198.51.100.1:8080; }
  chain forward { type filter hook forward priority filter; iifname "eth0" ip saddr @allowed accept; iifname "eth0" ct state established,related accept; iifname "eth0" drop; }
}
NFT
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/captive-portal-server.py 198.51.100.1 "$work/ca/portal.crt" "$work/ca/portal.key" "$table" lab-password "$session_seconds" "$work/portal.log"
lab_wait "grep -q 'portal ready' '$work/portal.log'" 10 || { echo "FAIL portal server"; cat "$work/portal.log"; exit 1; }

# dnsmasq for the hotspot's DHCP: option 114 names the captive portal API ($1), or none. With
# "dns" as $2 it also serves DNS on 198.51.100.1 — portal.lab.test and check.lab.test, nothing
# else, queries logged — and so names itself in option 6.
start_dnsmasq() {
  [ -n "${DNSMASQ_PID:-}" ] && { kill "$DNSMASQ_PID" 2>/dev/null; wait "$DNSMASQ_PID" 2>/dev/null; }
  local option=() dns=(--port=0)
  [ -n "$1" ] && option=("--dhcp-option=114,$1")
  [ "${2:-}" = dns ] && dns=(--port=53 --no-resolv --no-hosts --log-queries --address=/portal.lab.test/198.51.100.1 --address=/check.lab.test/203.0.113.2)
  ip netns exec "$LAB_INTERNET" dnsmasq --conf-file=/dev/null --keep-in-foreground "${dns[@]}" --interface=eth0 --bind-interfaces --user=nobody \
    --dhcp-range=198.51.100.100,198.51.100.200,1h "${option[@]}" --log-dhcp --log-facility=- \
    --pid-file="$work/dnsmasq.pid" --dhcp-leasefile="$work/dnsmasq.leases" >> "$work/dnsmasq.log" 2>&1 &
  DNSMASQ_PID=$!; LAB_PIDS+=($DNSMASQ_PID)
  lab_wait "grep -q 'DHCP, sockets bound' '$work/dnsmasq.log'" 5
}
start_dnsmasq "https://198.51.100.1:8443/capport"

e2e_netextd_environment
export NETEXT_CAPTIVE_PORTAL_CA_FILE="$work/ca/ca.crt"
e2e_start_netextd

probe=(--probe-url http://203.0.113.2/check --probe-response "hello from")
# detect ARGS…: runs `netext hotspot detect` in $out, its exit status in $status.
detect() { out="$("$bin/netext" hotspot detect "$@" 2>&1)"; status=$?; echo "$out" | sed 's/^/  /'; }
has() { grep -qF -- "$1" <<< "$out"; }

# 1. Captive: the announcement, the API and the check all say so.
lab_capture_start capture "$LAB_INTERNET" eth0 "$work/dhcp.pcap" udp port 67 or udp port 68
detect --interface eth0 "${probe[@]}"
lab_capture_stop "$capture" "$work/dhcp.pcap"
check "captive: exit status 2 ($status)" test "$status" -eq 2
check "the DHCP server's option 114 names the API" has "announcement (DHCP option 114): captive portal API at https://198.51.100.1:8443/capport"
check "the API (over TLS, the lab CA) says captive, with the portal and venue pages" has "captive portal API: captive=yes user-portal-url=https://198.51.100.1:8443/login venue-info-url=https://198.51.100.1:8443/venue"
check "the connectivity check on eth0 was redirected to the portal" has "connectivity check http://203.0.113.2/check: 302, redirected to https://198.51.100.1:8443/login"
check "the verdict names where to log in" has "verdict: captive — log in at https://198.51.100.1:8443/login"
check "dnsmasq saw a DHCPINFORM from the laptop asking for option 114" bash -c "grep -q 'DHCPINFORM(eth0) 198.51.100.2' '$work/dnsmasq.log' && grep 'requested options' '$work/dnsmasq.log' | grep -q '114'"
dhcp_on_wire=$(tcpdump -n -r "$work/dhcp.pcap" 2>/dev/null | grep -c '198.51.100.2.68 > 255.255.255.255.67')
check "on the wire: the DHCPINFORM left eth0 from 198.51.100.2:68 as a broadcast ($dhcp_on_wire)" test "$dhcp_on_wire" -ge 1
check "while captive the office is unreachable" bash -c "! ip netns exec '$LAB_LAPTOP' curl -s -m 2 -o /dev/null -w '%{http_code}' http://203.0.113.2/ | grep -q 200"
json="$("$bin/netext" hotspot detect --interface eth0 "${probe[@]}" --json 2>/dev/null)"
check "--json carries the verdict, the login URL and the API's state" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
assert d['verdict'] == 'captive' and d['loginURL'] == 'https://198.51.100.1:8443/login', d
assert d['api']['isCaptive'] is True and d['interface'] == 'eth0', d" "$json"

# 2. A person logs in (the helper's job in a later step); the network opens for the session.
check "the portal's login form accepts the guest" bash -c "ip netns exec '$LAB_LAPTOP' curl -sf -m 5 --cacert '$work/ca/ca.crt' -d user=guest -d password=lab-password https://198.51.100.1:8443/login | grep -q welcome"
detect --interface eth0 "${probe[@]}"
check "open: exit status 0 ($status)" test "$status" -eq 0
check "the API says not captive, with the session's seconds left" bash -c "grep -qE 'captive portal API: captive=no .*seconds-remaining=[1-6]( |$)' <<< '$out'"
check "the connectivity check gets the real answer" has "connectivity check http://203.0.113.2/check: 200, the real answer"
check "verdict: open" has "verdict: open"
check "the office answers" bash -c "ip netns exec '$LAB_LAPTOP' curl -sf -m 3 http://203.0.113.2/ | grep -q hello"

# 3. The session ends (the portal's nftables timeout): captive again.
sleep $((session_seconds + 1))
detect --interface eth0 "${probe[@]}"
check "after the session's $session_seconds s: captive again ($status)" test "$status" -eq 2
check "… by the API and by the check" bash -c "grep -q 'captive=yes' <<< '$out' && grep -q 'redirected to' <<< '$out'"

# 4. The default interface, and netextd's own check ($NETEXT_CONNECTIVITY_CHECK_URL unset: none).
detect
check "without --interface: the default route's interface (eth0)" has "interface: eth0"
check "without a check configured: none is run" has "connectivity check: none configured"

# 5. A network that announces no portal; one whose announcement is malformed; one with no DHCP.
start_dnsmasq "urn:ietf:params:capport:unrestricted"
detect --interface eth0
check "option 114 'unrestricted': no portal, verdict open ($status)" bash -c "[ $status -eq 0 ] && grep -q 'no captive portal (urn:ietf:params:capport:unrestricted)' <<< '$out'"
start_dnsmasq "http://198.51.100.1:8080/capport"
detect --interface eth0
check "an http (not https) API in option 114 is refused, named, verdict unknown ($status)" bash -c "[ $status -eq 11 ] && grep -q 'must be an https URL' <<< '$out'"
start_dnsmasq ""
detect --interface eth0
check "a DHCP answer without option 114 is reported as such" has "carries no option 114"
kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null; DNSMASQ_PID=""
started=$SECONDS
detect --interface eth0
check "no DHCP server: said, verdict unknown, within 8 s (4.5 s of waiting, DHCPv6 asked too; $((SECONDS - started)) s)" bash -c "[ $status -eq 11 ] && grep -q 'no DHCP server answered a DHCPINFORM on eth0' <<< '$out' && grep -q 'no DHCPv6 server answered an Information-Request on eth0' <<< '$out' && [ $((SECONDS - started)) -le 8 ]"
# An IPv6 network: DHCPv4 says nothing, the announcement comes over DHCPv6 (RFC 8910 §2.2,
# option 103) in the Reply to an Information-Request (RFC 8415 §18.2.6).
ip netns exec "$LAB_INTERNET" dnsmasq --conf-file=/dev/null --keep-in-foreground --port=0 --interface=eth0 --bind-interfaces --user=nobody \
  --dhcp-range=2001:db8:1::100,2001:db8:1::200,64,1h --dhcp-option=option6:103,https://198.51.100.1:8443/capport --log-dhcp --log-facility=- \
  --pid-file="$work/dnsmasq6.pid" --dhcp-leasefile="$work/dnsmasq6.leases" >> "$work/dnsmasq6.log" 2>&1 &
DNSMASQ_PID=$!; LAB_PIDS+=($DNSMASQ_PID)
lab_wait "grep -q 'DHCPv6, IP range' '$work/dnsmasq6.log'" 5
detect --interface eth0
check "DHCPv4 silent, DHCPv6 answers: its option 103 names the API" has "announcement (DHCPv6 option 103): captive portal API at https://198.51.100.1:8443/capport"
check "…which says captive" has "captive portal API: captive=yes"
check "dnsmasq saw the laptop's Information-Request" grep -q "DHCPINFORMATION-REQUEST(eth0)" "$work/dnsmasq6.log"
kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null; DNSMASQ_PID=""
# The same IPv6 network naming the API by name: its DNS server comes in the same Reply (option
# 23, RFC 3646), and detection asks it over IPv6 out of eth0.
ip netns exec "$LAB_INTERNET" dnsmasq --conf-file=/dev/null --keep-in-foreground --port=53 --no-resolv --no-hosts --log-queries --interface=eth0 --bind-interfaces --user=nobody \
  --address=/portal.lab.test/198.51.100.1 --dhcp-range=2001:db8:1::100,2001:db8:1::200,64,1h --dhcp-option=option6:dns-server,[2001:db8:1::1] \
  --dhcp-option=option6:103,https://portal.lab.test:8443/capport --log-dhcp --log-facility=- \
  --pid-file="$work/dnsmasq6.pid" --dhcp-leasefile="$work/dnsmasq6.leases" > "$work/dnsmasq6-dns.log" 2>&1 &
DNSMASQ_PID=$!; LAB_PIDS+=($DNSMASQ_PID)
lab_wait "grep -q 'DHCPv6, IP range' '$work/dnsmasq6-dns.log'" 5
detect --interface eth0
check "DHCPv6's option 103 names the API by name, and its option 23 the DNS server that knows it: captive" bash -c "grep -qF 'announcement (DHCPv6 option 103): captive portal API at https://portal.lab.test:8443/capport' <<< '$out' && grep -qF 'captive portal API: captive=yes' <<< '$out'"
check "…the name asked of 2001:db8:1::1 over IPv6, from the laptop's eth0 address" grep -q "query\[A\] portal.lab.test from 2001:db8:1::2" "$work/dnsmasq6-dns.log"
kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null; DNSMASQ_PID=""
# Neither DHCP says anything; a router's advertisement does (RFC 8910 §2.3, option 37). A forged
# advertisement with hop limit 64 (so not from this link, RFC 4861 §6.1.2) comes first each time.
ip netns exec "$LAB_INTERNET" python3 -u scripts/e2e/ra-responder.py eth0 https://198.51.100.1:8443/capport --forged https://198.51.100.66/forged --seconds 60 > "$work/ra.log" 2>&1 &
RA_PID=$!; LAB_PIDS+=($RA_PID)
lab_wait "grep -q 'answering Router Solicitations' '$work/ra.log'" 5
detect --interface eth0
check "DHCPv4 and DHCPv6 silent, a Router Advertisement's option 37 names the API" has "announcement (Router Advertisement option 37): captive portal API at https://198.51.100.1:8443/capport"
check "…the forged one (hop limit 64) was not taken, and the API says captive" bash -c "! grep -q forged <<< '$out' && grep -qF 'captive portal API: captive=yes' <<< '$out'"
check "the router saw the laptop's Router Solicitation from its link-local address" grep -q "Router Solicitation from fe80::" "$work/ra.log"
kill "$RA_PID"; wait "$RA_PID" 2>/dev/null
# The router names the API by name and a DNS server in an RDNSS option (RFC 8106 §5.1); only
# DNS runs on it (no DHCP at all).
ip netns exec "$LAB_INTERNET" dnsmasq --conf-file=/dev/null --keep-in-foreground --port=53 --no-resolv --no-hosts --log-queries --interface=eth0 --bind-interfaces --user=nobody \
  --address=/portal.lab.test/198.51.100.1 --log-facility=- --pid-file="$work/dnsmasq-ra.pid" > "$work/dnsmasq-ra.log" 2>&1 &
DNSMASQ_PID=$!; LAB_PIDS+=($DNSMASQ_PID)
lab_wait "grep -q 'started, version' '$work/dnsmasq-ra.log'" 5
ip netns exec "$LAB_INTERNET" python3 -u scripts/e2e/ra-responder.py eth0 https://portal.lab.test:8443/capport --rdnss 2001:db8:1::1 --seconds 60 > "$work/ra-rdnss.log" 2>&1 &
RA_PID=$!; LAB_PIDS+=($RA_PID)
lab_wait "grep -q 'answering Router Solicitations' '$work/ra-rdnss.log'" 5
detect --interface eth0
check "a Router Advertisement names the API by name and its RDNSS option the DNS server: captive" bash -c "grep -qF 'announcement (Router Advertisement option 37): captive portal API at https://portal.lab.test:8443/capport' <<< '$out' && grep -qF 'captive portal API: captive=yes' <<< '$out'"
check "…the name asked of the RDNSS server over IPv6" grep -q "query\[A\] portal.lab.test from 2001:db8:1::2" "$work/dnsmasq-ra.log"
kill "$RA_PID"; wait "$RA_PID" 2>/dev/null
kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null; DNSMASQ_PID=""

# 6. Bad requests.
detect --interface 'eth0/../x'
check "an interface name with '/' is refused" has "is not an interface name"
detect --interface eth0 --probe-url ftp://203.0.113.2/
check "a probe URL that is not http(s) is refused, named" has "the connectivity check URL must be an http or https URL"
detect --interface eth0 --probe-url https://203.0.113.2/
check "an https probe is refused (a portal cannot answer it)" has "a connectivity check is plain http"
out="$(runuser -u nobody -- "$bin/netext" hotspot detect --interface eth0 "${probe[@]}" 2>&1)"; status=$?
check "an unprivileged user may not name a probe ($status)" test "$status" -eq 10
check "… and is told why" has "needs root or membership"
check "netextd logged each detection" grep -q "captive portal detection" "$work/netextd.log"

# 7. The kill switch on behind the portal: log in without turning it off.
start_dnsmasq "https://198.51.100.1:8443/capport"
e2e_keys
e2e_office_server_config
e2e_start_server
cp "$work/ca/ca.crt" "$work/ca-public.crt"; chmod 644 "$work/ca-public.crt"
echo "$client_key" | netext create --name Guarded --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" \
  --password-stdin --include-all-networks --enable > /dev/null
out="$(timeout 20 "$bin/netext" start Guarded 2>&1)"; status=$?
check "behind the portal the VPN cannot connect (start fails: $status)" test "$status" -ne 0
check "… and the kill switch holds everything" laptop nft list table inet netextd_guard
# The tunnel provider runs as nobody (its packets pass the guard), so the portal user is another: www-data.
as_portal_user() { laptop runuser -u www-data -- "$@"; }
login() { "$@" curl -sf -m 4 --cacert "$work/ca-public.crt" -d user=guest -d password=lab-password -d seconds=300 https://198.51.100.1:8443/login 2>/dev/null | grep -q welcome; }
check "the kill switch blocks the portal's page (root)" bash -c "! ip netns exec '$LAB_LAPTOP' curl -s -m 2 -o /dev/null --cacert '$work/ca-public.crt' https://198.51.100.1:8443/login"
check "… and any other user's (www-data)" bash -c "! ip netns exec '$LAB_LAPTOP' runuser -u www-data -- curl -s -m 2 -o /dev/null --cacert '$work/ca-public.crt' https://198.51.100.1:8443/login"
detect --interface eth0 "${probe[@]}"
check "detection works through the kill switch: captive (DHCP and the marked check pass) ($status)" test "$status" -eq 2
check "… the check redirected to the portal" has "redirected to https://198.51.100.1:8443/login"
check "… and the RFC 8908 API is asked through it too (its connection bound to eth0 and marked): captive" has "captive portal API: captive=yes"
grep -F "captive portal API:" <<< "$out" | sed 's/^/  /'
# Names through the kill switch: the hotspot's DHCP names its DNS server (option 6: dnsmasq on
# 198.51.100.1) and announces the API by name; the check is by name too.
start_dnsmasq "https://portal.lab.test:8443/capport" dns
check "the laptop's own lookup of the portal's name is held by the kill switch" bash -c "! ip netns exec '$LAB_LAPTOP' timeout 4 getent hosts portal.lab.test"
detect --interface eth0 --probe-url http://check.lab.test/check --probe-response "hello from"
check "… yet detection looks names up with the network's DNS server (out of eth0, marked): the API by name says captive" has "captive portal API: captive=yes user-portal-url=https://198.51.100.1:8443/login"
check "… and the check by name is redirected to the portal" has "connectivity check http://check.lab.test/check: 302, redirected to https://198.51.100.1:8443/login"
check "dnsmasq answered the laptop's queries for both names, from eth0's address" \
  bash -c "grep -q 'query\[A\] portal.lab.test from 198.51.100.2' '$work/dnsmasq.log' && grep -q 'query\[A\] check.lab.test from 198.51.100.2' '$work/dnsmasq.log'"
start_dnsmasq "https://198.51.100.1:8443/capport"
out="$("$bin/netext" hotspot allow-login --user www-data --interface eth0 --seconds 120 2>&1)"; echo "  $out"
check "allow-login lets www-data reach eth0 for 120 s" has "www-data (uid 33) may reach eth0 directly for 120 s"
check "the guard has the login's rule" bash -c "ip netns exec '$LAB_LAPTOP' nft list table inet netextd_guard | grep -q 'meta skuid 33 oifname \"eth0\" accept'"
check "root's programs are still blocked" bash -c "! ip netns exec '$LAB_LAPTOP' curl -s -m 2 -o /dev/null --cacert '$work/ca-public.crt' https://198.51.100.1:8443/login"
check "www-data logs in to the portal with the kill switch on" login as_portal_user
check "the VPN connects once the portal lets the laptop through" netext start Guarded
check "through the tunnel: the office's internal host answers" laptop ping -c 2 -W 2 -q 10.20.0.5
out="$("$bin/netext" hotspot allow-login --user www-data --seconds 0 2>&1)"; echo "  $out"
check "--seconds 0 ends the login" has "portal login for www-data (uid 33) ended"
check "… and its rule is gone" bash -c "! ip netns exec '$LAB_LAPTOP' nft list table inet netextd_guard | grep -q 'skuid 33 oifname'"
out="$("$bin/netext" hotspot allow-login --user root --seconds 60 2>&1)"; status=$?
check "root may not be allowed past the kill switch ($status)" has "root's programs are the whole machine"
out="$("$bin/netext" hotspot allow-login --user www-data --seconds 7200 2>&1)"
check "at most an hour" has "seconds: 7200 is not between 0 (end) and 3600"
out="$(runuser -u nobody -- "$bin/netext" hotspot allow-login --user www-data 2>&1)"; status=$?
check "an unprivileged user may not allow logins ($status)" test "$status" -eq 10
"$bin/netext" hotspot allow-login --user www-data --interface eth0 --seconds 2 > /dev/null
sleep 3
check "a login ends by itself when its time is up" bash -c "! ip netns exec '$LAB_LAPTOP' nft list table inet netextd_guard | grep -q 'skuid 33 oifname' && grep -q 'how=expired' '$work/netextd.log'"
netext disable Guarded > /dev/null

# 8. netextd watching by itself (--captive-portal-detection; a captive network checked again every 2 s).
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2> /dev/null
export NETEXT_CAPTIVE_PORTAL_DETECTION=on NETEXT_CAPTIVE_PORTAL_RECHECK=2 NETEXT_CONNECTIVITY_CHECK_URL=http://203.0.113.2/check NETEXT_CONNECTIVITY_CHECK_RESPONSE="hello from"
laptop curl -s -m 3 --cacert "$work/ca-public.crt" -X POST https://198.51.100.1:8443/logout > /dev/null
e2e_start_netextd
status_says() { "$bin/netext" hotspot status 2>&1 | grep -qF -- "$1"; }
check "at start netextd finds the portal by itself" lab_wait "status_says 'verdict: captive — log in at https://198.51.100.1:8443/login'" 15
check "… says it is monitoring, with its own connectivity check" bash -c "'$bin/netext' hotspot status | grep -q 'monitoring: on' && '$bin/netext' hotspot status | grep -q 'connectivity check http://203.0.113.2/check: 302'"
check "… and logs it at notice" lab_wait "grep -q 'captive portal detected.*login=https://198.51.100.1:8443/login' '$work/netextd.log'" 5
check "a person logs in" login laptop
check "netextd sees the network open without being asked" lab_wait "status_says 'verdict: open'" 15
check "… and logs it" lab_wait "grep -q 'network open' '$work/netextd.log'" 5
# A logout netextd is not told about: nothing rechecks an open network until something changes.
# A router's advertisement nobody asked for (to all nodes, naming the portal's API) is a change.
laptop curl -s -m 3 --cacert "$work/ca-public.crt" -X POST https://198.51.100.1:8443/logout > /dev/null
sleep 1
check "after a logout nobody told it of, netextd still says open" status_says 'verdict: open'
ip netns exec "$LAB_INTERNET" python3 -u scripts/e2e/ra-responder.py eth0 https://198.51.100.1:8443/capport --unsolicited-after 1 --seconds 20 > "$work/ra-unsolicited.log" 2>&1 &
RA_PID=$!; LAB_PIDS+=($RA_PID)
check "a Router Advertisement nobody asked for starts a check: captive again" lab_wait "status_says 'verdict: captive'" 15
check "… logged as the advertisement's doing" grep -q "a Router Advertisement announces something new.*announcement=.*198.51.100.1:8443/capport" "$work/netextd.log"
check "… and it was sent to all nodes, unasked" grep -q "unsolicited Router Advertisement sent to ff02::1" "$work/ra-unsolicited.log"
kill "$RA_PID" 2> /dev/null; wait "$RA_PID" 2> /dev/null
check "a person logs in again" login laptop
check "netextd sees it open again" lab_wait "status_says 'verdict: open'" 15
json="$("$bin/netext" hotspot status --json 2>/dev/null)"
check "status --json: monitoring, the last verdict and when" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
assert d['monitoring'] is True and d['last']['verdict'] == 'open' and d['last']['interface'] == 'eth0' and d['checkedAt'], d" "$json"
out="$(timeout 10 "$bin/netextd" --connectivity-check-url https://203.0.113.2/check 2>&1)"
check "netextd refuses an https connectivity check at start, naming the flag" has "--connectivity-check-url: the connectivity check is plain http"
out="$(NETEXT_CONNECTIVITY_CHECK_URL=ftp://203.0.113.2/ timeout 10 "$bin/netextd" 2>&1)"
check "… and a bad one in the environment, naming the variable" has "NETEXT_CONNECTIVITY_CHECK_URL: the connectivity check URL must be an http or https URL"

# 9. A hotspot helper logs in by itself with the kill switch on, and keeps the session: the
# reference helper (netext-hotspot-helper, as www-data) posts the portal's form; the chosen
# helper is asked to maintain every 2 s, against the portal's 6 s sessions.
laptop curl -s -m 3 --cacert "$work/ca-public.crt" -X POST https://198.51.100.1:8443/logout > /dev/null
(umask 077; printf 'lab-password\n' > "$work/portal-password"); chown www-data "$work/portal-password"
cat > "$NETEXT_PROVIDERS_DIR/hotspot.json" <<JSON
{"bundleIdentifier": "org.netext.hotspot.form", "extensionPoint": "hotspot-helper", "executable": "$bin/netext-hotspot-helper",
 "arguments": ["--login-url", "https://198.51.100.1:8443/login", "--logout-url", "https://198.51.100.1:8443/logout", "--user", "guest",
               "--password-file", "$work/portal-password", "--ca-file", "$work/ca-public.crt", "--interface", "eth0", "--ssid", "Café Libre"],
 "user": "www-data"}
JSON
# A second helper claims the café's network with low confidence (as daemon, its own password file): it loses.
(umask 077; printf 'lab-password\n' > "$work/portal-password-low"); chown daemon "$work/portal-password-low"
cat > "$NETEXT_PROVIDERS_DIR/hotspot-low.json" <<JSON
{"bundleIdentifier": "org.netext.hotspot.low", "extensionPoint": "hotspot-helper", "executable": "$bin/netext-hotspot-helper",
 "arguments": ["--login-url", "https://198.51.100.1:8443/login", "--user", "guest", "--password-file", "$work/portal-password-low",
               "--ca-file", "$work/ca-public.crt", "--interface", "eth0", "--ssid", "Café Libre", "--confidence", "low"],
 "user": "daemon"}
JSON
netext enable Guarded > /dev/null
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2> /dev/null
logins_before=$(grep -c 'POST /login from 198.51.100.2: accepted' "$work/portal.log")
export NETEXT_HOTSPOT_MAINTAIN_INTERVAL=2
# The laptop's eth0 is a Wi-Fi link to NetworkManager's stand-in, joined to the café's network:
# the helper claims it by SSID.
check "a Wi-Fi service for the lab (python3-dbusmock's NetworkManager)" wifi_mock_up "$LAB_LAPTOP" "$work/dbus"
check "eth0 joins \"Café Libre\" (netext hotspot configure: an open network)" bash -c "'$bin/netext' hotspot configure 'Café Libre' | grep -q 'configured with NetworkManager'"
e2e_start_netextd
check "the helper runs as www-data and is ready" lab_wait "status_says 'helper: org.netext.hotspot.form (user www-data) ready'" 15
check "… and the low-confidence one as daemon" lab_wait "status_says 'helper: org.netext.hotspot.low (user daemon) ready'" 15
check "netextd hands the captive network to it; it logs in through the kill switch and maintains" \
  lab_wait "status_says 'helper session: maintaining on eth0, chosen helper org.netext.hotspot.form'" 20
check "the portal accepted the helper's form from the laptop" lab_wait "[ \$(grep -c 'POST /login from 198.51.100.2: accepted' '$work/portal.log') -gt $logins_before ]" 5
check "while it holds the network the guard lets www-data (uid 33) out on eth0" bash -c "ip netns exec '$LAB_LAPTOP' nft list table inet netextd_guard | grep -q 'meta skuid 33 oifname \"eth0\" accept'"
check "… and root's programs are still blocked" bash -c "! ip netns exec '$LAB_LAPTOP' curl -s -m 2 -o /dev/null --cacert '$work/ca-public.crt' https://198.51.100.1:8443/login"
check "netextd sees the network open" lab_wait "status_says 'verdict: open'" 15
check "the helper was handed the joined Wi-Fi network by its SSID" grep -q 'hotspot helper.*ssid="Café Libre".*state=maintaining' "$work/netextd.log"
check "both helpers claimed it, high and low; the high one was chosen" bash -c "
  grep -q 'hotspot helper claims the network.*confidence=high.*helper=org.netext.hotspot.form.*ssid=\"Café Libre\"' '$work/netextd.log' &&
  grep -q 'hotspot helper claims the network.*confidence=low.*helper=org.netext.hotspot.low.*ssid=\"Café Libre\"' '$work/netextd.log' &&
  '$bin/netext' hotspot status | grep -q 'chosen helper org.netext.hotspot.form'"
list="$("$bin/netext" hotspot list 2>&1)"
check "netext hotspot list: the helper claims the café's network (filterScanList), not the office's" bash -c "
  grep -q '^Café Libre .*eth0 .*joined .*org.netext.hotspot.form (high)' <<< \"\$1\" && grep -q '^Office Wi-Fi .*eth0 .*- *- *\$' <<< \"\$1\"" _ "$list"
sleep 13
logins=$(( $(grep -c 'POST /login from 198.51.100.2: accepted' "$work/portal.log") - logins_before ))
check "the helper kept the session past two of the portal's 6 s sessions ($logins logins)" bash -c "[ $logins -ge 4 ] && '$bin/netext' hotspot status | grep -q 'verdict: open'"
out="$("$bin/netext" hotspot open 2>&1)"; status=$?
check "netext hotspot open is refused while no helper waits for a person (exit $status)" bash -c "[ $status -eq 3 ] && grep -q 'is maintaining, not waiting for a person' <<< \"\$1\"" _ "$out"
check "the VPN connects with the kill switch still on" netext start Guarded
check "through the tunnel: the office's internal host answers" laptop ping -c 2 -W 2 -q 10.20.0.5
# The full tunnel now owns the default route; the helper's maintain still leaves by eth0 (its
# requests are bound to the network's interface) and reaches the portal from the laptop's address.
tunnel_logins=$(grep -c 'POST /login from 198.51.100.2: accepted' "$work/portal.log")
check "with the full tunnel up, the helper keeps maintaining out of eth0 (bound), not through the tunnel" \
  lab_wait "[ \$(grep -c 'POST /login from 198.51.100.2: accepted' '$work/portal.log') -gt $tunnel_logins ]" 10
netext stop Guarded > /dev/null
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2> /dev/null
check "netextd stopping: the helper logs off at the portal" lab_wait "grep -q 'POST /logout from 198.51.100.2' <(tail -n 5 '$work/portal.log')" 5
check "netextd logged the helper's states" grep -q 'hotspot helper.*state=maintaining' "$work/netextd.log"

# 10. Every network eth0 joins is handed to the helpers, captive or not, the moment the Wi-Fi
# service signals the join (NetworkManager's device StateChanged, heard on a D-Bus connection of
# netextd's own): netextd starts again on the café's network, then eth0 moves to the office's.
log_from=$(( $(wc -l < "$work/netextd.log") + 1 ))
new_log() { tail -n "+$log_from" "$work/netextd.log"; }
e2e_start_netextd
check "netextd hears the Wi-Fi service's association signals" lab_wait "new_log | grep -q \"hearing the Wi-Fi service's association signals\"" 15
check "… the café's network, joined before netextd started, is read at its start" lab_wait "new_log | grep -q 'Wi-Fi network joined.*by=start.*interface=eth0.*ssid=\"Café Libre\"'" 15
check "… and its helper maintains it again" lab_wait "status_says 'helper session: maintaining on eth0, chosen helper org.netext.hotspot.form'" 20
logoffs_before=$(grep -c 'POST /logout from 198.51.100.2' "$work/portal.log")
check "eth0 moves to \"Office Wi-Fi\" (netext hotspot configure, WPA2)" bash -c "printf 'office passphrase\n' | '$bin/netext' hotspot configure 'Office Wi-Fi' --passphrase-stdin | grep -q 'configured with NetworkManager'"
check "netextd hears the move by the service's signal (its own poll is 10 s away): the café's network left, the office's joined" \
  lab_wait "new_log | grep -q 'Wi-Fi network left.*by=signal.*ssid=\"Café Libre\"' && new_log | grep -q 'Wi-Fi network joined.*by=signal.*ssid=\"Office Wi-Fi\"'" 3
check "the café's helper logs off at the portal as its network is left" lab_wait "[ \$(grep -c 'POST /logout from 198.51.100.2' '$work/portal.log') -gt $logoffs_before ]" 5
check "the office's network, which is not captive, is handed to the helpers too: unclaimed by the café's helper" \
  lab_wait "new_log | grep -q 'hotspot helper.*ssid=\"Office Wi-Fi\".*state=unclaimed'" 5
check "… and netext hotspot status says so" lab_wait "status_says 'helper session: unclaimed on eth0'" 5
check "the office's passphrase is in no log" bash -c "! grep -rq 'office passphrase' '$work'/*.log"
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2> /dev/null

e2e_finish "$work/netextd.log" "$work/dnsmasq.log" "$work/portal.log"
