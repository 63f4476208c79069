#!/usr/bin/env bash
# End-to-end checks of `netext hotspot` against Debian's wpa_supplicant (nobody here wrote it),
# the Wi-Fi service of machines without NetworkManager. This machine has no radio, so
# wpa_supplicant runs in a namespace on a veth link named wlan0 with its `wired` driver: no scan
# list, but its D-Bus API (on a private bus standing in for the system bus) keeps, enables,
# writes and removes network blocks exactly as for Wi-Fi. Checks what NetExt asked of it in
# wpa_supplicant's own configuration file: the blocks NetExt wrote (marked in id_str), a WPA3
# block with protected management frames, an enterprise block, a block NetExt did not write left
# alone, removal. Needs root. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/wifi-wpa-supplicant.sh
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh wpa
source scripts/lib/install-packages.sh
source scripts/lib/private-bus.sh
netext_install wpasupplicant dbus-daemon > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

ip netns add "$LAB_LAPTOP" && ip -n "$LAB_LAPTOP" link add wlan0 type veth peer name wlan0-peer && ip -n "$LAB_LAPTOP" link set wlan0 up \
  || { echo "FAIL lab namespace"; exit 1; }
private_bus_up "$LAB_LAPTOP" "$work/bus" || { echo "FAIL the private bus did not start"; exit 1; }
# wpa_supplicant's file, with a network somebody else configured.
cat > "$work/wpa.conf" <<'CONF'
update_config=1

network={
	ssid="Home"
	key_mgmt=NONE
}
CONF
lab_spawn "$LAB_LAPTOP" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" wpa_supplicant -u -i wlan0 -D wired -c "$work/wpa.conf"
lab_wait "dbus-send --bus='$DBUS_SYSTEM_BUS_ADDRESS' --print-reply --dest=fi.w1.wpa_supplicant1 /fi/w1/wpa_supplicant1 org.freedesktop.DBus.Properties.Get string:fi.w1.wpa_supplicant1 string:Interfaces | grep -q Interfaces/" 15 \
  || { echo "FAIL wpa_supplicant did not come up on the bus with wlan0"; exit 1; }

block() { awk -v id="$1" 'BEGIN { RS = "network=\\{"; FS = "\n" } index($0, id) { print }' "$work/wpa.conf"; }

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
check "an SSID prefix is refused, saying why" bash -c "'$bin/netext' hotspot configure Lab- --ssid-prefix 2>&1 | grep -q 'wpa_supplicant cannot join networks by SSID prefix'"
e2e_finish
