#!/usr/bin/env bash
# The monitor part of `make demo`: `shepherd monitor` with a webhook; a task
# that should run but has no core fires TaskNotRunning, stopping it resolves
# the alert; each reaches the webhook once.
# Usage: examples/monitor/demo.sh BIN ZK (credential from SHEPHERD_AUTH_FILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$1 ZK=$2
DIR=.demo/monitor
HOOK_PORT=${DEMO_MONITOR_PORT:-21830}
METRICS=127.0.0.1:$((HOOK_PORT + 1))
mkdir -p "$DIR"
: >"$DIR/webhook.log"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

python3 -u examples/monitor/receiver.py "$HOOK_PORT" >"$DIR/webhook.log" 2>&1 &
pids+=($!)
"$BIN" monitor --zk "$ZK" --monitor-config examples/monitor/monitor.yaml --webhook "http://127.0.0.1:$HOOK_PORT/" \
  --metrics-listen "$METRICS" >"$DIR/monitor.log" 2>&1 &
pids+=($!)

# wait_for PATTERN: until the webhook has received a line matching it.
wait_for() {
  for _ in $(seq 1 300); do
    if grep -q "$1" "$DIR/webhook.log"; then return 0; fi
    sleep 0.1
  done
  echo "the webhook did not receive $1; monitor log:" >&2
  tail -n 20 "$DIR/monitor.log" >&2
  exit 1
}

echo "   a task that should run, with no core for it"
"$BIN" ctl --zk "$ZK" task add -f examples/monitor/task.yaml
wait_for "FIRING TaskNotRunning"
echo "   stopped on purpose: the alert resolves"
"$BIN" ctl --zk "$ZK" task stop demo_unattended
wait_for "RESOLVED TaskNotRunning"
cat "$DIR/webhook.log"
"$BIN" ctl --zk "$ZK" alert list | sed 's/^/   /'
echo "   cluster metrics (excerpt) from http://$METRICS/metrics"
(exec 3<>"/dev/tcp/${METRICS%:*}/${METRICS#*:}" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) |
  grep -E '^shepherd_(task_running|task_desired_running|monitor_active)' | sed 's/^/   /' || true
"$BIN" ctl --zk "$ZK" task rm demo_unattended
