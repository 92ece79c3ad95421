#!/usr/bin/env bash
# The console part of `make demo`: `shepherd server` on the demo's
# coordination server, its first admin made with `ctl user add` (there is
# no default account), a login through the JSON API, and the URL and login
# printed, with what its pages show, read through its JSON API: the tasks,
# the jobs, the collectors and the monitor's alerts. With a terminal it
# keeps running until Enter is pressed.
#
# Arguments: the shepherd binary, the coordination server (host:port), and
# what the console must show, each of task=NAME, job=NAME, collectors=N and
# resolved=RULE; it waits up to 15s for them and fails without them.
# Environment: SHEPHERD_AUTH_FILE (the demo's credential, set by
# scripts/auth.sh), DEMO_CONSOLE_PORT (default 21812).
set -euo pipefail
BIN=$1
ZK=$2
shift 2
PORT=${DEMO_CONSOLE_PORT:-21812}
DIR=.demo/console
mkdir -p "$DIR"
PW=$(head -c 12 /dev/urandom | base64 | tr -d '/+=')
(umask 077; printf '%s\n' "$PW" >"$DIR/password")
"$BIN" ctl --zk "$ZK" user add --role admin --password-file "$DIR/password" --replace demo
"$BIN" server --zk "$ZK" --listen "127.0.0.1:$PORT" >"$DIR/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
python3 - "$PORT" "$PW" "$@" <<'PY'
import http.cookiejar, json, sys, time, urllib.request
base, pw, expect = "http://127.0.0.1:" + sys.argv[1], sys.argv[2], sys.argv[3:]
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

def get(path):
    return json.load(op.open(base + path, timeout=5))

def view():
    """What the console's pages show, from the API they are built on."""
    tasks = get("/api/v1/tasks")["tasks"]
    jobs = get("/api/v1/jobs")
    cols = get("/api/v1/collectors")["collectors"]
    alerts = get("/api/v1/alerts")
    return tasks, jobs, cols, alerts

def missing(tasks, jobs, cols, alerts):
    have = {"task": {t["name"] for t in tasks}, "job": {j["name"] for j in jobs["jobs"]},
            "resolved": {a["rule"] for a in alerts.get("resolved") or []}}
    out = []
    for e in expect:
        kind, _, want = e.partition("=")
        if kind == "collectors":
            if len(cols) < int(want):
                out.append(e)
        elif want not in have[kind]:
            out.append(e)
    return out

# The first snapshot takes a moment, and the alerts are read beside it.
deadline, last = time.time() + 15, None
while True:
    try:
        v = view()
        last = missing(*v)
        if not last:
            break
    except Exception as e:
        last = [str(e)]
    if time.time() > deadline:
        print("the console does not show", ", ".join(last), file=sys.stderr)
        sys.exit(1)
    time.sleep(0.3)
tasks, jobs, cols, alerts = v
print("what the console shows:")
for t in tasks:
    inst = ", ".join("%s %s" % (i["name"], i["state"]) for i in t.get("instances") or []) or "no core now"
    lc = t.get("lastCommit") or {}
    print("  task %s: desired %s, %s, lastCommit %s:%s by %s" % (t["name"], (t.get("spec") or {}).get("state", "?"),
          inst, lc.get("file", "-"), lc.get("pos", "-"), lc.get("owner", "-")))
if not tasks:
    print("  tasks: none")
for j in jobs["jobs"]:
    r = (j.get("runs") or [{}])[0]
    res = r.get("result") or {}
    print("  job %s: run %s %s on %s" % (j["name"], r.get("runKey", "-"), res.get("status", "-"), res.get("host", "-")))
print("  schedulers running:", len(jobs.get("schedulers") or []))
for c in cols:
    print("  collector %s: %s, %d lines (%s)" % (c["name"], "alive" if c.get("alive") else "not alive",
          c.get("lines", 0), c.get("reason") or "status fresh"))
for a in alerts.get("alerts") or []:
    print("  alert %s (as the monitor last saw it): %s %s" % (a.get("state"), a.get("rule"), a.get("labels")))
for a in alerts.get("resolved") or []:
    print("  alert fired and resolved: %s %s" % (a.get("rule"), a.get("labels")))
PY
echo "console: http://127.0.0.1:$PORT/  user: demo  password: $PW  (log: $DIR/server.log)"
if [ -t 0 ]; then
  read -r -p "the console runs until you press Enter "
fi
