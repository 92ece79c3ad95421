#!/usr/bin/env bash
# `make demo`: start the bundled coordination server, run a client session
# against it, show what the server reports, then run the scheduler, log
# collection, monitor and replication demos on that same server, so that
# the console started last shows what each of them left in the one tree;
# stop it again.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/shepherd
DEMO=.demo
PORT=${DEMO_PORT:-21810}
ADMIN=${DEMO_ADMIN_PORT:-21811}
mkdir -p "$DEMO"
rm -rf "$DEMO/coord"

echo "== starting shepherd coord on 127.0.0.1:$PORT (data in $DEMO/coord)"
# A 500ms tick lets the server grant the replication cores' 2s session
# timeout (session timeouts are bounded to 2..20 ticks).
"$BIN" coord --listen "127.0.0.1:$PORT" --data-dir "$DEMO/coord" --admin-listen "127.0.0.1:$ADMIN" \
  --tick-time 500ms --4lw srvr,ruok >"$DEMO/coord.log" 2>&1 &
pid=$!
# The schedulers outlive their demo so that the console lists their job;
# they are stopped here, before the server.
SCHEDULERS=$DEMO/daily-job.pids
rm -f "$SCHEDULERS"
cleanup() {
  if [ -s "$SCHEDULERS" ]; then
    while read -r p; do kill "$p" 2>/dev/null || true; done <"$SCHEDULERS"
    while read -r p; do
      for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done <"$SCHEDULERS"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
}
trap cleanup EXIT

for _ in $(seq 1 50); do
  if [ "$( (exec 3<>/dev/tcp/127.0.0.1/$PORT && printf ruok >&3 && cat <&3) 2>/dev/null)" = imok ]; then break; fi
  sleep 0.1
done
. scripts/auth.sh
use_admin_auth "$DEMO/coord"

echo "== a ZooKeeper client session (go-zookeeper/zk) against it"
go run ./examples/coord-session --zk "127.0.0.1:$PORT"

echo "== the server's own view: four-letter word srvr"
(exec 3<>/dev/tcp/127.0.0.1/$PORT && printf srvr >&3 && cat <&3)

echo "== Prometheus metrics (excerpt) from http://127.0.0.1:$ADMIN/metrics"
(exec 3<>/dev/tcp/127.0.0.1/$ADMIN && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) | grep -E '^shepherd_coord_(znodes|transactions_total|sessions) ' || true

if [ -x /usr/share/zookeeper/bin/zkCli.sh ]; then
  echo "== Apache ZooKeeper's own zkCli.sh against it"
  /usr/share/zookeeper/bin/zkCli.sh -server "127.0.0.1:$PORT" ls / 2>/dev/null | tail -n 2
fi
echo "== the distributed scheduler: a daily job run exactly once by an elected master"
DAILY_JOB_CHROOT= DAILY_JOB_PIDS="$SCHEDULERS" examples/daily-job/demo.sh "$BIN" "127.0.0.1:$PORT"

echo "== log collection: two collectors on example logs, through rotation, truncation and a kill -9"
SHEPHERD_ZK="127.0.0.1:$PORT" examples/logs/demo.sh "$BIN"

echo "== the monitor: an alert fires and resolves, each sent to a webhook once"
examples/monitor/demo.sh "$BIN" "127.0.0.1:$PORT"

echo "== replication: MariaDB source -> MariaDB target, two cores in hot standby, kill -9 of the RUNNING one"
rm -f .demo/replication/task.yaml
BIN="$BIN" DEMO_ZK="127.0.0.1:$PORT" scripts/demo-replication.sh
# What the console must show: each demo left its part in the one tree (the
# replication task only where MariaDB is installed and so it ran).
expect=(job=daily-report collectors=2 resolved=TaskNotRunning)
if [ -s .demo/replication/task.yaml ]; then expect=(task=copy_hot_item "${expect[@]}"); fi

echo "== the control console: shepherd server, its first admin made with ctl user add"
scripts/demo-console.sh "$BIN" "127.0.0.1:$PORT" "${expect[@]}"

echo "== done; server log in $DEMO/coord.log"
