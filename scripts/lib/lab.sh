# The NetExt lab: network namespaces joined by veth pairs, all named with one unique prefix and
# removed by lab_down (call it from an EXIT trap). Only addresses inside these namespaces are used.
#
#   laptop ── (198.51.100.0/24, 2001:db8:1::/64) ── internet ── (203.0.113.0/24, 2001:db8:2::/64) ── office
#   office also holds the "internal network" hosts 10.20.0.5 and fd20::5 (on its loopback),
#   which internet has no route to: only a tunnel reaches it from the laptop.
#
# Usage: source scripts/lib/lab.sh; trap lab_down EXIT; lab_trap_signals; lab_up; ...

# Makes SIGINT, SIGTERM, SIGHUP and SIGPIPE (output piped into `head`) run the EXIT trap too, so the lab is removed when the script is killed.
lab_trap_signals() { trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP; trap 'exit 141' PIPE; }

# The prefix is claimed with an atomic mkdir under /run/netext-labs, so two labs run at once never
# share namespaces (a second `ip netns add` of a name fails, and lab_down would remove the other
# lab's): six random hex digits, drawn again while taken. LAB_PREFIX from the caller is claimed too.
lab_claim_prefix() {
  local claims=/run/netext-labs candidate
  [ -d /run ] && [ -w /run ] || claims=/tmp/netext-labs
  mkdir -p "$claims" 2> /dev/null
  for _ in 1 2 3 4 5 6 7 8; do
    candidate="${LAB_PREFIX:-nx$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
    if mkdir "$claims/$candidate" 2> /dev/null; then LAB_PREFIX="$candidate"; LAB_PREFIX_CLAIM="$claims/$candidate"; return 0; fi
    [ -n "${LAB_PREFIX:-}" ] && { echo "lab: the prefix $LAB_PREFIX is in use by another lab ($claims/$LAB_PREFIX)" >&2; return 1; }
  done
  echo "lab: no free lab prefix after 8 draws" >&2; return 1
}
LAB_PREFIX_CLAIM=""
lab_claim_prefix || exit 1
LAB_LAPTOP="$LAB_PREFIX-laptop"
LAB_INTERNET="$LAB_PREFIX-internet"
LAB_OFFICE="$LAB_PREFIX-office"
LAB_LAPTOP2="$LAB_PREFIX-laptop2"
LAB_LAN="$LAB_PREFIX-lan"
LAB_PIDS=()

lab_in() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

lab_up() {
  set -e
  for ns in "$LAB_LAPTOP" "$LAB_INTERNET" "$LAB_OFFICE"; do ip netns add "$ns"; lab_in "$ns" ip link set lo up; done
  ip link add "$LAB_PREFIX-l0" netns "$LAB_LAPTOP" type veth peer name "$LAB_PREFIX-i0" netns "$LAB_INTERNET"
  ip link add "$LAB_PREFIX-o0" netns "$LAB_OFFICE" type veth peer name "$LAB_PREFIX-i1" netns "$LAB_INTERNET"
  lab_in "$LAB_LAPTOP" ip link set "$LAB_PREFIX-l0" name eth0
  lab_in "$LAB_OFFICE" ip link set "$LAB_PREFIX-o0" name eth0
  lab_in "$LAB_INTERNET" ip link set "$LAB_PREFIX-i0" name eth0
  lab_in "$LAB_INTERNET" ip link set "$LAB_PREFIX-i1" name eth1
  lab_in "$LAB_LAPTOP" sh -c 'ip addr add 198.51.100.2/24 dev eth0 && ip -6 addr add 2001:db8:1::2/64 dev eth0 nodad && ip link set eth0 up && ip route add default via 198.51.100.1 && ip -6 route add default via 2001:db8:1::1'
  lab_in "$LAB_INTERNET" sh -c 'ip addr add 198.51.100.1/24 dev eth0 && ip -6 addr add 2001:db8:1::1/64 dev eth0 nodad && ip addr add 203.0.113.1/24 dev eth1 && ip -6 addr add 2001:db8:2::1/64 dev eth1 nodad && ip link set eth0 up && ip link set eth1 up && sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1'
  lab_in "$LAB_OFFICE" sh -c 'ip addr add 203.0.113.2/24 dev eth0 && ip -6 addr add 2001:db8:2::2/64 dev eth0 nodad && ip link set eth0 up && ip route add default via 203.0.113.1 && ip -6 route add default via 2001:db8:2::1'
  # The internal network's hosts, as addresses of the office itself (no dummy driver needed).
  lab_in "$LAB_OFFICE" sh -c 'ip addr add 10.20.0.5/32 dev lo && ip -6 addr add fd20::5/128 dev lo'
  set +e
}

# A second laptop (192.0.2.2, 2001:db8:3::2) behind the same internet router, for multi-client tests.
lab_add_laptop2() {
  ip netns add "$LAB_LAPTOP2" && lab_in "$LAB_LAPTOP2" ip link set lo up &&
  ip link add "$LAB_PREFIX-m0" netns "$LAB_LAPTOP2" type veth peer name "$LAB_PREFIX-i2" netns "$LAB_INTERNET" &&
  lab_in "$LAB_LAPTOP2" ip link set "$LAB_PREFIX-m0" name eth0 &&
  lab_in "$LAB_INTERNET" ip link set "$LAB_PREFIX-i2" name eth2 &&
  lab_in "$LAB_INTERNET" sh -c 'ip addr add 192.0.2.1/24 dev eth2 && ip -6 addr add 2001:db8:3::1/64 dev eth2 nodad && ip link set eth2 up' &&
  lab_in "$LAB_LAPTOP2" sh -c 'ip addr add 192.0.2.2/24 dev eth0 && ip -6 addr add 2001:db8:3::2/64 dev eth0 nodad && ip link set eth0 up && ip route add default via 192.0.2.1 && ip -6 route add default via 2001:db8:3::1'
}

# A second uplink for the laptop (eth1, 100.80.0.2/24, router 100.80.0.1 on internet's eth3),
# not used until a test moves the default route to it.
lab_add_uplink2() {
  ip link add "$LAB_PREFIX-l1" netns "$LAB_LAPTOP" type veth peer name "$LAB_PREFIX-i3" netns "$LAB_INTERNET" &&
  lab_in "$LAB_LAPTOP" ip link set "$LAB_PREFIX-l1" name eth1 &&
  lab_in "$LAB_INTERNET" ip link set "$LAB_PREFIX-i3" name eth3 &&
  lab_in "$LAB_INTERNET" sh -c 'ip addr add 100.80.0.1/24 dev eth3 && ip link set eth3 up' &&
  lab_in "$LAB_LAPTOP" sh -c 'ip addr add 100.80.0.2/24 dev eth1 && ip link set eth1 up'
}

# A network behind the office (10.30.0.0/24: office eth1 = 10.30.0.1, host 10.30.0.7) with no
# route back to anything else: reaching it from a tunnel client needs the server's masquerade.
lab_add_lan() {
  ip netns add "$LAB_LAN" && lab_in "$LAB_LAN" ip link set lo up &&
  ip link add "$LAB_PREFIX-n0" netns "$LAB_LAN" type veth peer name "$LAB_PREFIX-o1" netns "$LAB_OFFICE" &&
  lab_in "$LAB_LAN" ip link set "$LAB_PREFIX-n0" name eth0 &&
  lab_in "$LAB_OFFICE" ip link set "$LAB_PREFIX-o1" name eth1 &&
  lab_in "$LAB_OFFICE" sh -c 'ip addr add 10.30.0.1/24 dev eth1 && ip link set eth1 up' &&
  lab_in "$LAB_LAN" sh -c 'ip addr add 10.30.0.7/24 dev eth0 && ip link set eth0 up'
}

# Runs a command in the background inside a namespace (stdout discarded: redirect stderr at the
# call to keep its log); its pid is remembered for lab_down.
lab_spawn() { local ns="$1"; shift; ip netns exec "$ns" "$@" > /dev/null & LAB_PIDS+=($!); }

# Waits (at most $2 seconds, default 10) until command $1 succeeds.
lab_wait() {
  local deadline=$((SECONDS + ${2:-10}))
  until eval "$1" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.1
  done
}

# Starts a packet capture: lab_capture_start VAR NAMESPACE INTERFACE FILE [TCPDUMP ARGS...].
# Returns once tcpdump says it is listening (at most 5 s), so nothing sent afterwards is missed;
# the capture's pid goes into VAR (and into LAB_PIDS). Immediate mode: each packet reaches the
# file as it is seen, not when libpcap's buffer block times out (a second later).
lab_capture_start() {
  local var="$1" ns="$2" interface="$3" file="$4"; shift 4
  rm -f "$file.err"
  ip netns exec "$ns" tcpdump -i "$interface" -n -U --immediate-mode -w "$file" "$@" > /dev/null 2> "$file.err" &
  local pid=$!
  LAB_PIDS+=($pid)
  printf -v "$var" '%s' "$pid"
  lab_wait "grep -q 'listening on' '$file.err'" 5
}

# Ends a capture started by lab_capture_start once the file has not grown for two looks 0.1 s
# apart (at most 3 s), so what was sent before is in the file; SIGTERM makes tcpdump flush and
# exit (SIGINT is ignored by background jobs of a script).
lab_capture_stop() {
  local pid="$1" file="$2" size=-1 steady=0 deadline=$((SECONDS + 3))
  while [ $SECONDS -lt $deadline ] && [ $steady -lt 2 ]; do
    sleep 0.1
    local now; now=$(stat -c %s "$file" 2>/dev/null || echo 0)
    if [ "$now" = "$size" ]; then steady=$((steady + 1)); else steady=0; size=$now; fi
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

lab_down() {
  for pid in "${LAB_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${LAB_PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
  done
  for ns in "$LAB_LAPTOP" "$LAB_LAPTOP2" "$LAB_INTERNET" "$LAB_OFFICE" "$LAB_LAN"; do
    ip netns list | grep -q "^$ns\b" || continue
    # Any process still in the namespace (a provider) goes with it.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "/etc/netns/$LAB_LAPTOP" "/etc/netns/$LAB_LAPTOP2" "/etc/netns/$LAB_INTERNET" "/etc/netns/$LAB_OFFICE" "/etc/netns/$LAB_LAN"
  [ -n "$LAB_PREFIX_CLAIM" ] && rmdir "$LAB_PREFIX_CLAIM" 2> /dev/null
  return 0
}
