# A Wi-Fi service for the labs, which have no radio: Debian's dbus-daemon on a private socket
# and python3-dbusmock's NetworkManager template on it, standing in for the system bus.
# wifi_mock_up NAMESPACE DIR: starts both (lab_spawn: the lab's teardown ends them), exports
# DBUS_SYSTEM_BUS_ADDRESS so netextd and netext started afterwards use it, and adds a Wi-Fi
# device named eth0 (the laptop's link; not joined) seeing "Office Wi-Fi" (WPA2, 70 %) and
# "Café Libre" (open, 50 %). wifi_mock_send MEMBER ARGS...: a call to the mock's own API.
source scripts/lib/private-bus.sh
wifi_mock_up() {
  local ns="$1" dir="$2"
  private_bus_up "$ns" "$dir" || return 1
  lab_spawn "$ns" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" /usr/bin/python3 -m dbusmock --template networkmanager
  private_bus_wait_for org.freedesktop.NetworkManager || return 1
  WIFI_MOCK_DEVICE=$(wifi_mock_send AddWiFiDevice string:wifi0 string:eth0 int32:30 | sed -n 's/^ *string "\(.*\)"/\1/p')
  [ -n "$WIFI_MOCK_DEVICE" ] || return 1
  wifi_mock_send AddAccessPoint string:"$WIFI_MOCK_DEVICE" string:office "string:Office Wi-Fi" string:02:00:00:00:00:01 uint32:2 uint32:5180 uint32:54000 byte:70 uint32:256 > /dev/null &&
  wifi_mock_send AddAccessPoint string:"$WIFI_MOCK_DEVICE" string:cafe "string:Café Libre" string:02:00:00:00:00:02 uint32:2 uint32:2437 uint32:54000 byte:50 uint32:0 > /dev/null
}

wifi_mock_send() {
  local member="$1"; shift
  dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=org.freedesktop.NetworkManager /org/freedesktop/NetworkManager "org.freedesktop.DBus.Mock.$member" "$@"
}
