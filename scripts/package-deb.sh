#!/usr/bin/env bash
# Builds the Debian package of hairpind and hairpinctl: the binaries, the systemd unit, the
# default settings (a conffile), and man pages rendered from the command-line definitions.
#
#   scripts/package-deb.sh [--bin-dir DIR] [--out DIR]
#
# Without --bin-dir it builds the release binaries (a no-op after test.sh's release build).
# Prints the path of the .deb it wrote (default directory target/debian).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=
OUT=$REPO/target/debian
while (($#)); do
    case $1 in
        --bin-dir) BIN_DIR=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "usage: $0 [--bin-dir DIR] [--out DIR]" >&2; exit 2 ;;
    esac
done
if [[ -z $BIN_DIR ]]; then
    (cd "$REPO" && cargo build --release -q -p hairpind -p hairpinctl)
    BIN_DIR=$REPO/target/release
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/Cargo.toml" | head -n 1)
ARCH=$(dpkg --print-architecture)
NAME=hairpin_${VERSION}_${ARCH}
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/$NAME

install -D -m 0755 "$BIN_DIR/hairpind" "$ROOT/usr/sbin/hairpind"
install -D -m 0755 "$BIN_DIR/hairpinctl" "$ROOT/usr/bin/hairpinctl"
strip --strip-debug "$ROOT/usr/sbin/hairpind" "$ROOT/usr/bin/hairpinctl"
install -D -m 0644 "$REPO/packaging/debian/hairpind.service" \
    "$ROOT/lib/systemd/system/hairpind.service"
install -D -m 0644 "$REPO/packaging/debian/hairpind.toml" "$ROOT/etc/hairpin/hairpind.toml"
install -d "$ROOT/usr/share/man/man8" "$ROOT/usr/share/man/man1" "$ROOT/usr/share/doc/hairpin"
"$BIN_DIR/hairpind" --man-page | gzip -9n >"$ROOT/usr/share/man/man8/hairpind.8.gz"
"$BIN_DIR/hairpinctl" man-page | gzip -9n >"$ROOT/usr/share/man/man1/hairpinctl.1.gz"
for doc in config.md operations.md; do
    install -m 0644 "$REPO/docs/$doc" "$ROOT/usr/share/doc/hairpin/$doc"
done

install -d "$ROOT/DEBIAN"
echo /etc/hairpin/hairpind.toml >"$ROOT/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
cat >"$ROOT/DEBIAN/control" <<CONTROL
Package: hairpin
Version: $VERSION
Architecture: $ARCH
Maintainer: Hairpin developers <hairpin@example.invalid>
Installed-Size: $SIZE
Depends: libc6 (>= 2.34)
Recommends: bubblewrap, nats-server
Section: net
Priority: optional
Homepage: https://example.invalid/hairpin
Description: hybrid hardware/software OpenFlow 1.3 switch
 hairpind forwards between Linux interfaces (AF_PACKET, AF_XDP) under the
 control of OpenFlow 1.3 controllers; hairpinctl operates it like ovs-ofctl
 and ovs-appctl together.
CONTROL
mkdir -p "$OUT"
dpkg-deb --root-owner-group -Zgzip --build "$ROOT" "$OUT/$NAME.deb" >/dev/null
echo "$OUT/$NAME.deb"
