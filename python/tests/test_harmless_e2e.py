"""The HARMLESS manager end to end: real Open vSwitch legacy switches with hosts, the real
``hairpind`` with trunk ports in a server namespace, the project's os-ken learning switch as
the controller, and ``hairpin-harmless`` run as an operator would, inside the server's
namespace."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from hairpin.testing.legacy import LegacySwitch, legacy_switch
from hairpin.testing.manager import (
    CLI,
    all_pairs,
    background,
    between,
    chatter,
    cleanup_daemon,
    controller,
    harmless,
    pings,
    port_events,
    wait_until,
    write_config,
)
from hairpin.testing.netns import namespace, unique_prefix


def status_since(port_log: Path, port_no: int, up: bool, sent: float) -> list[dict[str, Any]]:
    """PORT_STATUS messages for ``port_no`` with link ``up`` that arrived after ``sent``."""
    return [
        e
        for e in port_events(port_log)
        if e["event"] == "port_status"
        and e["port_no"] == port_no
        and e["link_down"] is (not up)
        and float(e["time"]) >= sent
    ]


def link_change_latency(
    legacy: LegacySwitch, port_log: Path, port: str, port_no: int, up: bool
) -> float:
    """Seconds from a legacy link change to the controller's PORT_STATUS for it."""
    sent = time.time()
    legacy.set_link(port, up)
    assert wait_until(lambda: bool(status_since(port_log, port_no, up, sent)), 5.0, 0.05)
    return float(status_since(port_log, port_no, up, sent)[0]["time"]) - sent


@pytest.mark.usefixtures("root")
def test_one_legacy_switch_up_watch_ports_and_down(tmp_path: Path) -> None:
    prefix = unique_prefix()
    with ExitStack() as stack:
        stack.callback(cleanup_daemon, tmp_path)
        server = stack.enter_context(namespace(f"{prefix}-srv"))
        addresses = [f"10.0.0.{i}" for i in range(1, 7)]
        legacy = stack.enter_context(legacy_switch(f"{prefix}-a", 6, server, "tr1", addresses))
        managed, unmanaged = legacy.hosts[:4], legacy.hosts[4:]
        assert pings(all_pairs(legacy.hosts), count=1) == []
        before = legacy.dump()

        port_log = stack.enter_context(controller(server, tmp_path))
        config = write_config(
            tmp_path / "harmless.yaml", {"sw": (legacy, "tr1", legacy.ports()[:4])}
        )
        with chatter(managed[0], managed[1], tmp_path):
            result = harmless(server, config, "up")
        assert result.returncode == 0, result.stdout + result.stderr

        # Every managed pair talks through hairpind; the controller sees the legacy ports.
        assert pings(all_pairs(managed)) == []
        assert wait_until(lambda: any(e["event"] == "ports" for e in port_events(port_log)), 10)
        ports = next(e for e in port_events(port_log) if e["event"] == "ports")["ports"]
        assert sorted((p["port_no"], p["name"]) for p in ports if p["port_no"] < 0xFFFFFF00) == [
            (1, "p1"),
            (2, "p2"),
            (3, "p3"),
            (4, "p4"),
        ]
        # The unmanaged hosts stay on the legacy switch, cut off from the managed ones.
        assert pings(all_pairs(unmanaged)) == []
        assert pings(between(unmanaged, managed), count=1) == list(
            f"{a.address}->{b.address}" for a, b in between(unmanaged, managed)
        )

        # A legacy link going down reaches the controller as PORT_STATUS within 2 s.
        watch_args = [str(CLI), "-c", str(config), "watch"]
        stack.enter_context(background(server, watch_args, tmp_path / "watch.log"))
        assert wait_until(lambda: "watching" in (tmp_path / "watch.log").read_text(), 10)
        time.sleep(1.0)  # the first round pushes every port
        for up in (False, True):
            latency = link_change_latency(legacy, port_log, "p2", 2, up)
            assert latency < 2.0, f"PORT_STATUS after {latency:.2f} s"

        status = harmless(server, config, "status")
        assert status.returncode == 0, status.stdout + status.stderr

        # p4 goes back to the legacy switch (VLAN 1 with the unmanaged hosts), then comes back.
        removed = harmless(server, config, "remove-port", "sw", "p4")
        assert removed.returncode == 0, removed.stdout + removed.stderr
        assert pings([(managed[3], unmanaged[0])]) == []
        assert pings([(managed[3], managed[0])], count=1) != []
        added = harmless(server, config, "add-port", "sw", "p4")
        assert added.returncode == 0, added.stdout + added.stderr
        assert pings([(managed[3], managed[0])]) == []

        # `down` puts the switch back exactly; every host reaches every other one again.
        down = harmless(server, config, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert legacy.dump() == before
        assert pings(all_pairs(legacy.hosts), count=1) == []


@pytest.mark.usefixtures("root")
def test_two_legacy_switches_into_one_hairpind(tmp_path: Path) -> None:
    prefix = unique_prefix()
    with ExitStack() as stack:
        stack.callback(cleanup_daemon, tmp_path)
        server = stack.enter_context(namespace(f"{prefix}-srv"))
        a = stack.enter_context(
            legacy_switch(f"{prefix}-a", 2, server, "tra", ["10.0.0.1", "10.0.0.2"])
        )
        b = stack.enter_context(
            legacy_switch(f"{prefix}-b", 2, server, "trb", ["10.0.0.11", "10.0.0.12"])
        )
        dumps = (a.dump(), b.dump())
        port_log = stack.enter_context(controller(server, tmp_path))
        config = write_config(
            tmp_path / "harmless.yaml",
            {"a": (a, "tra", ["p1", "p2"]), "b": (b, "trb", ["p1", "p2"])},
        )
        with chatter(a.hosts[0], b.hosts[0], tmp_path), chatter(b.hosts[1], a.hosts[1], tmp_path):
            result = harmless(server, config, "up")
        assert result.returncode == 0, result.stdout + result.stderr
        hosts = [*a.hosts, *b.hosts]
        assert pings(all_pairs(hosts)) == []
        assert wait_until(lambda: any(e["event"] == "ports" for e in port_events(port_log)), 10)
        ports = next(e for e in port_events(port_log) if e["event"] == "ports")["ports"]
        names = sorted(p["name"] for p in ports if p["port_no"] < 0xFFFFFF00)
        assert names == ["a:p1", "a:p2", "b:p1", "b:p2"]
        down = harmless(server, config, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert (a.dump(), b.dump()) == dumps
