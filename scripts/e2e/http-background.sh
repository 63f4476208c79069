#!/usr/bin/env bash
# Background sessions (issue 24) against nginx (scripts/lib/http-lab.sh), as an unprivileged user:
# an app hands a 16 MiB download (served at 1 MiB/s) to the user's transfer service and exits;
# the service is killed with SIGKILL mid-download and started again by the next app, which
# resumes it with a Range request; the laptop's address changes mid-download and the service
# resumes from the new address; the finished file is collected byte-identical, once. Also: an
# upload, a refusal that is not retried, a cancel, another session seeing nothing, another user
# refused at the socket, and the service exiting when idle.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/http-background.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh http-background
source scripts/lib/http-lab.sh
source scripts/lib/install-packages.sh
netext_install nginx-light openssl util-linux procps python3 > /dev/null || { echo "FAIL installing the lab's Debian packages"; exit 1; }

check "nginx serves the lab's good server in the office" http_lab_up
head -c $((16 << 20)) /dev/urandom > "$work/www/slow/huge.bin" && chmod 644 "$work/www/slow/huge.bin"
# The user's runtime and state directories, as a login session would give them.
user=nobody
run_dir="$work/run-user"; state_dir="$work/home-user/state/netext/transfers"; out_dir="$work/collected"
mkdir -p "$run_dir" "$out_dir" "$work/home-user" && chown "$user" "$run_dir" "$out_dir" "$work/home-user" && chmod 700 "$run_dir"
chmod 755 "$(dirname "$HTTP_LAB_CA")"; chmod 644 "$HTTP_LAB_CA"
# as_user COMMAND...: in the laptop, as the user, with its directories; the service idles out after 3 s.
as_user() {
  ip netns exec "$LAB_LAPTOP" runuser -u "$user" -- env XDG_RUNTIME_DIR="$run_dir" NETEXT_TRANSFERS_STATE="$state_dir" \
    NETEXT_TRANSFERD_IDLE_EXIT=3 "$@"
}
bg() { local verb="$1"; shift; as_user "$bin/netext" http background "$verb" "$@"; }
task_opts=(--cacert "$HTTP_LAB_CA" "${HTTP_LAB_RESOLVE[@]}" --max-time 10)
# By name, not by $bin's path: the app starts the service beside its own executable, whose path
# is the resolved one (.build/debug is a symbolic link).
service_pid() { pgrep -u "$user" -f '/netext-transferd( |$)' | head -1; }
partial() { stat -c %s "$state_dir/tasks/1/download" 2>/dev/null || echo 0; }
url=https://good.lab.test:8443/slow/huge.bin

handed_over() {
  local out
  out="$(bg download "${task_opts[@]}" lab.sync "$url" 2>&1)" || { echo "  $out"; return 1; }
  [ "$out" = "task 1: downloading $url in session lab.sync" ] || { echo "  said: $out"; return 1; }
}
check "the app hands a download to the transfer service and exits at once" handed_over

service_private() {
  local pid; pid="$(service_pid)"
  [ -n "$pid" ] || { echo "  no netext-transferd runs"; return 1; }
  [ "$(stat -c %U "/proc/$pid")" = "$user" ] || { echo "  it runs as $(stat -c %U "/proc/$pid")"; return 1; }
  [ "$(stat -c %a "$run_dir/netext/transfers.sock")" = 600 ] || { echo "  socket mode $(stat -c %a "$run_dir/netext/transfers.sock")"; return 1; }
  [ "$(stat -c %a "$state_dir")" = 700 ] && [ "$(stat -c %a "$state_dir/transfers.sqlite")" = 644 -o "$(stat -c %a "$state_dir/transfers.sqlite")" = 600 ] ||
    { echo "  state modes $(stat -c %a "$state_dir") $(stat -c %a "$state_dir/transfers.sqlite")"; return 1; }
  [ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] || { echo "  not in a session of its own"; return 1; }
}
check "the service was started on demand, as the user, in a session of its own, its socket 0600 and state 0700" service_private
check "the download goes on after the app has exited (2 MiB on disk)" lab_wait "[ \$(partial) -ge $((2 << 20)) ]" 15

# nginx logs a request when it ends (a request cut by the address change only at its send
# timeout), so in-flight resumes are seen on disk and in the service's log; the last resume's 206
# line is checked once the download is over.
killed_and_resumed() {
  local pid before; pid="$(service_pid)"; before="$(partial)"
  kill -9 "$pid"; sleep 0.3
  local out; out="$(bg list lab.sync 2>&1)" || { echo "  list failed: $out"; return 1; }
  echo "$out" | grep -Eq "^1 +download +running" || { echo "  list said: $out"; return 1; }
  [ -n "$(service_pid)" ] && [ "$(service_pid)" != "$pid" ] || { echo "  no new service"; return 1; }
  grep -q "task 1 (lab.sync): going on after a restart" "$state_dir/transferd.log" || { echo "  the new service did not take the task up"; return 1; }
  # A resume keeps the bytes on disk; a restart from the top would empty the file.
  local low=$before
  for _ in $(seq 1 20); do local now; now="$(partial)"; [ "$now" -lt "$low" ] && low=$now; sleep 0.1; done
  [ "$low" -ge "$before" ] || { echo "  the file shrank from $before to $low bytes: started over"; return 1; }
  lab_wait "[ \$(partial) -gt $((before + (1 << 20))) ]" 10 || { echo "  no progress after the restart ($(partial) bytes)"; return 1; }
  echo "  killed at $before bytes; the next app's call started it again and it went on from there"
}
check "killed with SIGKILL mid-download, the service is started by the next app and resumes with a Range request" killed_and_resumed

other_session() {
  local out; out="$(bg list other.session 2>&1)"
  [ "$out" = "session other.session has no tasks" ] || { echo "  said: $out"; return 1; }
}
check "another session of the same user sees none of it" other_session

refused_other_user() {
  # root may open the 0600 socket; the service checks the peer's uid and hangs up without a word.
  ip netns exec "$LAB_LAPTOP" python3 - "$run_dir/netext/transfers.sock" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
body = json.dumps({"serial": 1, "command": {"list": {}}}).encode()
try:
    # The service may hang up before the command is sent (a broken pipe) or after (a reset, or
    # end of file); an answer, or silence until the timeout, is a failure.
    s.sendall(struct.pack(">I", len(body)) + body)
    answer = s.recv(100)
except (ConnectionResetError, BrokenPipeError):
    sys.exit(0)
except TimeoutError:
    print("  the service kept another user's connection open for 5 s")
    sys.exit(1)
if answer:
    print(f"  the service answered another user: {answer!r}")
sys.exit(0 if answer == b"" else 1)
PY
}
check "another user's connection is refused (peer credentials), nothing answered" refused_other_user

roamed() {
  local before; before="$(partial)"; local moved=$EPOCHREALTIME
  ip netns exec "$LAB_LAPTOP" sh -c 'ip addr del 198.51.100.2/24 dev eth0 && ip addr add 198.51.100.7/24 dev eth0 && ip route replace default via 198.51.100.1'
  lab_wait "grep -q 'no byte since the network changed' '$state_dir/transferd.log'" 8 || { echo "  the stalled load was not cut at the change"; return 1; }
  local cut; cut="$(partial)"
  lab_wait "[ \$(partial) -gt $cut ]" 15 || { echo "  no progress on the new network"; grep -a task "$state_dir/transferd.log" | tail -3; return 1; }
  local going=$EPOCHREALTIME
  lab_wait "[ \$(partial) -gt $((cut + (1 << 20))) ]" 15 || { echo "  no progress on the new network ($(partial) bytes)"; return 1; }
  echo "  moved at $before bytes; bytes flowed again from 198.51.100.7 $(awk "BEGIN { printf \"%.1f\", $going - $moved }") s after the change"
}
check "the laptop's address changes mid-download: the stalled load is cut and resumed from the new address" roamed

collected() {
  local out status
  out="$(bg collect --into "$out_dir" --wait 40 lab.sync 2>&1)"; status=$?
  [ $status = 0 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "^task 1: 206 → $out_dir/huge.bin ($((16 << 20)) bytes)" || { echo "  said: $out"; return 1; }
  echo "$out" | grep -q "collected=1 failed=0" || { echo "  said: $out"; return 1; }
  cmp -s "$out_dir/huge.bin" "$work/www/slow/huge.bin" || { echo "  the file differs from the server's"; return 1; }
  grep -q '^198.51.100.7 .*"GET /slow/huge.bin HTTP/2.0" 206' "$work/nginx-access.log" || { echo "  no 206 from the new address in nginx's log"; return 1; }
  [ "$(stat -c %U "$out_dir/huge.bin")" = "$user" ] || { echo "  owned by $(stat -c %U "$out_dir/huge.bin")"; return 1; }
  echo "  $(grep -c 'huge.bin HTTP/2.0" 206' "$work/nginx-access.log") resumes in nginx's log"
}
check "the app collects the finished download, byte-identical (16 MiB at 1 MiB/s with a 10 s idle limit)" collected

once() {
  local out; out="$(bg collect --into "$out_dir" lab.sync 2>&1)"
  echo "$out" | grep -q "collected=0 failed=0" || { echo "  said: $out"; return 1; }
  [ ! -e "$state_dir/tasks/1" ] || { echo "  the task's files were left"; return 1; }
}
check "its events are delivered once, and the task's files go with them" once

upload() {
  head -c 300000 /dev/urandom > "$work/up.bin" && chmod 644 "$work/up.bin"
  bg upload "${task_opts[@]}" --file "$work/up.bin" lab.sync https://good.lab.test:8443/upload > /dev/null || return 1
  local out; out="$(bg collect --into "$out_dir" --wait 15 lab.sync 2>&1)"
  echo "$out" | grep -Eq "^task [0-9]+: 200, 22 bytes of answer" || { echo "  said: $out"; return 1; }
  grep -q '"POST /upload HTTP/2.0" 200' "$work/nginx-access.log" || { echo "  no upload in nginx's log"; return 1; }
}
check "an upload of a file is sent by the service and its answer collected" upload

refusals() {
  bg download "${task_opts[@]}" lab.sync http://plain.lab.test:8080/index.html > /dev/null || return 1
  local out; out="$(bg download "${task_opts[@]}" lab.sync "$url")" || return 1
  local number; number="$(echo "$out" | sed -E 's/^task ([0-9]+):.*/\1/')"
  sleep 0.5
  bg cancel lab.sync "$number" > /dev/null || return 1
  out="$(bg collect --into "$out_dir" --wait 10 lab.sync 2>&1)"; local status=$?
  [ $status = 5 ] || { echo "  exit $status: $out"; return 1; }
  echo "$out" | grep -q "failed: .*(rule: cleartext HTTP" || { echo "  no ATS refusal in: $out"; return 1; }
  echo "$out" | grep -q "^task $number failed: The load was cancelled." || { echo "  no cancel in: $out"; return 1; }
  echo "$out" | grep -q "collected=0 failed=2" || { echo "  said: $out"; return 1; }
}
check "an ATS refusal ends its task at once (no retry) and a cancelled task reports it" refusals

idle_exit() { lab_wait "[ -z \"\$(service_pid)\" ]" 10 || { echo "  still running: $(service_pid)"; return 1; }; [ ! -e "$run_dir/netext/transfers.sock" ]; }
check "with no app attached and nothing to do, the service exits and removes its socket" idle_exit

no_secrets() {
  ! grep -q "slow/huge.bin\|/upload" "$state_dir/transferd.log" || { echo "  the log names URL paths"; return 1; }
}
check "the service's log names hosts, not URL paths" no_secrets

e2e_finish
