#!/usr/bin/env bash
# Installs, from Debian packages, the real peers that Shepherd's tests or demo
# talk to, and only those that are missing. Used by `make test`, `make demo`
# and .ci/run, so the README's two commands are the whole set-up.
#
#   scripts/install-deps.sh test   # everything `make test` needs
#   scripts/install-deps.sh demo   # what `make demo` needs (MariaDB)
#
# Idempotent: with everything present it installs nothing and says so in one
# line. Needs root or password-less sudo only when something is missing.
set -euo pipefail

mode=${1:-test}
need=()

# want PACKAGE... if the probe command fails.
want() {
  local probe=$1
  shift
  if ! eval "$probe" >/dev/null 2>&1; then
    need+=("$@")
  fi
}

mariadb_probe='[ -x /usr/sbin/mariadbd ] && command -v mariadb-install-db && command -v mariadb'
case "$mode" in
test)
  want '[ -f /usr/share/java/zookeeper.jar ] && [ -f /usr/share/java/slf4j-simple.jar ]' zookeeper
  # kazoo only for the system interpreter: the python3 first on PATH may be another install.
  want '/usr/bin/python3 -c "import kazoo.client"' python3-kazoo
  want "$mariadb_probe" mariadb-server mariadb-client
  want '[ -f /usr/share/java/curator-recipes.jar ] && command -v javac' \
    libcurator-recipes-java libcurator-framework-java libcurator-client-java default-jdk-headless
  want '[ -x /usr/sbin/logrotate ]' logrotate
  # The NATS JetStream sink's tests start a real nats-server.
  want '[ -x /usr/sbin/nats-server ]' nats-server
  # The console's browser tests drive a real headless Chromium.
  want 'command -v chromium' chromium
  # The monitor's shipped rules are checked by promtool, scraped by a real Prometheus.
  want 'command -v promtool && command -v prometheus' prometheus
  # ... and post their Alertmanager-format notifications to a real Alertmanager.
  want 'command -v prometheus-alertmanager' prometheus-alertmanager
  # The monitor's e-mail notifications go to a real SMTP server.
  want '/usr/bin/python3 -c "import aiosmtpd"' python3-aiosmtpd
  # The DNS server's answers are checked with a real dig.
  want 'command -v dig' bind9-dnsutils
  ;;
demo)
  want "$mariadb_probe" mariadb-server mariadb-client
  ;;
*)
  echo "usage: $0 test|demo" >&2
  exit 2
  ;;
esac

if [ ${#need[@]} -eq 0 ]; then
  echo "install-deps ($mode): every peer is installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get on this machine; install the equivalents of: ${need[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "install-deps: missing ${need[*]}; run as root, or give this user sudo, or install them with:" >&2
  echo "  sudo apt-get install ${need[*]}" >&2
  exit 1
fi
echo "install-deps ($mode): installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${need[@]}"
