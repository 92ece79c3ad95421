# Sourced by the demo scripts: after `shepherd coord --data-dir D` is up,
# `use_admin_auth D` exports SHEPHERD_AUTH_FILE=D/admin.auth, the admin
# credential the server generated on its first start (mode 0600), so that
# every shepherd process and ctl command of the demo authenticates and
# creates its nodes with that identity's ACL (docs/security.md).
use_admin_auth() {
  local f="$1/admin.auth"
  # FALLBACK, delete once `shepherd coord` writes admin.auth itself: a
  # digest identity is any user:password the client picks, so a file we
  # make works the same with the bundled server and Apache ZooKeeper.
  if [ ! -s "$f" ]; then
    (umask 077 && printf 'shepherd:%s\n' "$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >"$f")
  fi
  export SHEPHERD_AUTH_FILE="$f"
  echo "== credentials: every process below authenticates with $f (SHEPHERD_AUTH_FILE)"
}
