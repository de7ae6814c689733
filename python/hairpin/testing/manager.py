"""Drives the HARMLESS manager as an operator would in tests: ``hairpin-harmless`` run inside
a server namespace against legacy switches of :mod:`.legacy`, a deployment file written for
them, the os-ken learning switch with the port log as the controller, and ping checks that run
many pairs at once."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hairpin.testing.daemon import find_hairpind
from hairpin.testing.legacy import LegacySwitch
from hairpin.testing.netns import Host, Namespace
from hairpin.testing.topology import background, wait_until

CLI = Path(sys.executable).parent / "hairpin-harmless"
OSKEN = Path(sys.executable).parent / "osken-manager"
CONTROLLER_PORT = 16700
SWITCH_PORT = 16701


def tool(name: str) -> str:
    return str(find_hairpind().parent / name)


def harmless(server: Namespace, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs the manager in the server namespace."""
    return server.run(str(CLI), "-c", str(config), *args, check=False)


def write_config(
    path: Path,
    devices: dict[str, tuple[LegacySwitch, str, Sequence[str]]],
    trunk_timeout: float = 10.0,
    hairpind: str | None = None,
) -> Path:
    """A deployment file: each device (switch, server trunk interface, access ports)."""
    lines = ["name: e2e", "state_dir: state", "devices:"]
    for name, (switch, interface, ports) in devices.items():
        lines += [
            f"  {name}:",
            "    platform: hairpin_ovs",
            f"    hostname: {switch.db}",
            "    trunks:",
            "      - port: t1",
            f"        interface: {interface}",
            f"        access_ports: [{', '.join(ports)}]",
        ]
    lines += [
        "switch:",
        f"  hairpind: {hairpind or tool('hairpind')}",
        f"  hairpinctl: {tool('hairpinctl')}",
        '  datapath_id: "0x1"',
        f"  controllers: [tcp:127.0.0.1:{CONTROLLER_PORT}]",
        f"  listen: ['ptcp:{SWITCH_PORT}:127.0.0.1']",
        f"  control_socket: {path.parent / 'hairpind.ctl'}",
        "checks:",
        f"  trunk_traffic_timeout: {trunk_timeout}",
        "watch:",
        "  interval: 0.2",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def controller(server: Namespace, workdir: Path) -> Iterator[Path]:
    """The learning switch with the port log beside it; yields the port log's path."""
    port_log = workdir / "ports.jsonl"
    port_log.touch()
    args = [str(OSKEN), "--ofp-listen-host", "127.0.0.1"]
    args += ["--ofp-tcp-listen-port", str(CONTROLLER_PORT)]
    args += ["hairpin.apps.learning_switch", "hairpin.apps.port_log"]
    env = dict(os.environ, HAIRPIN_PORT_LOG=str(port_log))
    with background(server, args, workdir / "osken.log", env=env) as process:

        def listening() -> bool:
            assert process.poll() is None, (workdir / "osken.log").read_text()
            out = server.run("ss", "-Htln", f"sport = :{CONTROLLER_PORT}").stdout
            return bool(out.strip())

        assert wait_until(listening, 30.0), (workdir / "osken.log").read_text()
        yield port_log


def port_events(port_log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in port_log.read_text().splitlines() if line]


def pings(pairs: Sequence[tuple[Host, Host]], count: int = 2) -> list[str]:
    """Pings every pair at once; returns the pairs that got no reply."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda pair: pair[0].ns.ping(pair[1].address, count), pairs))
    return [
        f"{a.address}->{b.address}" for (a, b), ok in zip(pairs, results, strict=True) if not ok
    ]


def all_pairs(hosts: Sequence[Host]) -> list[tuple[Host, Host]]:
    return list(itertools.permutations(hosts, 2))


def between(group_a: Sequence[Host], group_b: Sequence[Host]) -> list[tuple[Host, Host]]:
    return [(a, b) for a in group_a for b in group_b] + [(b, a) for a in group_a for b in group_b]


@contextmanager
def chatter(src: Host, dst: Host, workdir: Path) -> Iterator[None]:
    """Keeps a ping running so that a trunk sees traffic while `up` checks it."""
    args = ["ping", "-q", "-i", "0.2", dst.address]
    with background(src.ns, args, workdir / f"chatter-{src.address}.log"):
        yield


def cleanup_daemon(workdir: Path) -> None:
    """Stops a hairpind the manager left running (a failed test must not leak it)."""
    state = workdir / "state" / "e2e" / "state.json"
    if state.exists():
        daemon = json.loads(state.read_text()).get("hairpind")
        if daemon:
            cmdline = Path(f"/proc/{daemon['pid']}/cmdline")
            if cmdline.exists() and daemon["config"].encode() in cmdline.read_bytes():
                os.kill(daemon["pid"], signal.SIGTERM)
