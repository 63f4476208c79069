#!/usr/bin/env bash
# End-to-end checks of `netext hotspot` against Debian's wpa_supplicant (nobody here wrote it),
# the Wi-Fi service of machines without NetworkManager. This machine has no radio, so
# wpa_supplicant runs in a namespace on a veth link named wlan0 with its `wired` driver: no scan
# list, but its D-Bus API (on a private bus standing in for the system bus) keeps, enables,
# writes and removes network blocks exactly as for Wi-Fi, and Hotspot 2.0 credentials through
# its control interface. Checks what NetExt asked of it in wpa_supplicant's own configuration
# file: the blocks NetExt wrote (marked in id_str), a WPA3 block with protected management
# frames, an enterprise block, a block NetExt did not write left alone, removal; a Hotspot 2.0
# credential (marked in provisioning_sp) with Passpoint selection on, replaced, removed, another's
# credential left alone, MCC/MNC refused. Needs root. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/wifi-wpa-supplicant.sh
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh wpa
source scripts/lib/install-packages.sh
source scripts/lib/private-bus.sh
netext_install wpasupplicant dbus-daemon > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

ip netns add "$LAB_LAPTOP" && ip -n "$LAB_LAPTOP" link add wlan0 type veth peer name wlan0-peer && ip -n "$LAB_LAPTOP" link set wlan0 up \
  || { echo "FAIL lab namespace"; exit 1; }
private_bus_up "$LAB_LAPTOP" "$work/bus" || { echo "FAIL the private bus did not start"; exit 1; }
# wpa_supplicant's file, with a network and a Hotspot 2.0 credential somebody else configured,
# and a control interface (Debian's service runs one in /run/wpa_supplicant).
cat > "$work/wpa.conf" <<CONF
ctrl_interface=$work/ctrl
update_config=1

network={
	ssid="Home"
	key_mgmt=NONE
}

cred={
	realm="other.lab.test"
	username="bob"
	password="bob's"
	domain="other.lab.test"
}
CONF
lab_spawn "$LAB_LAPTOP" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" wpa_supplicant -u -i wlan0 -D wired -c "$work/wpa.conf"
lab_wait "dbus-send --bus='$DBUS_SYSTEM_BUS_ADDRESS' --print-reply --dest=fi.w1.wpa_supplicant1 /fi/w1/wpa_supplicant1 org.freedesktop.DBus.Properties.Get string:fi.w1.wpa_supplicant1 string:Interfaces | grep -q Interfaces/" 15 \
  || { echo "FAIL wpa_supplicant did not come up on the bus with wlan0"; exit 1; }

block() { awk -v id="$1" 'BEGIN { RS = "network=\\{"; FS = "\n" } index($0, id) { print }' "$work/wpa.conf"; }
# The cred block holding $1, up to its closing brace.
cred_block() { awk -v id="$1" 'BEGIN { RS = "cred=\\{"; FS = "\n" } index($0, id) { split($0, parts, "\n}"); print parts[1] }' "$work/wpa.conf"; }

check "netext hotspot configure: WPA2, kept with wpa_supplicant" bash -c "echo 'office passphrase' | '$bin/netext' hotspot configure 'Office Wi-Fi' --passphrase-stdin | grep -qx 'Office Wi-Fi: configured with wpa_supplicant'"
office=$(block 'netext::4f66666963652057692d4669')
echo "$office" | sed 's/^/  /'
check "wpa_supplicant wrote NetExt's block to its file, marked in id_str" test -n "$office"
check "…with the SSID and WPA-PSK" bash -c "grep -q 'ssid=\"Office Wi-Fi\"' <<< '$office' && grep -q 'key_mgmt=WPA-PSK' <<< '$office'"
check "…with the passphrase (the file is wpa_supplicant's; the command line never had it)" grep -q 'psk="office passphrase"' <<< "$office"
check "…enabled (blocks added over D-Bus start disabled)" bash -c "! grep -q 'disabled=1' <<< '$office'"
check "netext hotspot configure --wpa3 --hidden: SAE with protected management frames" bash -c "echo 'lab passphrase' | '$bin/netext' hotspot configure Lab --passphrase-stdin --wpa3 --hidden > /dev/null"
lab=$(block 'netext::4c6162')
check "…key_mgmt=SAE, ieee80211w=2, scan_ssid=1 in the file" bash -c "grep -q 'key_mgmt=SAE' <<< '$lab' && grep -q 'ieee80211w=2' <<< '$lab' && grep -q 'scan_ssid=1' <<< '$lab'"
check "netext hotspot configure --eap peap: an enterprise block" bash -c "echo 'secret' | '$bin/netext' hotspot configure Corp --eap peap --username ada --password-stdin --trusted-server radius.lab.test > /dev/null"
corp=$(block 'netext::436f7270')
check "…key_mgmt=WPA-EAP, eap=PEAP, identity, phase2, domain_match" bash -c "grep -q 'key_mgmt=WPA-EAP' <<< '$corp' && grep -q 'eap=PEAP' <<< '$corp' && grep -q 'identity=\"ada\"' <<< '$corp' && grep -q 'phase2=\"auth=MSCHAPV2\"' <<< '$corp' && grep -q 'domain_match=\"radius.lab.test\"' <<< '$corp'"
check "netext hotspot configured lists NetExt's three, not Home" bash -c "'$bin/netext' hotspot configured | sort | tr '\n' ' ' | grep -qx 'Corp Lab Office Wi-Fi '"
check "configuring Office Wi-Fi again replaces its block (one in the file)" bash -c "echo 'new passphrase' | '$bin/netext' hotspot configure 'Office Wi-Fi' --passphrase-stdin > /dev/null && [ \$(grep -c 'netext::4f66666963652057692d4669' '$work/wpa.conf') -eq 1 ] && grep -q 'psk=\"new passphrase\"' '$work/wpa.conf'"
check "netext hotspot remove Lab: its block is gone from the file" bash -c "'$bin/netext' hotspot remove Lab > /dev/null && ! grep -q 'netext::4c6162' '$work/wpa.conf'"
check "netext hotspot remove Home (not NetExt's) leaves it" bash -c "'$bin/netext' hotspot remove Home > /dev/null; grep -q 'ssid=\"Home\"' '$work/wpa.conf'"
# Hotspot 2.0 (Passpoint): a credential (cred block) kept through the control interface, which
# is how NetExt finds its own again (D-Bus cannot list credentials).
operator_mark="netext::$(printf 'operator.lab.test' | od -An -tx1 | tr -d ' \n')"
check "netext hotspot configure --hs20-domain: a Hotspot 2.0 credential with wpa_supplicant" bash -c "echo 'ada s3cret' | '$bin/netext' hotspot configure --hs20-domain operator.lab.test --eap ttls --username ada --password-stdin --roaming-consortium 001BC50460 --trusted-server radius.operator.lab.test | grep -qx 'operator.lab.test: configured with wpa_supplicant'"
operator=$(cred_block "$operator_mark")
echo "$operator" | sed 's/^/  /' | grep -v password
check "wpa_supplicant wrote NetExt's credential to its file, marked in provisioning_sp" test -n "$operator"
check "…realm and home domain, TTLS with MSCHAPv2 inside, the consortium OI, the server's name, the machine's CA bundle" bash -c "grep -q 'realm=\"operator.lab.test\"' <<< '$operator' && grep -q 'domain=\"operator.lab.test\"' <<< '$operator' && grep -q 'eap=TTLS' <<< '$operator' && grep -q 'phase2=\"auth=MSCHAPV2\"' <<< '$operator' && grep -q 'roaming_consortiums=\"001bc50460\"' <<< '$operator' && grep -q 'domain_suffix_match=\"radius.operator.lab.test\"' <<< '$operator' && { [ ! -e /etc/ssl/certs/ca-certificates.crt ] || grep -q 'ca_cert=\"/etc/ssl/certs/ca-certificates.crt\"' <<< '$operator'; }"
check "…the username and the password with its space (sent as hex, never on a command line)" bash -c "grep -q 'username=\"ada\"' <<< '$operator' && grep -q 'password=\"ada s3cret\"' <<< '$operator'"
check "…and Passpoint selection turned on: interworking=1, hs20=1, auto_interworking=1" bash -c "grep -qx 'interworking=1' '$work/wpa.conf' && grep -qx 'hs20=1' '$work/wpa.conf' && grep -qx 'auto_interworking=1' '$work/wpa.conf'"
check "netext hotspot configured lists the Hotspot 2.0 domain beside the networks, not bob's credential" bash -c "'$bin/netext' hotspot configured | sort | tr '\n' ' ' | grep -qx 'Corp Office Wi-Fi operator.lab.test '"
check "configuring the domain again replaces its credential (one in the file, the new password)" bash -c "echo 'new s3cret' | '$bin/netext' hotspot configure --hs20-domain operator.lab.test --nai-realm operator.lab.test --eap ttls --username ada --password-stdin > /dev/null && [ \$(grep -c '$operator_mark' '$work/wpa.conf') -eq 1 ] && grep -q 'password=\"new s3cret\"' '$work/wpa.conf'"
check "wpa_supplicant's own list holds bob's credential and NetExt's" bash -c "[ \$(ip netns exec '$LAB_LAPTOP' wpa_cli -p '$work/ctrl' -i wlan0 list_creds | tail -n +2 | wc -l) -eq 2 ]"
check "netext hotspot remove operator.lab.test: its credential is gone, bob's is left" bash -c "'$bin/netext' hotspot remove operator.lab.test > /dev/null && ! grep -q '$operator_mark' '$work/wpa.conf' && grep -q 'username=\"bob\"' '$work/wpa.conf'"
check "MCC/MNC (SIM credentials) refused, saying why, nothing added" bash -c "out=\$(echo pw | '$bin/netext' hotspot configure --hs20-domain cell.lab.test --nai-realm cell.lab.test --eap ttls --username ada --password-stdin --mcc-mnc 310410 2>&1); [ \$? = 5 ] && grep -q 'match no MCC/MNC' <<< \"\$out\" && ! grep -q 'provisioning_sp=\"netext:' '$work/wpa.conf'"
check "an SSID prefix with no network in range that starts with it is refused, saying why" bash -c "'$bin/netext' hotspot configure Lab- --ssid-prefix 2>&1 | grep -q 'No network whose SSID starts with \"Lab-\" is in range'"
e2e_finish
