# Sourced by the demo scripts: after `shepherd coord --data-dir D` is up,
# `use_admin_auth D` exports SHEPHERD_AUTH_FILE=D/admin.auth, the admin
# credential the server generated on its first start (mode 0600), so that
# every shepherd process and ctl command of the demo authenticates and
# creates its nodes with that identity's ACL (docs/security.md).
use_admin_auth() {
  local f="$1/admin.auth"
  if [ ! -s "$f" ]; then
    echo "the coordination server did not write its admin credential $f; see its log" >&2
    exit 1
  fi
  export SHEPHERD_AUTH_FILE="$f"
  echo "== credentials: every process below authenticates with $f (SHEPHERD_AUTH_FILE)"
}
