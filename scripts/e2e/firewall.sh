#!/usr/bin/env bash
# End-to-end checks of the reference personal firewall in a namespace lab: per-program rules
# (configured, and answered ones in firewall.rules); a program reaching a destination no rule
# covers opens a question, once per program and destination, that `netext filter prompt`
# lists and answers (by number, or on the terminal with --ask); an answer given while the flow
# waits lets that very flow through; an unanswered one is dropped; a broken rules file is never
# overwritten. The data provider runs as nobody without network, the control provider as daemon.
# Needs root. Usage: NETEXT_BIN_DIR=DIR scripts/e2e/firewall.sh   One line per check.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh firewall

lab_up || { echo "FAIL lab"; exit 1; }
e2e_netextd_environment
export NETEXT_FILTER_RULES_ROOT="$work/filter-rules"
e2e_filter_provider com.netext.filter.firewall filter-data firewall nobody
e2e_filter_provider com.netext.filter.firewall.control filter-control firewall-control daemon
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=lab.test -days 1 -keyout "$work/web.key" -out "$work/web.crt" 2>/dev/null
lab_spawn "$LAB_OFFICE" python3 scripts/e2e/web-server.py "$work/web.crt" "$work/web.key" "$work/web.log"
lab_wait "grep -q 'web server ready' '$work/web.log'" 10
e2e_start_netextd

curl_path="$(readlink -f "$(command -v curl)")"
# (the interpreter's own executable, not a wrapper such as pyenv's shim)
python_path="$(laptop python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
# fetch HOST: curl over HTTPS from the laptop, HOST resolved to the office.
fetch() { laptop curl -sS -k --max-time 6 --resolve "$1:443:203.0.113.2" -o /dev/null "https://$1/" 2>>"$work/curl.log"; }
refused() { fetch "$1"; local s=$?; [ $s -eq 35 ] || [ $s -eq 56 ] || [ $s -eq 7 ] || { echo "  (curl exit status $s)"; return 1; }; }
# py_fetch HOST: the same from another program (python3), over cleartext HTTP.
py_fetch() {
  laptop python3 -c 'import sys, urllib.request
req = urllib.request.Request("http://203.0.113.2/", headers={"Host": sys.argv[1]})
sys.exit(0 if urllib.request.urlopen(req, timeout=6).status == 200 else 1)' "$1" 2>>"$work/curl.log"
}
prompts_json() { "$bin/netext" filter prompt --json; }
# question_id PROGRAM DESTINATION: the open question's number, or nothing.
question_id() { prompts_json | python3 -c 'import json, sys
for p in json.load(sys.stdin):
    if p.get("program") == sys.argv[1] and p["destination"] == sys.argv[2]: print(p["id"])' "$1" "$2"; }
rules_file="$NETEXT_FILTER_RULES_ROOT/com.netext.filter.firewall/firewall.rules"
has_question() { [ -n "$(question_id "$1" "$2")" ]; }
no_questions() { "$bin/netext" filter prompt | grep -q 'no open questions'; }
# one_question_with FLOWS: exactly one question is open, met by FLOWS flows.
one_question_with() { prompts_json | python3 -c 'import json, sys; p = json.load(sys.stdin); sys.exit(0 if len(p) == 1 and p[0]["flows"] == int(sys.argv[1]) else 1)' "$1"; }
answer_gives() { "$bin/netext" filter prompt "$1" "$2" | grep -qx "added rule: $3"; }
denied_without_question() { refused "$1" && ! has_question "$curl_path" "$1"; }

printf '# the administrator allows curl to reach the library\nallow %s library.test\n' "$curl_path" > "$work/admin.rules"
check "firewall created and enabled with a control provider" bash -c "'$bin/netext' filter create --name Firewall --provider com.netext.filter.firewall \
  --control-provider com.netext.filter.firewall.control --firewall-rules '$work/admin.rules' --config promptWaitMilliseconds=1800 --enable > /dev/null"
lab_wait "'$bin/netext' filter status | grep -q 'content filter: running' && '$bin/netext' filter status --json | grep -q '\"controlProviderPID\"'" 15
check "no question is open yet" no_questions
check "a configured rule: curl reaches the library" fetch library.test
check "no rule for curl to games.test: unanswered, the flow is dropped" refused games.test
check "it became a question naming curl and games.test" has_question "$curl_path" games.test
check "netext filter prompt lists it" bash -c "'$bin/netext' filter prompt | grep -q \"$curl_path.*games.test tcp/443\""
refused games.test
"$bin/netext" filter prompt | sed 's/^/  /'
check "asking again joins the same question (2 flows), not a new one" one_question_with 2
id="$(question_id "$curl_path" games.test)"
check "answering allow adds a rule for curl and games.test" answer_gives "$id" allow "allow $curl_path games.test"
check "the answer is at the top of firewall.rules, written by the control provider" bash -c "head -1 '$rules_file' | grep -qx 'allow $curl_path games.test' && [ \$(stat -c %U '$rules_file') = daemon ]"
check "curl now reaches games.test" fetch games.test
check "the question is closed" no_questions

# Per program: python3 to games.test is its own question. Answered while its flow waits, that
# very flow goes through.
py_fetch games.test & py_pid=$!
for _ in $(seq 1 30); do has_question "$python_path" games.test && break; sleep 0.05; done
py_id="$(question_id "$python_path" games.test)"
check "another program to the same host opens its own question" test -n "$py_id"
check "answered within the wait" bash -c "'$bin/netext' filter prompt $py_id allow > /dev/null"
check "the waiting flow itself goes through" wait "$py_pid"
check "the log says the data provider judged it after the answer" bash -c "'$bin/netext' filter log | grep 'games.test' | grep -q 'allow.*python.*provider'"

# --ask on the terminal: deny.
refused videos.test
printf 'deny\n' | "$bin/netext" filter prompt --ask > "$work/ask.out"
sed 's/^/  /' "$work/ask.out"
check "--ask puts the question on the terminal and takes the answer from its input" grep -q "added rule: deny $curl_path videos.test" "$work/ask.out"
check "a denied destination is reset, without a new question" denied_without_question videos.test
check "only an administrator may list or answer questions" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups '$bin/netext' filter prompt 2>/dev/null"

# A broken rules file is refused with its line, and never overwritten.
refused music.test
printf 'allow %s games.test\nallow curl everything\n' "$curl_path" > "$rules_file"
before="$(sha256sum < "$rules_file")"
music_id="$(question_id "$curl_path" music.test)"
check "an answer is refused while firewall.rules is broken, naming the line" bash -c "'$bin/netext' filter prompt $music_id allow 2>&1 | grep -q 'line 2'"
check "the broken file was left as it was, and the question stays open" bash -c "[ \"\$(sha256sum < '$rules_file')\" = '$before' ]"
check "(the question is still open)" has_question "$curl_path" music.test

check "filter disabled" bash -c "'$bin/netext' filter disable Firewall > /dev/null"
lab_wait '[ -z "$(e2e_descendants "netext-filter-provider firewall" "$NETEXTD_PID")" ]' 10
left="$(e2e_descendants 'netext-filter-provider firewall' "$NETEXTD_PID" | tr '\n' ' ')"
check "both providers stopped and no steering rule is left" bash -c "[ -z '$left' ] && ! ip netns exec $LAB_LAPTOP iptables-nft -S | grep -q NETEXTD"

e2e_finish "$work/netextd.log" "$work/curl.log" "$work/web.log"
