#!/usr/bin/env bash
# End-to-end checks of `netext hotspot` where iwd is the machine's Wi-Fi service: the real netext
# CLI finds it on the system bus (a private bus standing in, in a namespace of the lab's own) and
# speaks its D-Bus API to the stand-in scripts/lib/iwd_mock.py (iwd itself needs nl80211, which
# this kernel lacks), whose station joins a secured network only once iwd's network file holds
# its passphrase — as iwd, which has no D-Bus call taking one. Checks the files NetExt wrote in
# the state directory (named and marked as iwd.network(5) says, root-only), the join, a file
# NetExt did not write left alone, removal. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/wifi-iwd.sh
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh iwd
source scripts/lib/install-packages.sh
source scripts/lib/private-bus.sh
netext_install dbus-daemon python3-dbusmock > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

ip netns add "$LAB_LAPTOP" || { echo "FAIL lab namespace"; exit 1; }
private_bus_up "$LAB_LAPTOP" "$work/bus" || { echo "FAIL the private bus did not start"; exit 1; }
export NETEXT_IWD_STATE_DIRECTORY="$work/iwd"
mkdir -p "$NETEXT_IWD_STATE_DIRECTORY" && chmod 700 "$NETEXT_IWD_STATE_DIRECTORY"
printf '[Security]\nPassphrase=somebody else\n' > "$NETEXT_IWD_STATE_DIRECTORY/Home.psk"
lab_spawn "$LAB_LAPTOP" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" DBUS_SESSION_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" \
  /usr/bin/python3 -m dbusmock --template scripts/lib/iwd_mock.py
private_bus_wait_for net.connman.iwd || { echo "FAIL the iwd stand-in did not come up"; exit 1; }
iwd_mock() { dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=net.connman.iwd / "org.freedesktop.DBus.Mock.$1" "${@:2}"; }
iwd_mock SetStateDirectory "string:$NETEXT_IWD_STATE_DIRECTORY" > /dev/null
station=$(iwd_mock AddStation string:wlan0 | sed -n 's/.*object path "\(.*\)"/\1/p')
iwd_mock AddNetwork "string:$station" "string:Office Wi-Fi" string:psk int16:-5800 string:02:00:00:00:00:01 > /dev/null
iwd_mock AddNetwork "string:$station" "string:Café Libre" string:open int16:-7000 string:02:00:00:00:00:02 > /dev/null
# netext as a program would run it in the laptop: the stand-in's bus as the system bus.
cat > "$work/netext" <<SH
#!/bin/sh
exec ip netns exec "$LAB_LAPTOP" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" NETEXT_IWD_STATE_DIRECTORY="$NETEXT_IWD_STATE_DIRECTORY" NETEXT_SOCKET="$work/none.sock" "$bin/netext" "\$@"
SH
chmod +x "$work/netext"
nx="$work/netext"
office="$NETEXT_IWD_STATE_DIRECTORY/Office Wi-Fi.psk"

list="$("$nx" hotspot list 2>&1)"; echo "$list" | sed 's/^/  /'
check "netext hotspot list reads iwd's scan list (no netextd: the Wi-Fi service directly)" \
  bash -c "grep -q '^Office Wi-Fi  02:00:00:00:00:01  70 %    yes     wlan0' <<< \"\$1\" && grep -q '^Café Libre .* 50 %    no ' <<< \"\$1\"" _ "$list"
check "netext hotspot configure: WPA2, kept with iwd" bash -c "echo 'office passphrase' | '$nx' hotspot configure 'Office Wi-Fi' --passphrase-stdin | grep -qx 'Office Wi-Fi: configured with iwd'"
sed 's/^Passphrase=.*/Passphrase=(hidden here)/; s/^/  /' "$office" 2>/dev/null
check "iwd's network file, named after the SSID, holds the passphrase and NetExt's mark" \
  bash -c "grep -qx 'Passphrase=office passphrase' '$office' && grep -qx '\[NetExt\]' '$office' && grep -qx 'NameHex=4f66666963652057692d4669' '$office'"
check "… readable by root only" bash -c "[ \"\$(stat -c %a '$office')\" = 600 ]"
list="$("$nx" hotspot list 2>&1)"
check "the station joined it with that file (the stand-in, as iwd, refuses a secured network without one)" bash -c "grep -q '^Office Wi-Fi .*wlan0 *joined' <<< \"\$1\"" _ "$list"
check "an SSID that is not only letters, digits, spaces, _ and - is named = and hex" \
  bash -c "'$nx' hotspot configure 'Café Libre' > /dev/null && [ -f '$NETEXT_IWD_STATE_DIRECTORY/=436166c3a9204c69627265.open' ]"
check "netext hotspot configured lists NetExt's two, not Home" bash -c "'$nx' hotspot configured | sort | tr '\n' ' ' | grep -qx 'Café Libre Office Wi-Fi '"
check "netext hotspot remove Office Wi-Fi: its file is gone; Home (not NetExt's) stays" \
  bash -c "'$nx' hotspot remove 'Office Wi-Fi' > /dev/null && [ ! -e '$office' ] && [ -f '$NETEXT_IWD_STATE_DIRECTORY/Home.psk' ]"
check "WEP is refused, saying why" bash -c "echo 'abcde' | '$nx' hotspot configure Old --wep --passphrase-stdin 2>&1 | grep -q 'iwd does not join WEP networks'"
e2e_finish
