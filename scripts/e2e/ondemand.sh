#!/usr/bin/env bash
# End-to-end checks of connect-on-demand in a namespace lab: rules evaluated in order (DNS search
# domain, probe URL, interface type, connect; SSIDs through a stand-in NetworkManager), re-evaluated
# as the network and resolver change, a killed provider restarted, and an explicit stop turning
# on-demand off. Needs root, dbus-daemon and python3-dbusmock.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/ondemand.sh   Prints one line per check; exits non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh ondemand
source scripts/lib/wifi-mock.sh
source scripts/lib/install-packages.sh
netext_install iproute2 iputils-ping curl python3 dbus-daemon python3-dbusmock > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }
status_is() { "$bin/netext" status Office 2>/dev/null | grep -q "^Office: $1"; }
becomes() { lab_wait "'$bin/netext' status Office | grep -q '^Office: $1'" "${2:-15}"; }
stays() { local until=$((SECONDS + $2)); while [ $SECONDS -lt $until ]; do status_is "$1" || return 1; sleep 0.5; done; }

lab_up || { echo "FAIL lab"; exit 1; }
# A "trusted network" probe target on the internet side: 200 while the file exists, 404 after.
lab_in "$LAB_INTERNET" ip addr add 100.64.0.80/32 dev lo
mkdir -p "$work/www"
lab_spawn "$LAB_INTERNET" python3 -m http.server 8080 --bind 100.64.0.80 --directory "$work/www" 2>/dev/null
e2e_keys
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "routes": ["10.20.0.0/16"],
 "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
e2e_netextd_environment "$work/resolv.conf"
printf 'nameserver 198.51.100.53\nsearch home.test\n' > "$work/resolv.conf"
e2e_start_server
# NetworkManager's stand-in: the laptop's eth0 is a Wi-Fi device to it (not joined until the SSID checks).
check "a Wi-Fi service for the lab (python3-dbusmock's NetworkManager on a private bus)" wifi_mock_up "$LAB_LAPTOP" "$work/dbus"
e2e_start_netextd
lab_wait "ip netns exec $LAB_LAPTOP curl -s -o /dev/null http://100.64.0.80:8080/" 10

cat > "$work/rules.json" <<'JSON'
[{"action": "disconnect", "interfaceTypeMatch": "any", "dnsSearchDomainMatch": ["*.office.test"]},
 {"action": "disconnect", "interfaceTypeMatch": "any", "probeURL": "http://100.64.0.80:8080/trusted"},
 {"action": "ignore", "interfaceTypeMatch": "wiFi"},
 {"action": "connect", "interfaceTypeMatch": "ethernet"}]
JSON
echo "$client_key" | netext create --name Office --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
check "on-demand on with four rules" bash -c "'$bin/netext' on-demand Office on --rules '$work/rules.json' | grep -q 'on-demand on for Office: 4 rule(s)'"
check "rule 4 (connect on ethernet): the VPN comes up without netext start" becomes connected
check "the internal network answers through the tunnel" bash -c "ip netns exec $LAB_LAPTOP ping -c 1 -W 2 -q 10.20.0.5 > /dev/null"

provider=$(e2e_provider_pid)
killed=$(date +%s%N)
kill -9 "$provider"
lab_wait "'$bin/netext' status Office | grep -q '^Office: disconnected'" 10
check "provider killed -9: on-demand brings the VPN back" becomes connected 20
echo "recovered_s=$(awk -v ns=$(( $(date +%s%N) - killed )) 'BEGIN { printf "%.1f", ns / 1e9 }')"

touch "$work/www/trusted"
check "rule 2 (the probe URL answers 200: a trusted network): disconnected" becomes disconnected
rm "$work/www/trusted"
check "the probe answers 404: rule 4 connects again" becomes connected

printf 'nameserver 198.51.100.53\nsearch corp.office.test\n' > "$work/resolv.conf"
check "rule 1 (search domain within *.office.test): disconnected" becomes disconnected
printf 'nameserver 198.51.100.53\nsearch home.test\n' > "$work/resolv.conf"
check "another search domain: connected again" becomes connected
# Ignore, matched on the DNS server: the VPN is left as it is; another server: Disconnect.
cat > "$work/rules2.json" <<'JSON'
[{"action": "ignore", "interfaceTypeMatch": "any", "dnsServerAddressMatch": ["198.51.100.*"]},
 {"action": "disconnect", "interfaceTypeMatch": "any"}]
JSON
check "rules with a DNS server pattern are accepted" bash -c "'$bin/netext' on-demand Office on --rules '$work/rules2.json' > /dev/null"
check "rule 1 (ignore, DNS server 198.51.100.*): the connected VPN is left alone" stays connected 7
printf 'nameserver 192.0.2.53\nsearch home.test\n' > "$work/resolv.conf"
check "another DNS server: rule 2 (disconnect)" becomes disconnected
printf 'nameserver 198.51.100.53\nsearch home.test\n' > "$work/resolv.conf"
check "ignore leaves a disconnected VPN down too" stays disconnected 7
check "back to the first rules" bash -c "'$bin/netext' on-demand Office on --rules '$work/rules.json' > /dev/null"
check "… connected" becomes connected
check "decisions are re-evaluated on kernel network events" grep -q 'reason="network change"' "$work/netextd.log"
check "decisions are logged with the rule that matched" grep -q 'decision="connect (rule 4)"' "$work/netextd.log"

check "explicit stop" netext stop Office
check "an explicit stop turns on-demand off" bash -c "'$bin/netext' show Office | grep -q 'on demand:   disabled'"
check "and the VPN stays down" stays disconnected 7
check "on-demand on again" bash -c "'$bin/netext' on-demand Office on > /dev/null"
check "… and the rules bring it up" becomes connected
check "disable" bash -c "'$bin/netext' disable Office > /dev/null"
check "stays down while disabled" stays disabled 5

# SSIDMatch: trusted Wi-Fi keeps the VPN off. The laptop joins through `netext hotspot configure`
# (NetExt's D-Bus client → NetworkManager's API); netextd's on-demand reads the joined SSID.
cat > "$work/ssid.json" <<'JSON'
[{"action": "disconnect", "interfaceTypeMatch": "wiFi", "ssidMatch": ["Office Wi-Fi"]},
 {"action": "connect", "interfaceTypeMatch": "any"}]
JSON
check "SSID rules accepted" bash -c "'$bin/netext' enable Office > /dev/null && '$bin/netext' on-demand Office on --rules '$work/ssid.json' > /dev/null"
check "no Wi-Fi network joined: rule 2 connects" becomes connected
check "netext hotspot list shows what the Wi-Fi service sees" bash -c "'$bin/netext' hotspot list | grep -q '^Office Wi-Fi  02:00:00:00:00:01  70 %    yes'"
check "netext hotspot configure joins the office Wi-Fi (passphrase from stdin)" bash -c "echo 'office passphrase' | '$bin/netext' hotspot configure 'Office Wi-Fi' --passphrase-stdin | grep -q 'configured with NetworkManager'"
check "on the trusted SSID rule 1 disconnects" becomes disconnected
check "netextd logged the SSID it matched" grep -q 'network.ssid="Office Wi-Fi"' "$work/netextd.log"
check "netextd heard the join by the Wi-Fi service's signal (NetworkManager's device StateChanged), not by a poll" \
  grep -q 'Wi-Fi network joined.*by=signal.*interface=eth0.*ssid="Office Wi-Fi"' "$work/netextd.log"
check "the configuration is listed as NetExt's" bash -c "'$bin/netext' hotspot configured | grep -qx 'Office Wi-Fi'"
check "joining the café's open network" bash -c "'$bin/netext' hotspot configure 'Café Libre' --join-once > /dev/null"
check "another SSID: rule 2 connects again" becomes connected
check "the passphrase is in no log" bash -c "! grep -rq 'office passphrase' '$work'/*.log"
check "netext hotspot remove forgets it" bash -c "'$bin/netext' hotspot remove 'Office Wi-Fi' > /dev/null && ! '$bin/netext' hotspot configured | grep -q Office"
check "disable again" bash -c "'$bin/netext' disable Office > /dev/null"

# EvaluateConnection: the VPN comes up when a program resolves a name that needs it. The server
# now pushes the office's DNS for office.test, and netextd manages the namespace's real resolver
# file so that getent goes through its stub.
lab_in "$LAB_OFFICE" ip addr add 10.20.0.53/32 dev lo
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/dns-responder.py 10.20.0.53 office.test 10.20.0.5 "$work/office-dns.log"
umask 077
cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "0.0.0.0:51900", "ipv4Pool": "10.99.0.0/24", "routes": ["10.20.0.0/16"],
 "dnsServers": ["10.20.0.53"], "matchDomains": ["office.test"], "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
umask 022
for pid in $(ip netns pids "$LAB_OFFICE"); do grep -q netext-server "/proc/$pid/cmdline" 2>/dev/null && kill "$pid"; done
for pid in $(ip netns pids "$LAB_LAPTOP"); do grep -q netextd "/proc/$pid/cmdline" 2>/dev/null && kill "$pid"; done
gone() { for pid in $(ip netns pids "$1"); do grep -q "$2" "/proc/$pid/cmdline" 2>/dev/null && return 1; done; return 0; }
lab_wait "gone '$LAB_OFFICE' netext-server && gone '$LAB_LAPTOP' netextd" 10
e2e_start_server "$work/server2.log"
mkdir -p "/etc/netns/$LAB_LAPTOP"
resolv="/etc/netns/$LAB_LAPTOP/resolv.conf"
echo "nameserver 198.51.100.53" > "$resolv"
NETEXT_RESOLV_CONF="$resolv" e2e_start_netextd "$work/netextd2.log"
cat > "$work/lazy.json" <<'JSON'
[{"action": "evaluateConnection", "interfaceTypeMatch": "any", "connectionRules": [
   {"action": "neverConnect", "matchDomains": ["public.office.test"]},
   {"action": "connectIfNeeded", "matchDomains": ["office.test"]}]}]
JSON
echo "$client_key" | netext create --name Lazy --provider com.netext.tunnel --server 203.0.113.2:51900 --config "serverPublicKey=$server_public" --password-stdin --enable > /dev/null
netext on-demand Lazy on --rules "$work/lazy.json" > /dev/null
lab_wait "grep -qx 'nameserver 127.0.0.153' '$resolv'" 10
check "EvaluateConnection: the resolver file points at netextd's stub while the VPN is down" grep -qx "nameserver 127.0.0.153" "$resolv"
check "EvaluateConnection: the VPN stays down meanwhile" bash -c "'$bin/netext' status Lazy | grep -q '^Lazy: disconnected'"
ip netns exec "$LAB_LAPTOP" getent hosts public.office.test > /dev/null
check "a neverConnect name does not bring it up" bash -c "'$bin/netext' status Lazy | grep -q '^Lazy: disconnected'"
check "a connectIfNeeded name brings the VPN up, then resolves through it" bash -c "ip netns exec $LAB_LAPTOP getent hosts intranet.office.test | grep -q '^10.20.0.5 '"
check "EvaluateConnection: connected" bash -c "'$bin/netext' status Lazy | grep -q '^Lazy: connected'"
check "EvaluateConnection: netextd says why" grep -q "a program resolved a name that needs the VPN" "$work/netextd2.log"
check "the office's DNS server answered through the tunnel" grep -q "^intranet.office.test 1 from 10.99.0.2$" "$work/office-dns.log"
check "disable Lazy" bash -c "'$bin/netext' disable Lazy > /dev/null"
lab_wait "grep -qx 'nameserver 198.51.100.53' '$resolv'" 10
check "EvaluateConnection off: the resolver file is restored" grep -qx "nameserver 198.51.100.53" "$resolv"

e2e_finish "$work/netextd.log" "$work/netextd2.log" "$work/server.log"
