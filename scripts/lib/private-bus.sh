# A D-Bus bus of the lab's own, standing in for the system bus: Debian's dbus-daemon on a socket in
# DIR, run in namespace NS (lab_spawn: the lab's teardown ends it), every name ownable and every
# call allowed. Exports DBUS_SYSTEM_BUS_ADDRESS so what starts afterwards uses it.
# Usage: private_bus_up NS DIR
private_bus_up() {
  local ns="$1" dir="$2"
  mkdir -p "$dir"
  cat > "$dir/bus.conf" <<XML
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
</busconfig>
XML
  lab_spawn "$ns" dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile --nosyslog 2> /dev/null
  lab_wait "[ -S '$dir/bus' ]" 10 || return 1
  export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/bus"
}

# Waits (at most 15 s) until NAME has an owner on the private bus.
private_bus_wait_for() {
  lab_wait "dbus-send --bus='$DBUS_SYSTEM_BUS_ADDRESS' --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner string:$1 | grep -q 'boolean true'" 15
}
