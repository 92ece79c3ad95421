#!/usr/bin/env bash
# Log collection demo: two `shepherd collector` processes (both candidates
# for the assigner) collect the example logs of this directory, which are
# appended to, rotated and truncated while they run; then `shepherd ctl
# collector list` shows who holds what, one collector is killed and the
# other takes its sources over without losing or repeating a line.
#
# Usage: examples/logs/demo.sh [shepherd binary]   (run from anywhere; make build first)
# With SHEPHERD_ZK set it uses that server; otherwise it starts `shepherd coord`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=$(realpath "${1:-$root/bin/shepherd}")
work="$root/.demo/logs"
rm -rf "$work" && mkdir -p "$work/src" "$work/out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

if [ -z "${SHEPHERD_ZK:-}" ]; then
  port=${DEMO_LOGS_PORT:-21820}
  "$BIN" coord --listen "127.0.0.1:$port" --data-dir "$work/coord" --4lw srvr,ruok >"$work/coord.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 50); do
    if [ "$( (exec 3<>/dev/tcp/127.0.0.1/$port && printf ruok >&3 && cat <&3) 2>/dev/null)" = imok ]; then break; fi
    sleep 0.1
  done
  export SHEPHERD_ZK="127.0.0.1:$port/demo-logs"
  . "$root/scripts/auth.sh"
  use_admin_auth "$work/coord"
fi
cp "$here/app.log" "$here/web.log" "$work/src/"

echo "== sources"
"$BIN" ctl source add "file://$work/src/app.log*" "file://$work/src/web.log"
"$BIN" ctl source list

echo "== two collectors, both candidates for the assigner (local strategy)"
for n in alpha beta; do
  "$BIN" collector --name "$n" --out "$work/out" --assign --strategy local \
    --session-timeout 4s --status-interval 200ms --read-timeout 500ms --dead-after 2s --assign-interval 200ms >"$work/$n.log" 2>&1 &
  pids+=($!)
done
beta=${pids[-1]}
sleep 2
"$BIN" ctl collector list --dead-after 2s

echo "== appending, then rotating app.log and truncating web.log in place"
for i in $(seq 1 5); do echo "2026-11-22T06:00:0${i}Z INFO appended line $i" >>"$work/src/app.log"; done
mv "$work/src/app.log" "$work/src/app.log.1"
echo "2026-11-22T06:00:10Z INFO first line after rotation" >"$work/src/app.log"
: >"$work/src/web.log"
echo '127.0.0.1 - - [22/Nov/2026:06:00:11 +0000] "GET / HTTP/1.1" 200 12' >>"$work/src/web.log"
sleep 1

echo "== kill -9 beta; alpha takes its sources over (if beta was the assigner, after its session expires too)"
kill -9 "$beta"
for _ in $(seq 1 100); do
  "$BIN" ctl collector list --dead-after 2s | grep -q '^beta:' || break
  sleep 0.2
done
echo "2026-11-22T06:00:20Z INFO written while beta is dead" >>"$work/src/app.log"
sleep 1
"$BIN" ctl collector list --dead-after 2s

expected=$(( $(wc -l <"$here/app.log") + 5 + 1 + 1 + $(wc -l <"$here/web.log") + 1 ))
got=$(cat "$work"/out/*/*.log | wc -l)
dups=$(cat "$work"/out/*/*.log | sort | uniq -d | wc -l)
echo "== output segments under $work/out"
ls "$work"/out/*
echo "== $got lines collected, $expected written, $dups duplicated"
[ "$got" -eq "$expected" ] && [ "$dups" -eq 0 ]
