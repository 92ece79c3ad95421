#!/usr/bin/env bash
# `make demo`: start the bundled coordination server, run a client session
# against it, show what the server reports, and stop it again.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/shepherd
DEMO=.demo
PORT=${DEMO_PORT:-21810}
ADMIN=${DEMO_ADMIN_PORT:-21811}
mkdir -p "$DEMO"
rm -rf "$DEMO/coord"

echo "== starting shepherd coord on 127.0.0.1:$PORT (data in $DEMO/coord)"
"$BIN" coord --listen "127.0.0.1:$PORT" --data-dir "$DEMO/coord" --admin-listen "127.0.0.1:$ADMIN" \
  --4lw srvr,ruok >"$DEMO/coord.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT

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
examples/daily-job/demo.sh "$BIN" "127.0.0.1:$PORT"

echo "== log collection: two collectors on example logs, through rotation, truncation and a kill -9"
SHEPHERD_ZK="127.0.0.1:$PORT" examples/logs/demo.sh "$BIN"

echo "== the monitor: an alert fires and resolves, each sent to a webhook once"
examples/monitor/demo.sh "$BIN" "127.0.0.1:$PORT"

echo "== replication: MariaDB source -> MariaDB target, two cores in hot standby, kill -9 of the RUNNING one"
BIN="$BIN" scripts/demo-replication.sh

echo "== the control console: shepherd server, its first admin made with ctl user add"
scripts/demo-console.sh "$BIN" "127.0.0.1:$PORT"

echo "== done; server log in $DEMO/coord.log"
