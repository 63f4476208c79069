# Shared by the end-to-end scripts in scripts/e2e/: the binaries, a work directory removed with
# the lab on exit, `check NAME COMMAND…` (one PASS/FAIL line each), helpers for the laptop
# namespace and the CLI, tunnel keys, the reference provider's manifest, and the summary.
# Usage (from a script in scripts/e2e): source scripts/lib/e2e.sh NAME; …; e2e_finish
set -uo pipefail
bin="${NETEXT_BIN_DIR:?set NETEXT_BIN_DIR to the directory of the built binaries}"
source scripts/lib/lab.sh
work="$(mktemp -d "/tmp/netext-${1:-e2e}.XXXXXX")"
chmod 755 "$work"
failures=0
e2e_cleanup() { lab_down; rm -rf "$work"; }
trap e2e_cleanup EXIT
lab_trap_signals
check() { local name="$1"; shift; if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi; }
laptop() { ip netns exec "$LAB_LAPTOP" "$@"; }
office() { ip netns exec "$LAB_OFFICE" "$@"; }
netext() { "$bin/netext" "$@"; }

# Sets server_key/server_public and client_key/client_public.
e2e_keys() {
  server_key="$("$bin/netext-server" genkey)"; server_public="$(echo "$server_key" | "$bin/netext-server" pubkey)"
  client_key="$("$bin/netext-server" genkey)"; client_public="$(echo "$client_key" | "$bin/netext-server" pubkey)"
}

# Writes $work/server.json (mode 600): the office's tunnel server on 203.0.113.2:51900 with the
# laptop's key ($client_public, from e2e_keys) as its one peer, pushing 10.20.0.0/16.
e2e_office_server_config() {
  (umask 077; cat > "$work/server.json" <<JSON
{"privateKey": "$server_key", "listen": "203.0.113.2:51900", "ipv4Pool": "10.99.0.0/24",
 "routes": ["10.20.0.0/16"], "mtu": 1420, "peers": [{"name": "laptop", "publicKey": "$client_public"}]}
JSON
  )
}

# netextd's state, socket and providers in the work directory, with the reference tunnel
# provider registered (as nobody); $1 is the resolver file netextd may rewrite.
e2e_netextd_environment() {
  export NETEXT_STATE_DIR="$work/state" NETEXT_SOCKET="$work/netextd.sock" NETEXT_PROVIDERS_DIR="$work/providers" NETEXT_RESOLV_CONF="${1:-$work/resolv.conf}"
  mkdir -p "$NETEXT_PROVIDERS_DIR"
  printf '{"bundleIdentifier": "com.netext.tunnel", "extensionPoint": "packet-tunnel", "executable": "%s", "user": "nobody"}\n' "$bin/netext-tunnel-provider" > "$NETEXT_PROVIDERS_DIR/tunnel.json"
  chmod 644 "$NETEXT_PROVIDERS_DIR/tunnel.json"
}

# Registers one of netext-filter-provider's reference providers with netextd:
# e2e_filter_provider BUNDLE EXTENSION_POINT ROLE USER (the manifest is $NETEXT_PROVIDERS_DIR/ROLE.json).
e2e_filter_provider() {
  printf '{"bundleIdentifier": "%s", "extensionPoint": "%s", "executable": "%s", "arguments": ["%s"], "user": "%s"}\n' \
    "$1" "$2" "$bin/netext-filter-provider" "$3" "$4" > "$NETEXT_PROVIDERS_DIR/$3.json"
  chmod 644 "$NETEXT_PROVIDERS_DIR/$3.json"
}

# Starts netext-server tunnel in the office with $work/server.json, logging to $1 (default
# $work/server.log), and waits until it is ready. Sets SERVER_PID.
e2e_start_server() {
  local log="${1:-$work/server.log}"
  lab_spawn "$LAB_OFFICE" "$bin/netext-server" tunnel --config "$work/server.json" --status-socket "$work/server.sock" 2>> "$log"; SERVER_PID=$!
  lab_wait "grep -q 'tunnel server ready' '$log'" 15
}

# Starts netextd in the laptop, logging to $1 (default $work/netextd.log), and waits until it
# answers. Sets NETEXTD_PID.
e2e_start_netextd() {
  lab_spawn "$LAB_LAPTOP" "$bin/netextd" 2>> "${1:-$work/netextd.log}"; NETEXTD_PID=$!
  lab_wait "'$bin/netext' status" 15
}

# The pids of the processes whose command line contains $1 and that descend from process $2
# (the lab's own netextd): other tests may run the same providers at the same time, so a match
# on the command line alone could name, or kill, theirs. Bounded: the ancestry ends at pid 1.
e2e_descendants() {
  local pattern="$1" ancestor="$2" pid parent
  for pid in $(pgrep -f -- "$pattern"); do
    parent=$pid
    while [ -n "$parent" ] && [ "$parent" -gt 1 ]; do
      if [ "$parent" = "$ancestor" ]; then echo "$pid"; break; fi
      parent=$(ps -o ppid= -p "$parent" 2>/dev/null | tr -d ' ')
    done
  done
}

# The pid of the running reference provider in the laptop namespace.
e2e_provider_pid() {
  for pid in $(ip netns pids "$LAB_LAPTOP"); do grep -q netext-tunnel-provider "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"; done | head -1
}

# Prints the summary (and the tails of the given logs on failure); exits 1 on failure.
# Copies the units in directory $1 to $work/units with `sed ARGS…` ($3…) applied (ExecStart must
# name binaries that exist for systemd-analyze), runs `systemd-analyze verify` on them and writes
# its output, then "exit STATUS", to $2: a unit without faults makes no output.
e2e_verify_units() {
  local from="$1" log="$2"; shift 2
  mkdir -p "$work/units"
  for unit in "$from"/*.service; do sed "$@" "$unit" > "$work/units/$(basename "$unit")"; done
  (cd "$work/units" && timeout 120 systemd-analyze verify --man=no ./*.service > "$log" 2>&1; echo "exit $?" >> "$log")
}

e2e_finish() {
  if [ "$failures" -gt 0 ]; then
    for file in "$@"; do [ -f "$file" ] && { echo "--- $(basename "$file")"; tail -25 "$file"; }; done
    echo "$failures CHECKS FAILED"; exit 1
  fi
  echo "ALL CHECKS PASSED"
}
