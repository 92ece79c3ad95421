#!/usr/bin/env bash
# The console part of `make demo`: `shepherd server` on the demo's
# coordination server, its first admin made with `ctl user add` (there is
# no default account), a login through the JSON API, and the URL and login
# printed. With a terminal it keeps running until Enter is pressed.
#
# Arguments: the shepherd binary and the coordination server (host:port).
# Environment: SHEPHERD_AUTH_FILE (the demo's credential, set by
# scripts/auth.sh), DEMO_CONSOLE_PORT (default 21812).
set -euo pipefail
BIN=$1
ZK=$2
PORT=${DEMO_CONSOLE_PORT:-21812}
DIR=.demo/console
mkdir -p "$DIR"
PW=$(head -c 12 /dev/urandom | base64 | tr -d '/+=')
(umask 077; printf '%s\n' "$PW" >"$DIR/password")
"$BIN" ctl --zk "$ZK" user add --role admin --password-file "$DIR/password" --replace demo
"$BIN" server --zk "$ZK" --listen "127.0.0.1:$PORT" >"$DIR/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
python3 - "$PORT" "$PW" <<'PY'
import http.cookiejar, json, sys, time, urllib.request
base, pw = "http://127.0.0.1:" + sys.argv[1], sys.argv[2]
op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
for _ in range(100):
    try:
        op.open(base + "/health", timeout=2)
        break
    except Exception:
        time.sleep(0.2)
login = urllib.request.Request(base + "/login", data=json.dumps({"user": "demo", "password": pw}).encode(),
                               headers={"Content-Type": "application/json"})
print("logged in:", json.load(op.open(login, timeout=5)))
for _ in range(50):  # the first snapshot takes a moment
    try:
        tasks = json.load(op.open(base + "/api/v1/tasks", timeout=5))["tasks"]
        break
    except Exception:
        time.sleep(0.2)
print("tasks the console sees:", [t["name"] for t in tasks] or "none")
PY
echo "console: http://127.0.0.1:$PORT/  user: demo  password: $PW  (log: $DIR/server.log)"
if [ -t 0 ]; then
  read -r -p "the console runs until you press Enter "
fi
