# netext_build ARGS...: `swift build ARGS...` with its progress on standard error — a line at every
# 5 % of the build's steps or every 30 s, whichever comes first — and, if it fails, the compiler's
# errors and the log's last lines. A first release build takes about 15 minutes on two cores;
# later ones take seconds. Usage: source it, then call netext_build -c release [--product P].
netext_build() {
  command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
  local log started=$SECONDS
  log="$(mktemp /tmp/netext-build.XXXXXX)"
  local config=debug
  case " $* " in *" -c release "*|*" --configuration release "*) config=release ;; esac
  if [ ! -d ".build/$config" ]; then
    echo "building NetExt (swift build $*): a first build takes about 15 minutes on two cores, later ones seconds" >&2
  else
    echo "building NetExt (swift build $*)" >&2
  fi
  swift build "$@" > "$log" 2>&1 &
  local builder=$! last=-5 shown=$SECONDS line step total percent
  # Follow the log while the build runs: SwiftPM numbers its steps "[12/345] Compiling …".
  while kill -0 "$builder" 2>/dev/null; do
    line="$(grep -Eo '^\[[0-9]+/[0-9]+\]' "$log" | tail -1)"
    if [ -n "$line" ]; then
      step="${line#[}"; step="${step%%/*}"; total="${line##*/}"; total="${total%]}"
      percent=$(( step * 100 / (total > 0 ? total : 1) ))
      if [ $percent -ge $((last + 5)) ] || [ $((SECONDS - shown)) -ge 30 ]; then
        printf '  %3d %% (step %s of %s, %d s)\n' "$percent" "$step" "$total" $((SECONDS - started)) >&2
        last=$percent; shown=$SECONDS
      fi
    fi
    sleep 2
  done
  wait "$builder"
  local status=$?
  if [ $status -ne 0 ]; then
    echo "the build failed (exit $status):" >&2
    grep -E "error:" "$log" | sort -u | head -20 >&2
    tail -15 "$log" >&2
  else
    echo "built in $((SECONDS - started)) s" >&2
  fi
  rm -f "$log"
  return $status
}
