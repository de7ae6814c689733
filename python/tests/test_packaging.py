"""The Debian package (scripts/package-deb.sh, built by scripts/test.sh): its contents, its
systemd unit's hardening, and the daemon started from the unit's ExecStart line as systemd
would start it (no systemd here): in a mount namespace whose /run is fresh, with the unit's
RuntimeDirectory made, the package's files where the unit names them (the extracted tree
stands in for /, as with ``dpkg --root``), and a network namespace of its own.

The package comes from $HAIRPIN_DEB, else target/debian/hairpin_*.deb; without one the test
fails (never skips): the test command builds it.
"""

from __future__ import annotations

import gzip
import os
import shlex
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("root")

REPO = Path(__file__).resolve().parents[2]
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "RuntimeDirectory": "hairpin",
    "RestrictSUIDSGID": "yes",
}


def find_deb() -> Path:
    env = os.environ.get("HAIRPIN_DEB")
    if env:
        return Path(env)
    debs = sorted((REPO / "target" / "debian").glob("hairpin_*.deb"))
    if not debs:
        raise FileNotFoundError("no target/debian/hairpin_*.deb: run scripts/package-deb.sh")
    return debs[-1]


def unit_settings(text: str) -> dict[str, str]:
    settings = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings


def test_the_package_installs_and_its_unit_starts_the_daemon(tmp_path: Path) -> None:
    deb = find_deb()
    fields = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Package", "Version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Package: hairpin" in fields, fields
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    conffiles = subprocess.run(
        ["dpkg-deb", "--ctrl-tarfile", str(deb)], capture_output=True, check=True
    ).stdout
    assert b"conffiles" in conffiles

    for binary in ("usr/sbin/hairpind", "usr/bin/hairpinctl"):
        path = root / binary
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True)
        version = fields.split("Version: ")[1].strip()
        assert out.stdout.strip() == f"{path.name} {version}", out.stdout
    assert gzip.decompress((root / "usr/share/man/man8/hairpind.8.gz").read_bytes()).count(
        b"\\-\\-metrics"
    )
    ctl_page = gzip.decompress((root / "usr/share/man/man1/hairpinctl.1.gz").read_bytes())
    assert b".TH hairpinctl 1" in ctl_page and b"summary" in ctl_page

    unit = unit_settings((root / "lib/systemd/system/hairpind.service").read_text())
    for key, expected in HARDENING.items():
        assert unit.get(key) == expected, f"{key}={unit.get(key)}"
    for capability in ("CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_BPF"):
        assert capability in unit["CapabilityBoundingSet"]
    argv = shlex.split(unit["ExecStart"])
    assert argv[0] == "/usr/sbin/hairpind", argv
    # The package's files stand where the unit names them.
    argv = [str(root / a.lstrip("/")) if (root / a.lstrip("/")).exists() else a for a in argv]
    assert (root / "etc/hairpin/hairpind.toml").as_posix() in argv, argv
    ctl = root / "usr/bin/hairpinctl"
    script = f"""
set -eu
mount -t tmpfs tmpfs /run
mkdir -m 0750 /run/hairpin
ip link set lo up
{shlex.join(argv)} 2>"{tmp_path}/hairpind.log" &
pid=$!
for _ in $(seq 100); do [ -S /run/hairpin/hairpind.ctl ] && break; sleep 0.1; done
{ctl} version
{ctl} show
{ctl} summary
kill -TERM $pid
wait $pid && echo "exit 0" || echo "exit $?"
"""
    run = subprocess.run(
        ["unshare", "--mount", "--net", "--fork", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    log = (tmp_path / "hairpind.log").read_text(errors="replace")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{log}"
    lines = run.stdout.splitlines()
    assert lines[0].startswith("hairpinctl ") and lines[1].startswith("hairpind "), run.stdout
    assert "dpid:0000000000000001" in run.stdout, run.stdout
    assert "controllers: 0 of 0 connected" in run.stdout, run.stdout
    assert lines[-1] == "exit 0", f"{run.stdout}\n{log}"
