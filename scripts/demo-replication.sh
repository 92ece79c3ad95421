#!/usr/bin/env bash
# The replication part of `make demo`: two private mariadbd servers (source
# and target) in .demo/replication, and two `shepherd core` processes in hot
# standby for one task. Rows are written to the source; the RUNNING core is
# killed with SIGKILL in the middle; the STANDBY takes over and the two
# servers' tables end up identical. The task stays stored, so the console
# started after it shows what ran.
#
# Environment: BIN (default bin/shepherd), DEMO_REPL_PORT (first of three
# loopback ports, default 21820), DEMO_ROWS (default 50000), DEMO_ZK: the
# coordination server to use (host:port; `make demo` passes its own, with
# its credential in SHEPHERD_AUTH_FILE). Without DEMO_ZK the script starts
# its own `shepherd coord` on the first port. Either server must grant the
# cores' 2s session timeout: a tick of 500ms or less (--tick-time).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/shepherd}
DIR=.demo/replication
BASE=${DEMO_REPL_PORT:-21820}
ZK_PORT=$BASE SRC_PORT=$((BASE + 1)) DST_PORT=$((BASE + 2))
ROWS=${DEMO_ROWS:-50000}
ZK=${DEMO_ZK:-127.0.0.1:$ZK_PORT}
TASK=copy_hot_item
SESSION_TIMEOUT=2s

MARIADBD=$(command -v mariadbd || true)
[ -n "$MARIADBD" ] || MARIADBD=/usr/sbin/mariadbd
INSTALL_DB=$(command -v mariadb-install-db || true)
CLIENT=$(command -v mariadb || command -v mysql || true)
if [ ! -x "$MARIADBD" ] || [ -z "$INSTALL_DB" ] || [ -z "$CLIENT" ]; then
  echo "== replication demo skipped: it needs MariaDB's server and client"
  echo "   (mariadbd, mariadb-install-db, mariadb). Install them with:"
  echo "     sudo apt-get install mariadb-server mariadb-client     # Debian, Ubuntu"
  echo "     sudo dnf install mariadb-server                        # Fedora, RHEL"
  echo "     brew install mariadb                                   # macOS"
  exit 0
fi
if [ ! -x "$BIN" ]; then
  echo "missing $BIN: run make build (or make demo)" >&2
  exit 1
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

rm -rf "$DIR"
mkdir -p "$DIR"
user_args=()
if [ "$(id -u)" = 0 ]; then user_args=(--user=root); fi
small=(--innodb-buffer-pool-size=32M --innodb-log-file-size=16M --performance-schema=OFF)

# start_mariadb NAME PORT SERVER_ID: a private server with binlog in ROW format.
start_mariadb() {
  local name=$1 port=$2 id=$3 d=$DIR/$1
  mkdir -p "$d"
  "$INSTALL_DB" --no-defaults --auth-root-authentication-method=normal --skip-test-db \
    --datadir="$PWD/$d/data" "${user_args[@]}" >"$d/install.log" 2>&1
  "$MARIADBD" --no-defaults --datadir="$PWD/$d/data" --port="$port" --bind-address=127.0.0.1 \
    --socket="$PWD/$d/sock" --pid-file="$PWD/$d/pid" --log-error="$PWD/$d/error.log" \
    --log-bin=mysql-bin --binlog-format=ROW --binlog-row-image=FULL --server-id="$id" \
    --skip-name-resolve "${small[@]}" "${user_args[@]}" >"$d/out.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    if sql "$port" -e 'SELECT 1' >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "mariadbd $name did not start; see $d/error.log" >&2
  exit 1
}
sql() { local port=$1; shift; "$CLIENT" -h127.0.0.1 -P"$port" -uroot --batch --skip-column-names "$@"; }
ctl() { "$BIN" ctl --zk "$ZK" "$@"; }
owner_state() { ctl task list | awk -v t="$TASK" '$1 == t { print $4, $5 }'; }
wait_owner() { # wait_owner HOST-PREFIX STATE
  for _ in $(seq 1 300); do
    case "$(owner_state)" in "$1"-*" $2") return 0 ;; esac
    sleep 0.1
  done
  echo "timed out waiting for $1 to be $2" >&2
  ctl task show "$TASK" >&2
  exit 1
}

echo "== starting two mariadbd servers: source on :$SRC_PORT, target on :$DST_PORT (in $DIR)"
start_mariadb source "$SRC_PORT" 1
start_mariadb target "$DST_PORT" 2
schema="CREATE DATABASE shop;
CREATE TABLE shop.items (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL);
CREATE TABLE shop.counters (id INT PRIMARY KEY, counter BIGINT NOT NULL);
INSERT INTO shop.counters VALUES (1,0),(2,0),(3,0);"
sql "$SRC_PORT" -e "$schema"
sql "$DST_PORT" -e "$schema"

if [ -n "${DEMO_ZK:-}" ]; then
  if [ -z "${SHEPHERD_AUTH_FILE:-}" ]; then
    echo "DEMO_ZK=$DEMO_ZK needs that server's credential in SHEPHERD_AUTH_FILE (its admin.auth)" >&2
    exit 1
  fi
  echo "== using the coordination server $ZK (credential $SHEPHERD_AUTH_FILE)"
else
  echo "== starting shepherd coord on $ZK"
  # A 500ms tick lets the server grant the cores' 2s session timeout: servers
  # bound session timeouts to 2..20 ticks, 4s..40s with the default 2s tick.
  "$BIN" coord --listen "$ZK" --data-dir "$DIR/coord" --tick-time 500ms --4lw srvr,ruok >"$DIR/coord.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 50); do
    if [ "$( (exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT && printf ruok >&3 && cat <&3) 2>/dev/null)" = imok ]; then break; fi
    sleep 0.1
  done
  . scripts/auth.sh
  use_admin_auth "$DIR/coord"
fi

echo "== adding task $TASK: shop.* from :$SRC_PORT to :$DST_PORT, hot standby"
cat >"$DIR/task.yaml" <<EOF
name: $TASK
source: {host: 127.0.0.1, port: $SRC_PORT, user: root, flavor: mariadb}
target: {host: 127.0.0.1, port: $DST_PORT, user: root, flavor: mariadb}
filter: {include: [shop.*]}
start: current
EOF
ctl task add -f "$DIR/task.yaml"

echo "== starting two cores, a then b (session timeout $SESSION_TIMEOUT)"
core() {
  "$BIN" core --zk "$ZK" --host "$1" --task "$TASK" --session-timeout "$SESSION_TIMEOUT" \
    --checkpoint-interval 200ms >"$DIR/core-$1.log" 2>&1 &
  pids+=($!)
}
core a
wait_owner a RUNNING
core_a=${pids[-1]}
core b
sleep 1
ctl task show "$TASK"

echo "== writing $ROWS rows to the source (batches of 500, each followed by counter = counter + 1)"
(
  for start in $(seq 0 500 $((ROWS - 1))); do
    values=$(seq "$start" $((start + 499)) | sed 's/.*/(&,&,"demo-row")/' | paste -sd, -)
    printf 'INSERT INTO shop.items VALUES %s;\nUPDATE shop.counters SET counter = counter + 1 WHERE id = %d;\n' \
      "$values" $((start / 500 % 3 + 1))
  done
) | sql "$SRC_PORT" &
writer=$!
pids+=($writer)
for _ in $(seq 1 300); do
  n=$(sql "$DST_PORT" -e 'SELECT COUNT(*) FROM shop.items')
  [ "$n" -ge $((ROWS / 3)) ] && break
  sleep 0.05
done

echo "== the target has $n rows: killing the RUNNING core a (pid $core_a) with SIGKILL"
killed=$(date +%s%N)
{ kill -9 "$core_a" && wait "$core_a"; } 2>/dev/null || true
wait_owner b RUNNING
echo "== b is RUNNING $(( ($(date +%s%N) - killed) / 1000000 )) ms after the kill (the session timeout is $SESSION_TIMEOUT)"
ctl task show "$TASK"

wait "$writer"
echo "== the source is done; waiting for the target to catch up"
for _ in $(seq 1 600); do
  s=$(sql "$SRC_PORT" -e 'CHECKSUM TABLE shop.items, shop.counters' | awk '{print $2}' | paste -sd' ' -)
  t=$(sql "$DST_PORT" -e 'CHECKSUM TABLE shop.items, shop.counters' | awk '{print $2}' | paste -sd' ' -)
  [ "$s" = "$t" ] && break
  sleep 0.1
done
totals='SELECT CONCAT((SELECT COUNT(*) FROM shop.items), " items, counters summing to ", (SELECT SUM(counter) FROM shop.counters))'
echo "source: $(sql "$SRC_PORT" -e "$totals"); CHECKSUM TABLE: $s"
echo "target: $(sql "$DST_PORT" -e "$totals"); CHECKSUM TABLE: $t"
if [ "$s" != "$t" ]; then
  echo "== MISMATCH: the target differs from the source" >&2
  exit 1
fi
echo "== checksums match. lastCommit:"
ctl get "/mysql_replicator/tasks/$TASK/lastCommit"
echo "== done; logs in $DIR"
