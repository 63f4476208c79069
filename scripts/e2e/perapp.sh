#!/usr/bin/env bash
# End-to-end checks of per-app VPN in a namespace lab: programs in the laptop reach the same
# destinations, and only the app bound to the tunnel goes through it (include mode), or only the
# excluded app goes around a full tunnel with a kill switch (exclude mode). Apps are launched
# with `netext run --app`, or appear as a Flatpak-style systemd scope after the binding; their
# DNS queries go to the office's resolver (bound) or the home resolver (others, and excluded
# apps); IPv4 and IPv6; captures on the underlay show which path each flow took. Every nft
# table and cgroup is gone after disable, netextd's stop and its crash. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/perapp.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh perapp

# The cgroup v2 hierarchy as this script sees it; netextd mounts its own view in the laptop's
# mount namespace (ip netns exec remounts /sys without cgroups). Apps and scopes live below
# names unique to this run, removed at exit.
cgroot="$(findmnt -n -t cgroup2 -o TARGET | head -1)"
[ -n "$cgroot" ] || { echo "FAIL no cgroup v2 hierarchy is mounted"; exit 1; }
launch="netext-apps-$LAB_PREFIX"
slice="$LAB_PREFIX.slice"
perapp_cleanup() {
  # Processes left in the run's cgroups go first, then the cgroups (children before parents).
  for dir in "$cgroot/$launch" "$cgroot/$slice"; do
    [ -d "$dir" ] || continue
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  e2e_cleanup
}
trap perapp_cleanup EXIT

lab_up || { echo "FAIL lab"; exit 1; }
mkdir -p "/etc/netns/$LAB_LAPTOP"
resolv="/etc/netns/$LAB_LAPTOP/resolv.conf"
echo "nameserver 198.51.100.53" > "$resolv"
# The home resolver (on the internet) and the office's answer the same name differently.
lab_in "$LAB_INTERNET" sh -c 'ip addr add 198.51.100.53/32 dev lo && ip addr add 100.64.0.80/32 dev lo && ip -6 addr add 2001:db8:ff::80/128 dev lo && ip -6 addr add 2001:db8:ff::53/128 dev lo'
lab_in "$LAB_OFFICE" ip addr add 10.20.0.53/32 dev lo
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.53 lab.test 100.64.0.80 "$work/home-dns.log"
# The same home resolver's answers on IPv6 (a laptop whose resolver file names an IPv6 server).
lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 2001:db8:ff::53 lab.test 100.64.0.80 "$work/home-dns.log"
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/dns-responder.py 10.20.0.53 lab.test 10.20.0.5 "$work/office-dns.log"
mkdir -p "$work/www"; echo "internal page" > "$work/www/index.html"; echo "public page" > "$work/www/public.html"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8080 --bind 10.20.0.5 --directory "$work/www"
lab_spawn "$LAB_OFFICE" python3 -m http.server 8081 --bind fd20::5 --directory "$work/www"
# The public server logs who asked: the laptop's own address (direct) or the office's (tunnel).
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 100.64.0.80 --directory '$work/www' 2>> '$work/public4.log'"
lab_spawn "$LAB_INTERNET" sh -c "exec python3 -m http.server 8080 --bind 2001:db8:ff::80 --directory '$work/www' 2>> '$work/public6.log'"

e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "ipv6Pool": "fd99::/64",
 "routes": ["10.20.0.0/16", "fd20::/64"], "masquerade": ["eth0"], "dnsServers": ["10.20.0.53"],
 "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
e2e_netextd_environment "$resolv"
export NETEXT_APP_CGROUP="$launch"
e2e_start_server
# Every server answers before the checks begin (a slow Python start is not a failure of ours).
lab_wait "office curl -s -o /dev/null http://10.20.0.5:8080/" 15
lab_wait "office curl -s -o /dev/null 'http://[fd20::5]:8081/'" 15
lab_wait "ip netns exec $LAB_INTERNET curl -s -o /dev/null http://100.64.0.80:8080/public.html" 15
lab_wait "ip netns exec $LAB_INTERNET curl -s -o /dev/null 'http://[2001:db8:ff::80]:8080/public.html'" 15

start_netextd() { # start_netextd [VAR=VALUE…]
  lab_spawn "$LAB_LAPTOP" env "$@" sh -c "mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec '$bin/netextd' 2>> '$work/netextd.log'"; NETEXTD_PID=$!
  lab_wait "'$bin/netext' status" 15
}
start_netextd

office_app="org.example.$LAB_PREFIX.Office"
viewer_app="org.example.$LAB_PREFIX.Viewer"
late_app="org.example.$LAB_PREFIX.Late"
direct_app="org.example.$LAB_PREFIX.Direct"
as_app() { local app="$1"; shift; laptop "$bin/netext" run --app "$app" -- "$@" 2>> "$work/run.log"; }
page() { curl -s -m "${2:-4}" "$1" 2>/dev/null; }
internal4() { "$@" curl -s -m 4 http://10.20.0.5:8080/ 2>/dev/null | grep -q 'internal page'; }
internal6() { "$@" curl -s -m 4 'http://[fd20::5]:8081/' 2>/dev/null | grep -q 'internal page'; }
public4_from() { # public4_from SOURCE COMMAND…: the public IPv4 page loads, and the server saw SOURCE
  local source="$1"; shift
  : > "$work/public4.log"
  "$@" curl -s -m 4 http://100.64.0.80:8080/public.html 2>/dev/null | grep -q 'public page' && grep -q "^$source - " "$work/public4.log"
}
public6_from() {
  local source="$1"; shift
  : > "$work/public6.log"
  "$@" curl -s -m 4 'http://[2001:db8:ff::80]:8080/public.html' 2>/dev/null | grep -q 'public page' && grep -q "^$source - " "$work/public6.log"
}
resolves_to() { # resolves_to ADDRESS COMMAND…: www.lab.test resolves to ADDRESS
  local address="$1"; shift
  "$@" getent ahostsv4 www.lab.test 2>/dev/null | grep -q "^$address "
}
no_table() { ! laptop nft list tables 2>/dev/null | grep -q netextd_apps; }

# ---- Include mode: a per-app VPN
echo "$client_key" | netext create --name PerApp --per-app --provider com.netext.tunnel --server 203.0.113.2:51900 \
  --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
check "netext app bind refuses a name that is not an app identifier, saying why" bash -c "'$bin/netext' app bind 'not an id' --vpn PerApp 2>&1 | grep -q \"'not an id' is not an app identifier\""
check "netext app bind (include)" netext app bind "$office_app" --vpn PerApp
check "netext app bind of a second app" netext app bind "$viewer_app" --vpn PerApp
check "netext app bind --exclude on a per-app VPN is refused with a reason" bash -c "'$bin/netext' app bind '$direct_app' --vpn PerApp --exclude 2>&1 | grep -q 'carries only the apps bound to it'"
# A program launched as an app before its app is bound (documented: steered from the binding on).
laptop "$bin/netext" run --app "$late_app" -- sh -c "while [ ! -e '$work/go' ]; do sleep 0.1; done; curl -s -m 4 http://10.20.0.5:8080/ > '$work/late.out'" 2>> "$work/run.log" &
late_pid=$!
check "VPN starts" netext start PerApp
check "a policy rule sends marked flows to the tunnel's table" bash -c "ip netns exec $LAB_LAPTOP ip rule show | grep -Eq 'fwmark 0x0*800000/0x0*ff0000 lookup 7100'"
check "the machine's resolver file is left alone by a per-app VPN" grep -qx "nameserver 198.51.100.53" "$resolv"

lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/include.pcap"
check "the bound app reaches the internal page (IPv4)" internal4 as_app "$office_app"
# The eBPF program on the app's cgroup marked the socket at its creation: connect() already chose
# the tunnel's route, and so the tunnel's source address (no address translation needed).
sockets() { as_app "$office_app" python3 -c 'import socket, subprocess
s = socket.create_connection(("10.20.0.5", 8080), timeout=10)
print(subprocess.run(["ss", "-tneH", "dst", "10.20.0.5"], capture_output=True, text=True).stdout)'; }
sockets_marked() {
  local seen; seen="$(sockets 2>&1)"
  grep -q '10.99.0.2:[0-9]* *10.20.0.5:8080 .*fwmark:0x800000' <<<"$seen" || { echo "ss saw: $seen" >&2; return 1; }
}
check "a bound app's socket is marked at creation and leaves from the tunnel's address" sockets_marked
check "the eBPF mark alone steers the app: no table rule for its cgroup, no address translation" bash -c "nsenter --net=/run/netns/$LAB_LAPTOP nft list table inet netextd_apps > '$work/table.txt' && ! grep -q 'socket cgroupv2 level 2 @apps_80\|masquerade' '$work/table.txt'"
check "another program does not" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 http://10.20.0.5:8080/ | grep -q 'internal page'"
check "the bound app reaches the internal page (IPv6)" internal6 as_app "$office_app"
check "another program does not (IPv6)" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 'http://[fd20::5]:8081/' | grep -q 'internal page'"
check "the bound app reaches the public server through the tunnel (seen from the office, 203.0.113.2)" public4_from 203.0.113.2 as_app "$office_app"
check "another program reaches it directly (seen from 198.51.100.2)" public4_from 198.51.100.2 laptop
check "IPv6: the bound app through the tunnel (seen from 2001:db8:2::2)" public6_from 2001:db8:2::2 as_app "$office_app"
check "IPv6: another program directly (seen from 2001:db8:1::2)" public6_from 2001:db8:1::2 laptop
: > "$work/office-dns.log"; : > "$work/home-dns.log"
check "DNS: the bound app's name resolves through the office's resolver (10.20.0.5)" resolves_to 10.20.0.5 as_app "$office_app"
check "DNS: the office's resolver saw the query from the tunnel address" grep -q "^www.lab.test 1 from 10.99.0.2" "$work/office-dns.log"
check "DNS: the home resolver never saw the bound app's query" bash -c "! grep -q 'www.lab.test 1' '$work/home-dns.log'"
check "DNS: another program's name resolves through the home resolver (100.64.0.80)" resolves_to 100.64.0.80 laptop
check "DNS: the home resolver saw that one from the laptop" grep -q "^www.lab.test 1 from 198.51.100.2" "$work/home-dns.log"
lab_capture_stop "$dump" "$work/include.pcap"
direct=$(laptop tcpdump -n -r "$work/include.pcap" 'host 10.20.0.5 or host fd20::5' 2>/dev/null | wc -l)
cleartext=$(laptop tcpdump -n -A -r "$work/include.pcap" 2>/dev/null | grep -c 'internal page')
encrypted=$(laptop tcpdump -n -r "$work/include.pcap" 'udp port 51900' 2>/dev/null | wc -l)
check "underlay: the other program's attempts went out directly, in the clear ($direct packets to the internal hosts)" test "$direct" -gt 0
check "underlay: the internal page never crossed it in the clear ($cleartext)" test "$cleartext" -eq 0
check "underlay: the bound app's flows crossed it inside the tunnel ($encrypted datagrams)" test "$encrypted" -gt 0
home_dns=$(laptop tcpdump -n -r "$work/include.pcap" 'port 53 and host 198.51.100.53' 2>/dev/null | wc -l)
office_dns=$(laptop tcpdump -n -r "$work/include.pcap" 'port 53 and not host 198.51.100.53' 2>/dev/null | wc -l)
check "underlay: DNS in the clear only with the home resolver ($home_dns packets); the bound app's went inside the tunnel ($office_dns others)" bash -c "[ $home_dns -gt 0 ] && [ $office_dns -eq 0 ]"

# A Flatpak-style scope made after the binding (as a desktop makes one when an app starts).
scope="$slice/app-flatpak-$viewer_app-4711.scope"
mkdir -p "$cgroot/$scope"
check "a scope made after the binding is listed by netext apps" lab_wait "'$bin/netext' apps | grep -q 'app-flatpak-$viewer_app-4711.scope'" 5
in_scope() { sh -c "echo \$\$ > '$cgroot/$scope/cgroup.procs' && exec ip netns exec '$LAB_LAPTOP' \"\$@\"" sh "$@"; }
check "a program in that scope reaches the internal page through the tunnel" internal4 in_scope
as_nobody() { laptop setpriv --reuid nobody --regid nogroup --clear-groups "$bin/netext" run --quiet --app "$@" 2>> "$work/run.log"; }
check "an ordinary user may launch an app into the per-app VPN" internal4 as_nobody "$office_app" --
check "netext run --json says where the program was placed, on standard error" bash -c "ip netns exec $LAB_LAPTOP '$bin/netext' run --json --app '$office_app' -- true 2>&1 >/dev/null | python3 -c 'import json,sys; p=json.loads(sys.stdin.readline()); sys.exit(0 if p[\"cgroup\"] == \"$launch/$office_app\" and p[\"configurationName\"] == \"PerApp\" and p[\"mode\"] == \"include\" else 1)'"
check "netext apps --json names both apps and their cgroups" bash -c "'$bin/netext' apps --json | python3 -c 'import json,sys; a={x[\"app\"]: x for x in json.load(sys.stdin)}; sys.exit(0 if a[\"$office_app\"][\"cgroups\"] == [\"$launch/$office_app\"] and a[\"$viewer_app\"][\"cgroups\"] == [\"$scope\"] and a[\"$viewer_app\"][\"isConnected\"] else 1)'"

# The program launched before its app was bound: bound now, it is steered from now on.
check "netext app bind of the app already running" netext app bind "$late_app" --vpn PerApp
touch "$work/go"; wait "$late_pid"
check "the app launched before its binding reaches the internal page once bound" grep -q 'internal page' "$work/late.out"

check "netext app unbind" netext app unbind "$late_app" --vpn PerApp
check "after unbind, that app no longer reaches the internal page" bash -c "! ip netns exec $LAB_LAPTOP '$bin/netext' run --app '$late_app' -- curl -s -m 2 http://10.20.0.5:8080/ 2>/dev/null | grep -q 'internal page'"

# A domain-limited app (matchDomains): through the tunnel only toward what the office's resolver
# answered for lab.test; its other names and destinations go as if there were no tunnel.
mail_app="org.example.$LAB_PREFIX.Mail"
not_internal4() { ! internal4 "$@"; }
check "netext app bind --domain with --exclude is refused with a reason" bash -c "'$bin/netext' app bind '$mail_app' --vpn PerApp --domain lab.test --exclude 2>&1 | grep -q 'limits what a per-app VPN carries'"
check "netext app bind --domain" netext app bind "$mail_app" --vpn PerApp --domain lab.test
check "domain-limited: before any answer, the app's flow to the internal address does not enter the tunnel" not_internal4 as_app "$mail_app"
: > "$work/office-dns.log"; : > "$work/home-dns.log"
lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/domains.pcap"
# The first resolution of the name and the connection right after it: the answer reached curl
# only once its address was in the rule's set.
check "domain-limited: the app's first connection by name (resolved just now) reaches the internal page through the tunnel" bash -c "ip netns exec $LAB_LAPTOP '$bin/netext' run --app '$mail_app' -- curl -s -m 4 http://www.lab.test:8080/ 2>/dev/null | grep -q 'internal page'"
check "domain-limited DNS: the office's resolver answered the name, asked from the tunnel address" grep -q "^www.lab.test 1 from 10.99.0.2" "$work/office-dns.log"
check "domain-limited DNS: the home resolver never saw it" bash -c "! grep -q 'www.lab.test' '$work/home-dns.log'"
check "domain-limited: the answered address is in the rule's set, with a timeout" bash -c "nsenter --net=/run/netns/$LAB_LAPTOP nft list set inet netextd_apps dst4_80_0 | grep -q '10.20.0.5 timeout'"
check "domain-limited DNS: a name outside its domains goes to the home resolver, from the laptop" bash -c "ip netns exec $LAB_LAPTOP '$bin/netext' run --app '$mail_app' -- getent ahostsv4 elsewhere.example; grep -q '^elsewhere.example 1 from 198.51.100.2' '$work/home-dns.log'"
check "domain-limited: the app's flow to another destination goes directly (seen from 198.51.100.2)" public4_from 198.51.100.2 as_app "$mail_app"
lab_capture_stop "$dump" "$work/domains.pcap"
office_dns=$(laptop tcpdump -n -r "$work/domains.pcap" 'port 53 and not host 198.51.100.53' 2>/dev/null | wc -l)
cleartext=$(laptop tcpdump -n -A -r "$work/domains.pcap" 2>/dev/null | grep -c 'internal page')
check "underlay: the domain-limited app's office query and page crossed only inside the tunnel ($office_dns DNS packets, $cleartext pages in the clear)" bash -c "[ $office_dns -eq 0 ] && [ $cleartext -eq 0 ]"
# A resolver file naming an IPv6 server: the app's query goes to netextd's resolver on ::1.
echo "nameserver 2001:db8:ff::53" > "$resolv"
: > "$work/office-dns.log"
check "domain-limited DNS over IPv6: a name in the domain resolves through the office's resolver (via netextd's resolver on ::1)" bash -c "ip netns exec $LAB_LAPTOP '$bin/netext' run --app '$mail_app' -- getent ahostsv4 v6.lab.test 2>/dev/null | grep -q '^10.20.0.5 ' && grep -q '^v6.lab.test 1 from 10.99.0.2' '$work/office-dns.log'"
echo "nameserver 198.51.100.53" > "$resolv"
check "netext apps shows the domain and the answered address" bash -c "'$bin/netext' apps | grep '$mail_app' | grep -q 'through for lab.test (1 address answered)'"
check "netext app unbind of the domain-limited app" netext app unbind "$mail_app" --vpn PerApp
check "unbound: its rule's sets are gone" bash -c "! nsenter --net=/run/netns/$LAB_LAPTOP nft list table inet netextd_apps | grep -q dst4_80_0"

# netextd killed -9 and restarted: the kernel kept the table; the new netextd takes over.
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
for pid in $(e2e_provider_pid); do kill -9 "$pid"; done
start_netextd
# nft names a set's cgroups by path only where cgroup2 is mounted: this script's mount namespace.
socket_mark() { laptop "$bin/netext" run --quiet --app "$office_app" -- python3 -c 'import socket; s = socket.socket(); print(s.getsockopt(socket.SOL_SOCKET, 36))' 2>> "$work/run.log"; } # SO_MARK
remarked() { nsenter --net="/run/netns/$LAB_LAPTOP" nft list table inet netextd_apps > /dev/null && [ "$(socket_mark)" = $((0x800000)) ]; }
check "netextd restarted: the steering table is restored and the app's new sockets are marked again" remarked
check "netextd restarted: VPN starts again" netext start PerApp
check "netextd restarted: the bound app reaches the internal page" internal4 as_app "$office_app"

# nftables alone (a kernel without cgroup eBPF, or NETEXT_APP_SOCKET_MARKS=off): netextd killed
# again and started without socket marks. It clears the program the last one left, and the
# table marks the app's packets and translates their source instead.
kill -9 "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
for pid in $(e2e_provider_pid); do kill -9 "$pid"; done
start_netextd NETEXT_APP_SOCKET_MARKS=off
table_marks() { nsenter --net="/run/netns/$LAB_LAPTOP" nft list table inet netextd_apps > "$work/table.txt" && grep -q "socket cgroupv2 level 2 @apps_80 counter" "$work/table.txt" && grep -q masquerade "$work/table.txt" && grep -q "$launch/$office_app" "$work/table.txt"; }
check "nftables alone: VPN starts" netext start PerApp
check "nftables alone: the app's cgroup is in the set, a rule marks it, a masquerade translates it" table_marks
unmarked() { [ "$(socket_mark)" = 0 ]; }
check "nftables alone: the last netextd's program was cleared (new sockets carry no mark)" unmarked
check "nftables alone: the bound app reaches the internal page (IPv4)" internal4 as_app "$office_app"
check "nftables alone: the bound app reaches the internal page (IPv6)" internal6 as_app "$office_app"
check "nftables alone: another program does not" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 http://10.20.0.5:8080/ | grep -q 'internal page'"
check "nftables alone: the bound app reaches the public server through the tunnel (seen from 203.0.113.2)" public4_from 203.0.113.2 as_app "$office_app"
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
start_netextd
marked_again() { "$bin/netext" start PerApp > /dev/null && [ "$(socket_mark)" = $((0x800000)) ]; }
check "netextd with socket marks again: VPN starts, the app's sockets are marked" marked_again
# Per-app on demand: the first flow of a bound app starts the VPN; nobody else's does.
check "stop the per-app VPN" netext stop PerApp
check "on-demand on, without rules" netext on-demand PerApp on
check "another program's flow does not start it" bash -c "ip netns exec $LAB_LAPTOP curl -s -m 2 -o /dev/null http://10.20.0.5:8080/; sleep 1; '$bin/netext' status PerApp | grep -q 'PerApp: disconnected'"
started=$(date +%s%N)
check "on demand: the bound app's first connection starts the VPN and gets through once it is up" internal4 as_app "$office_app"
echo "ondemand_first_flow_ms=$(( ($(date +%s%N) - started) / 1000000 ))"
check "on demand: connected" bash -c "'$bin/netext' status PerApp | grep -q 'PerApp: connected'"
check "on demand: netextd says a bound app's flow started it" grep -q "on-demand: a bound app opened a connection" "$work/netextd.log"
check "on demand: while connected, no packet of the app is held" bash -c "! ip netns exec $LAB_LAPTOP nft list table inet netextd_apps | grep -q 'log group'"
check "disable: the per-app VPN stops" netext disable PerApp
check "after disable: no steering table" no_table
check "after disable: no fwmark rule" bash -c "! ip netns exec $LAB_LAPTOP ip rule show | grep -q fwmark"
# The crashed netextd's socket-mark program was replaced by the restarted one's, which disable
# removed: nothing marks the app's sockets any more.
check "after a crash, restart and disable: the app's new sockets carry no mark" unmarked

# ---- Exclude mode: a full tunnel with a kill switch, one app let around it
echo "$client_key" | netext create --name Full --provider com.netext.tunnel --server 203.0.113.2:51900 \
  --config "serverPublicKey=$server_public" --password-stdin --include-all-networks --enable > /dev/null
check "netext app bind without --exclude on a destination-routed tunnel is refused with a reason" bash -c "'$bin/netext' app bind '$direct_app' --vpn Full 2>&1 | grep -q 'routes by destination'"
check "netext app bind --exclude" netext app bind "$direct_app" --vpn Full --exclude
check "the same app cannot be bound to a second tunnel" bash -c "'$bin/netext' app bind '$direct_app' --vpn PerApp 2>&1 | grep -q 'already'"
check "full tunnel starts" netext start Full
check "netext apps says the excluded app bypasses Full" bash -c "'$bin/netext' apps | grep '$direct_app' | grep -q 'bypasses'"
lab_capture_start dump "$LAB_LAPTOP" eth0 "$work/exclude.pcap"
check "exclude: an ordinary program reaches the public server through the tunnel" public4_from 203.0.113.2 laptop
check "exclude: the excluded app reaches it directly" public4_from 198.51.100.2 as_app "$direct_app"
check "exclude IPv6: the excluded app directly" public6_from 2001:db8:1::2 as_app "$direct_app"
check "an ordinary user may not launch an app around the tunnel (and its kill switch), and is told why" bash -c "ip netns exec $LAB_LAPTOP setpriv --reuid nobody --regid nogroup --clear-groups '$bin/netext' run --app '$direct_app' -- true 2>&1 | grep -q 'needs root or membership'"
check "exclude: the excluded app does not reach the internal network" bash -c "! ip netns exec $LAB_LAPTOP '$bin/netext' run --app '$direct_app' -- curl -s -m 2 http://10.20.0.5:8080/ 2>/dev/null | grep -q 'internal page'"
: > "$work/home-dns.log"; : > "$work/office-dns.log"
check "exclude DNS: the excluded app's name resolves outside the tunnel (100.64.0.80)" resolves_to 100.64.0.80 as_app "$direct_app"
check "exclude DNS: the home resolver saw it from the laptop's own address" grep -q "^www.lab.test 1 from 198.51.100.2" "$work/home-dns.log"
check "exclude DNS: the tunnel's resolver never saw the excluded app's query" bash -c "! grep -q 'www.lab.test' '$work/office-dns.log'"
kill -9 "$(e2e_provider_pid)"
lab_wait "'$bin/netext' status Full | grep -q 'disconnected'" 10
check "kill switch with the provider dead: an ordinary program is blocked" bash -c "! ip netns exec $LAB_LAPTOP curl -s -m 2 http://100.64.0.80:8080/public.html | grep -q 'public page'"
check "kill switch with the provider dead: the excluded app still goes out directly" public4_from 198.51.100.2 as_app "$direct_app"
lab_capture_stop "$dump" "$work/exclude.pcap"
leaked=$(laptop tcpdump -n -r "$work/exclude.pcap" 'host 100.64.0.80 and not host 198.51.100.2' 2>/dev/null | wc -l)
direct=$(laptop tcpdump -n -r "$work/exclude.pcap" 'host 100.64.0.80 and host 198.51.100.2' 2>/dev/null | wc -l)
check "underlay: the excluded app's flows went out directly ($direct packets)" test "$direct" -gt 0
check "underlay: only the laptop's own address talked to the public server directly ($leaked others)" test "$leaked" -eq 0

check "disable the full tunnel" netext disable Full
check "after disable: no steering table and no guard" bash -c "! ip netns exec $LAB_LAPTOP nft list tables | grep -q 'netextd_apps\|netextd_guard'"
kill -TERM "$NETEXTD_PID"; wait "$NETEXTD_PID" 2>/dev/null
check "after netextd stops: its launch cgroups are removed" bash -c "[ -z \"\$(find '$cgroot/$launch' -mindepth 1 -type d 2>/dev/null)\" ]"
e2e_finish "$work/netextd.log" "$work/server.log" "$work/run.log"
