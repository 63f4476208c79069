#!/usr/bin/env bash
# End-to-end checks of the content filter's control provider in a namespace lab: the reference
# school control provider (as user daemon, with network) fetches the block list from the office's
# web server into the rules directory and tells netextd; the data provider (as nobody, no
# network) answers needRules until it has a list; flows waiting for rules are judged again once
# the list arrives; a changed list applies on the fly; a malformed list is refused whole; the
# control provider's own connections are not filtered. Needs root.
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/filter-control.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh filter-control

lab_up || { echo "FAIL lab"; exit 1; }
e2e_netextd_environment
export NETEXT_FILTER_RULES_ROOT="$work/filter-rules"
e2e_filter_provider com.netext.filter.school filter-data school nobody
e2e_filter_provider com.netext.filter.school.control filter-control school-control daemon
mkdir -p "$work/files"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=lab.test -days 1 -keyout "$work/web.key" -out "$work/web.crt" 2>/dev/null
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/web-server.py "$work/web.crt" "$work/web.key" "$work/web.log" "$work/files"
lab_wait "grep -q 'web server ready' '$work/web.log'" 10
e2e_start_netextd

fetch() {
  local url="$1" host="$2" port
  case "$url" in https:*) port=443 ;; *) port=80 ;; esac
  laptop curl -sS -k --max-time 6 --resolve "$host:$port:203.0.113.2" -o /dev/null "$url" 2>>"$work/curl.log"
}
refused() { fetch "$@"; local s=$?; [ $s -eq 35 ] || [ $s -eq 56 ] || [ $s -eq 7 ] || { echo "  (curl exit status $s)"; return 1; }; }
rules_file="$NETEXT_FILTER_RULES_ROOT/com.netext.filter.school/blocklist.txt"
create() {
  "$bin/netext" filter create --name School --provider com.netext.filter.school --control-provider com.netext.filter.school.control \
    --config rulesURL=http://203.0.113.2/files/blocklist.txt --config "rulesRefreshSeconds=$1" --enable > /dev/null
}

# Phase 1: no list on the server yet; the periodic refresh is slow, so only flows ask for rules.
check "filter with a control provider created and enabled" create 3600
lab_wait "'$bin/netext' filter status | grep -q 'content filter: running' && '$bin/netext' filter status --json | grep -q '\"controlProviderPID\"'" 15
check "status names the control provider" bash -c "'$bin/netext' filter status | grep -q 'control provider: com.netext.filter.school.control, pid [0-9]'"
check "without any list, a flow needs rules and the failure policy (open) lets it pass" fetch https://ads.test/ ads.test
check "the log says the control provider decided it" bash -c "'$bin/netext' filter log | grep -q 'allow.*ads.test.*control-provider'"
printf 'ads.test\n' > "$work/files/blocklist.txt"
check "once the list exists, a new flow waits for rules, the control provider fetches them, and it is reset" refused https://ads.test/ ads.test
check "the data provider judged it with the new rules" bash -c "'$bin/netext' filter log | tail -1 | grep -q 'drop.*ads.test.*provider'"
check "the list was written to the rules directory, owned by the control provider's user" bash -c "grep -qx ads.test '$rules_file' && [ \$(stat -c %U \$(dirname '$rules_file')) = daemon ]"
check "the data provider (nobody) cannot write the rules directory" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups touch '$(dirname "$rules_file")/x' 2>/dev/null"
check "another site loads" fetch https://news.test/ news.test
check "the control provider's own fetches were not filtered" bash -c "! '$bin/netext' filter log | grep -q 'uid 1 '"
control_pid="$("$bin/netext" filter status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["controlProviderPID"])')"
check "the control provider runs as daemon in netextd's network namespace" bash -c "[ \$(stat -c %U /proc/$control_pid) = daemon ] && [ \$(readlink /proc/$control_pid/ns/net) = \$(readlink /proc/$NETEXTD_PID/ns/net) ]"

# Phase 2: the list is refreshed every second; changes apply to new flows on the fly.
check "filter re-created with a refresh every second" create 1
lab_wait "'$bin/netext' filter status | grep -q 'content filter: running'" 15
printf 'ads.test\n# now news too\nnews.test\n' > "$work/files/blocklist.txt"
lab_wait "grep -qx news.test '$rules_file'" 10
lab_wait "refused https://news.test/ news.test" 5
check "a site added to the served list is reset without restarting anything" refused https://news.test/ news.test
printf 'ads.test\nbad host name\n' > "$work/files/blocklist.txt"
lab_wait "grep -q 'line 2' '$work/netextd.log'" 10
check "a malformed list is refused and the line at fault named" grep -q "blocklist.txt: line 2: 'bad host name'" "$work/netextd.log"
check "the rules in force stay (news.test still reset)" refused https://news.test/ news.test
printf 'ads.test\n' > "$work/files/blocklist.txt"
lab_wait "! grep -qx news.test '$rules_file'" 10
lab_wait "fetch https://news.test/ news.test" 5
check "a site removed from the list loads again" fetch https://news.test/ news.test

check "filter disabled" bash -c "'$bin/netext' filter disable School > /dev/null"
lab_wait '[ -z "$(e2e_descendants "netext-filter-provider school-control" "$NETEXTD_PID")" ]' 10
left="$(e2e_descendants 'netext-filter-provider school-control' "$NETEXTD_PID" | tr '\n' ' ')"
check "the control provider stopped with it" test -z "$left"

e2e_finish "$work/netextd.log" "$work/curl.log" "$work/web.log"
