#!/usr/bin/env bash
# Demo of the distributed scheduler: three schedulers share
# examples/daily-job/jobs.yaml; one run of the daily report is asked for
# now, executed by exactly one of them, and its result read back.
# Usage (from the repository root, with a coordination server running):
#   examples/daily-job/demo.sh bin/shepherd 127.0.0.1:21810
# The jobs live below the chroot DAILY_JOB_CHROOT (default /daily-job-demo);
# `make demo` sets it empty, so that its console, at the root, shows them.
# With DAILY_JOB_PIDS=FILE the schedulers keep running after a successful
# demo (a jobs-file job is listed while a scheduler that has it runs), their
# pids written to FILE for the caller to stop.
set -euo pipefail
BIN=${1:?usage: demo.sh path/to/shepherd host:port}
ZK=${2:?usage: demo.sh path/to/shepherd host:port}${DAILY_JOB_CHROOT-/daily-job-demo}
DIR=.demo/daily-job
mkdir -p "$DIR"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "== three schedulers with examples/daily-job/jobs.yaml"
for i in 1 2 3; do
  "$BIN" scheduler --zk "$ZK" --jobs examples/daily-job/jobs.yaml --host "scheduler-$i" \
    --session-timeout 4s --log-dir "$DIR/logs-$i" >"$DIR/scheduler-$i.log" 2>&1 &
  pids+=($!)
done
sleep 1

echo "== shepherd ctl job run-now --wait 30s daily-report"
"$BIN" ctl --zk "$ZK" job run-now --wait 30s daily-report 2>/dev/null

echo "== shepherd ctl job show daily-report"
"$BIN" ctl --zk "$ZK" job show daily-report

key=$("$BIN" ctl --zk "$ZK" --json job show daily-report | sed -n 's/.*"runKey":"\([^"]*\)".*/\1/p' | tail -n 1)
echo "== the result every scheduler learned: /master_election/daily-report/$key/result"
"$BIN" ctl --zk "$ZK" get "/master_election/daily-report/$key/result"

echo "== shepherd ctl job logs daily-report (the master's log file)"
"$BIN" ctl --zk "$ZK" job logs daily-report

if [ -n "${DAILY_JOB_PIDS:-}" ]; then
  printf '%s\n' "${pids[@]}" >"$DAILY_JOB_PIDS"
  pids=()
  echo "== the schedulers keep running (pids in $DAILY_JOB_PIDS)"
fi
