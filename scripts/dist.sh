#!/usr/bin/env bash
# Builds release archives into dist/: for each architecture a tarball with
# the binary, the systemd units, example configuration and the docs, and a
# .deb (when dpkg-deb is there) that installs the same files and creates the
# shepherd user. Everything comes from this checkout; nothing is downloaded.
#
#   scripts/dist.sh VERSION ARCH...      (make dist)
set -euo pipefail
version=${1:?usage: dist.sh VERSION ARCH...}
shift
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64)
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/dist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# The commit's time, so that the archives of one commit are the same bytes.
epoch=$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)
# Debian versions must start with a digit and sort: a release tag v1.2.3
# (or v1.2.3-4-gabc) becomes 1.2.3 (1.2.3+4-gabc); an untagged commit
# becomes 0.0.0~git<commit>, lower than any release.
if [[ $version =~ ^v?[0-9]+\.[0-9]+ ]]; then
  deb_version=${version#v}
  deb_version=${deb_version/-/+}
else
  deb_version=0.0.0~git$version
fi

for arch in "${archs[@]}"; do
  name=shepherd-$version-linux-$arch
  stage=$work/$name
  mkdir -p "$stage/systemd" "$stage/examples"
  echo "== $name"
  (cd "$top" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -buildvcs=auto -trimpath \
    -o "$stage/shepherd" ./cmd/shepherd)
  cp "$top"/packaging/systemd/*.service "$stage/systemd/"
  cp "$top"/packaging/etc/* "$top"/examples/shepherd.yaml "$stage/examples/"
  cp -r "$top/docs" "$top/README.md" "$top/LICENSE" "$stage/"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$work" -czf "$out/$name.tar.gz" "$name"

  if command -v dpkg-deb >/dev/null 2>&1; then
    root=$work/deb-$arch
    install -D -m 0755 "$stage/shepherd" "$root/usr/bin/shepherd"
    install -d "$root/lib/systemd/system" "$root/etc/shepherd" "$root/usr/share/doc/shepherd"
    install -m 0644 "$stage"/systemd/*.service "$root/lib/systemd/system/"
    install -m 0640 "$stage"/examples/* "$root/etc/shepherd/"
    cp -r "$stage/docs" "$stage/README.md" "$stage/LICENSE" "$root/usr/share/doc/shepherd/"
    install -d "$root/DEBIAN"
    (cd "$root" && find etc -type f | sed 's|^|/|') >"$root/DEBIAN/conffiles"
    cat >"$root/DEBIAN/control" <<CONTROL
Package: shepherd
Version: $deb_version
Architecture: $arch
Maintainer: Shepherd developers <shepherd@localhost>
Section: database
Priority: optional
Description: coordinator for MySQL binlog replication and distributed jobs
 One binary: a ZooKeeper-compatible coordination server, replication
 workers with hot and cold standby, a master-elected cron scheduler and
 log collectors. The units are installed disabled.
CONTROL
    cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  getent group shepherd >/dev/null || addgroup --system shepherd
  getent passwd shepherd >/dev/null || adduser --system --ingroup shepherd \
    --home /var/lib/shepherd --no-create-home shepherd
  chgrp shepherd /etc/shepherd/* && chmod 0640 /etc/shepherd/*
fi
POSTINST
    chmod 0755 "$root/DEBIAN/postinst"
    find "$root" -exec touch -h -d "@$epoch" {} +
    SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zgzip --build "$root" \
      "$out/shepherd_${deb_version}_$arch.deb" >/dev/null
  fi
done
(cd "$out" && sha256sum -- *"$version"* > "SHA256SUMS-$version")
ls -l "$out"
