"""os-ken apps beside a :class:`HairpinStar`, and what tests and benchmarks read from it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from hairpin.testing.daemon import find_hairpind
from hairpin.testing.netns import Host
from hairpin.testing.topology import (
    CONTROLLER_PORT,
    SWITCH_OF_PORT,
    HairpinStar,
    background,
    wait_until,
)

OSKEN_MANAGER = Path(sys.executable).parent / "osken-manager"


@contextmanager
def osken_app(
    switch: HairpinStar, module: str, log_path: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`module` under osken-manager in the switch namespace, connected to hairpind."""
    args = [str(OSKEN_MANAGER), "--ofp-listen-host", "127.0.0.1"]
    args += ["--ofp-tcp-listen-port", str(CONTROLLER_PORT), module]
    with background(switch.switch, args, log_path, env=env) as app:
        connected = wait_until(switch.controller_connected, 20.0)
        if not connected:
            raise RuntimeError(f"hairpind never connected:\n{log_path.read_text()}")
        yield app


def mac_of(host: Host) -> str:
    (link,) = json.loads(host.ns.run("ip", "-j", "link", "show", "eth0").stdout)
    address: str = link["address"]
    return address


def arp_probe(
    host: Host,
    target: str | Sequence[str],
    count: int = 1,
    interval: float = 0.2,
    timeout: float = 1.0,
) -> list[dict[str, object]]:
    """ARP exchanges from `host` for `target` (or each of several in turn; see
    hairpin.testing.probe); one dict per request."""
    targets = [target] if isinstance(target, str) else list(target)
    result = host.ns.run(
        sys.executable,
        "-m",
        "hairpin.testing.probe",
        "eth0",
        *targets,
        "--count",
        str(count),
        "--interval",
        str(interval),
        "--timeout",
        str(timeout),
    )
    return [json.loads(line) for line in result.stdout.splitlines()]


def dump_templates(switch: HairpinStar) -> dict[int, dict[str, int]]:
    """`hairpinctl dump-templates` against the switch, by template id."""
    hairpinctl = find_hairpind().parent / "hairpinctl"
    target = f"tcp:127.0.0.1:{SWITCH_OF_PORT}"
    out = switch.switch.run(str(hairpinctl), "--target", target, "dump-templates").stdout
    listing = {}
    for line in out.splitlines():
        fields = {k: int(v) for k, v in (item.split("=") for item in line.split())}
        listing[fields["pkttmp_id"]] = fields
    return listing


def list_templates(switch: HairpinStar) -> list[dict[str, int]]:
    """`hairpinctl call templates/list` on the daemon's control socket."""
    return _control_list(switch, "templates/list")


def list_timers(switch: HairpinStar) -> list[dict[str, int]]:
    """`hairpinctl call timers/list` on the daemon's control socket."""
    return _control_list(switch, "timers/list")


def _control_list(switch: HairpinStar, method: str) -> list[dict[str, int]]:
    hairpinctl = find_hairpind().parent / "hairpinctl"
    control = str(switch.control_path)
    out = switch.switch.run(str(hairpinctl), "--control", control, "call", method).stdout
    listing: list[dict[str, int]] = json.loads(out)
    return listing
