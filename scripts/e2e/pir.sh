#!/usr/bin/env bash
# End-to-end checks of the URL filter's PIR pieces with the real binaries, over loopback:
# netext-urlfilter-db build (a bad line is refused with its number; a good list gives the
# prefilter and the PIR database), netext-server pir (config, key, queries, metrics; malformed
# requests refused while it keeps serving; SIGHUP reloads a rebuilt database), and
# netext-urlfilter-db query (allow/deny per URL, checked the way the system does).
# Usage: NETEXT_BIN_DIR=DIR scripts/e2e/pir.sh   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
source scripts/lib/e2e.sh pir

use_case=com.example.app.url.filtering
db="$work/db"
python3 - "$work/urls.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("# test list\n")
    for i in range(3000):
        f.write(f"https://www.site{i}.example/path{i % 7}/\n")
    f.write("blocked.example/a/\nWHOLE-SITE.example\nhttps://b\u00fccher.example/\n")
PY
printf 'good.example\nhttps://ok.example/\nhttp://exa mple.com/\n' > "$work/bad.txt"

bad_build() {
  "$bin/netext-urlfilter-db" build --urls "$work/bad.txt" --false-positive-rate 0.01 --use-case "$use_case" --output "$work/bad" \
    > "$work/bad.out" 2>&1
  [ $? -eq 3 ] && grep -q 'line 3: contains spaces' "$work/bad.out" && [ ! -e "$work/bad/pir" ]
}
check "a list with a malformed line is refused, naming the line, and nothing is written" bad_build

build() {
  "$bin/netext-urlfilter-db" build --urls "$1" --false-positive-rate 0.001 --use-case "$use_case" --output "$db" > "$work/build.out" 2>&1
}
check "the list builds" build "$work/urls.txt"
check "the build reports counts, prefilter shape and false-positive rates" \
  grep -q 'urls=3003 lines=3004 duplicates=0' "$work/build.out"
check "prefilter.bin is exactly the Bloom bytes prefilter.json describes" python3 - "$db" <<'PY'
import json, os, sys
d = sys.argv[1]
meta = json.load(open(f"{d}/prefilter.json"))
assert os.path.getsize(f"{d}/prefilter.bin") == (meta["bitCount"] + 7) // 8, meta
assert meta["itemCount"] == 3003 and meta["hashCount"] >= 1, meta
PY
check "the PIR database has its configuration and a checksummed shard" \
  bash -c "[ -s '$db/pir/$use_case/config.binpb' ] && [ -s '$db/pir/$use_case/shard-0000.pirdb' ]"

"$bin/netext-server" pir --database "$db" --listen 127.0.0.1:0 --threads 2 > "$work/server.log" 2>&1 &
server_pid=$!
lab_wait "grep -q 'listen=127.0.0.1:[1-9]' '$work/server.log'" 20
port="$(sed -n 's/.*listen=127.0.0.1:\([0-9]*\).*/\1/p' "$work/server.log" | head -1)"
server="http://127.0.0.1:$port"
stop_server() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
trap 'stop_server; e2e_cleanup' EXIT

query() {
  "$bin/netext-urlfilter-db" query --server "$server" --use-case "$use_case" --prefilter "$db" "$@" 2>>"$work/query.err"
}
verdicts() {
  local expected="$1"; shift
  local got
  got="$(query "$@" | awk '{print $2}' | paste -sd ' ')"
  [ "$got" = "$expected" ] || { echo "  got: $got; expected: $expected"; return 1; }
}
check "listed URLs are denied, others allowed (paths, parent domains, IDN)" verdicts "deny deny deny allow deny allow allow deny" \
  https://www.site42.example/path0/x.html "http://www.site2999.example/path3/?q=1" https://blocked.example/a/b/c \
  https://blocked.example/b https://cdn.whole-site.example/app.js https://site42.example/path0/ https://nowhere.example/ \
  "https://B$(printf '\xc3\xbc')cher.example/"
printed() { [ "$(query https://nowhere.example/)" = "https://nowhere.example/ allow" ]; }
check "the answer is printed as 'URL verdict'" printed
check "an unreachable server is an error with a reason" bash -c \
  "! '$bin/netext-urlfilter-db' query --server http://127.0.0.1:9 --use-case '$use_case' https://x.example/ 2>&1 | grep -q allow"

check "a malformed query body gets 400" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary garbage '$server/queries') = 400 ]"
check "an oversized config request gets 413" bash -c "head -c 100000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @- '$server/config' | grep -qx 413"
check "an unknown endpoint gets 404" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '$server/admin') = 404 ]"
check "the server is still up and answering after bad requests" verdicts "deny" https://www.site7.example/path0/
check "metrics count the queries and the refused requests" bash -c \
  "curl -s '$server/metrics' | grep -q 'netext_pir_queries_total [1-9]' && curl -s '$server/metrics' | grep -q 'endpoint=\"/queries\",status=\"400\"'"
check "the server log names no URL" bash -c "! grep -Eqi 'site[0-9]|blocked|whole-site|nowhere|bcher' '$work/server.log'"

# Rebuild with a new record and reload with SIGHUP.
printf 'https://newly-blocked.example/\n' >> "$work/urls.txt"
check "the rebuilt list builds in place" build "$work/urls.txt"
kill -HUP "$server_pid"
lab_wait "curl -s '$server/metrics' | grep -q 'netext_pir_reloads_total{result=\"ok\"} 1'" 20
check "after SIGHUP the new record is denied" verdicts "deny allow" https://newly-blocked.example/ https://newly.example/
echo "not a shard" > "$db/pir/$use_case/shard-0000.pirdb"
kill -HUP "$server_pid"
lab_wait "curl -s '$server/metrics' | grep -q 'netext_pir_reloads_total{result=\"failed\"} 1'" 20
check "a corrupt database fails to reload, and the old one keeps serving" verdicts "deny" https://newly-blocked.example/
check "the failed reload is logged with the file at fault" bash -c "grep 'reload failed' '$work/server.log' | grep -q 'shard-0000.pirdb: not a NetExt processed shard'"
stop_server
check "the server stops on SIGTERM" bash -c "! kill -0 $server_pid 2>/dev/null"
e2e_finish "$work/server.log" "$work/query.err" "$work/build.out"
