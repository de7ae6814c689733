"""End to end: four hosts in namespaces, Hairpin between them, controllers nobody here wrote.

Each test builds its own namespaces (unique prefix), runs hairpind and its controller inside
the switch namespace and tears everything down on exit. Under every controller (and with none,
in fail-standalone) every ordered pair of hosts must ping and an iperf3 TCP transfer must move
data; fail-secure must drop without a controller and keep its flows across a reconnect.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from hairpin.testing.netns import Host
from hairpin.testing.topology import (
    CONTROLLER_PORT,
    HairpinStar,
    background,
    hairpin_star,
    iperf3_tcp_bps,
    ping_all_pairs,
    wait_until,
)

pytestmark = pytest.mark.usefixtures("root")

REPO = Path(__file__).resolve().parents[2]
FAUCET_CONFIG = Path(__file__).parent / "data" / "faucet.yaml"
FAUCET_VENV = Path(os.environ.get("HAIRPIN_FAUCET_VENV", REPO / ".venv-faucet"))
OSKEN_MANAGER = Path(sys.executable).parent / "osken-manager"
# The learning-switch app's priority for the (in_port, eth_src, eth_dst) entries it learns.
LEARNED_PRIORITY = "priority=10"
# Counters and ages that change while a flow entry stays the same entry.
VOLATILE_FLOW_FIELDS = re.compile(r"\b(duration|n_packets|n_bytes|idle_age|hard_age)=[^,\s]+,?\s*")
PORT_COUNTERS = re.compile(r"port\s+(\d+): rx pkts=(\d+).*?tx pkts=(\d+)", re.DOTALL)


def logs(*paths: Path) -> str:
    """The named logs, each under its own heading, for assertion messages."""
    parts = []
    for path in paths:
        text = path.read_text(errors="replace") if path.exists() else "(missing)"
        parts.append(f"--- {path.name} ---\n{text[-6000:]}")
    return "\n".join(parts)


def osken_app_args(manager: Path, app: str) -> list[str]:
    return [
        str(manager),
        "--ofp-listen-host",
        "127.0.0.1",
        "--ofp-tcp-listen-port",
        str(CONTROLLER_PORT),
        app,
    ]


@contextmanager
def learning_switch_app(switch: HairpinStar, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Our os-ken learning-switch app, connected to hairpind (fails if it never connects)."""
    args = osken_app_args(OSKEN_MANAGER, "hairpin.apps.learning_switch")
    with background(switch.switch, args, log_path) as app:
        connected = wait_until(switch.controller_connected, 20.0)
        assert connected, "hairpind never connected\n" + logs(log_path, switch.log_path)
        yield app


def assert_forwards(switch: HairpinStar, workdir: Path, *controller_logs: Path) -> float:
    """Every ordered pair pings and an iperf3 TCP transfer h1 -> h4 moves data; returns its
    throughput in bits per second."""
    first, second = switch.hosts[0], switch.hosts[1]
    diagnostics = (*controller_logs, switch.log_path)
    # A reactive controller may still be installing its pipeline when the first packet comes.
    converged = wait_until(lambda: first.ns.ping(second.address, count=1), 20.0)
    assert converged, f"h1 never reached h2; flows: {switch.flows()}\n" + logs(*diagnostics)
    failures = ping_all_pairs(switch.hosts)
    assert not failures, f"pairs that lost replies: {failures}\n" + logs(*diagnostics)
    bps = iperf3_tcp_bps(switch.hosts[0], switch.hosts[-1], workdir)
    print(f"iperf3 TCP h1 -> h4: {bps / 1e6:.1f} Mbit/s")
    assert bps > 0
    switch.assert_alive()
    return bps


def learned_flows(switch: HairpinStar) -> set[str]:
    """The learning switch's entries, without the counters that move as traffic passes."""
    return {
        VOLATILE_FLOW_FIELDS.sub("", flow) for flow in switch.flows() if LEARNED_PRIORITY in flow
    }


def answered_pings(hosts: Sequence[Host]) -> list[str]:
    """Pings every ordered pair at once (two echoes each); returns the pairs that got a reply."""
    ping = ["ping", "-q", "-c", "2", "-i", "0.2", "-W", "2"]
    pings = {
        f"{src.ns.name} -> {dst.address}": src.ns.popen(
            *ping, dst.address, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for src in hosts
        for dst in hosts
        if src is not dst
    }
    return [pair for pair, ping in pings.items() if ping.wait(10) == 0]


def port_packet_counts(switch: HairpinStar) -> dict[int, tuple[int, int]]:
    """Per OpenFlow port: (received, transmitted) packets, from `ovs-ofctl dump-ports`."""
    dump = switch.ofctl("dump-ports")
    return {int(p): (int(rx), int(tx)) for p, rx, tx in PORT_COUNTERS.findall(dump)}


def test_forwarding_under_osken_learning_switch(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    log_path = tmp_path / "osken.log"
    with hairpin_star(tmp_path) as switch, learning_switch_app(switch, log_path):
        bps = assert_forwards(switch, tmp_path, log_path)
        record_property("iperf3_bits_per_second", bps)
        learned = learned_flows(switch)
        # every ordered pair got its own entry: the traffic ran through flows, not packet-outs
        assert len(learned) >= 4 * 3, switch.flows()


def test_forwarding_under_faucet(tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    manager = FAUCET_VENV / "bin" / "osken-manager"
    assert manager.exists(), f"no Faucet venv at {FAUCET_VENV}: run scripts/setup.sh"
    faucet_log = tmp_path / "faucet.log"
    exception_log = tmp_path / "faucet_exception.log"
    env = {
        **os.environ,
        "FAUCET_CONFIG": str(FAUCET_CONFIG),
        "FAUCET_LOG": str(faucet_log),
        "FAUCET_EXCEPTION_LOG": str(exception_log),
        "FAUCET_PROMETHEUS_ADDR": "127.0.0.1",
    }
    stdout_log = tmp_path / "faucet-stdout.log"
    diagnostics = (faucet_log, exception_log, stdout_log)
    with hairpin_star(tmp_path) as switch:
        args = osken_app_args(manager, "faucet.faucet")
        with background(switch.switch, args, stdout_log, env=env):
            connected = wait_until(switch.controller_connected, 30.0)
            assert connected, "hairpind never connected\n" + logs(*diagnostics, switch.log_path)
            programmed = wait_until(lambda: bool(switch.flows()), 20.0)
            assert programmed, "Faucet installed no flows\n" + logs(*diagnostics, switch.log_path)
            bps = assert_forwards(switch, tmp_path, *diagnostics)
            record_property("iperf3_bits_per_second", bps)


def test_forwarding_under_ovs_testcontroller(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    log_path = tmp_path / "ovs-testcontroller.log"
    args = [
        "ovs-testcontroller",
        "-O",
        "OpenFlow13",
        f"--unixctl={tmp_path / 'ovs-testcontroller.ctl'}",
        "-vconsole:info",
        f"ptcp:{CONTROLLER_PORT}:127.0.0.1",
    ]
    with hairpin_star(tmp_path) as switch, background(switch.switch, args, log_path):
        connected = wait_until(switch.controller_connected, 20.0)
        assert connected, "hairpind never connected\n" + logs(log_path, switch.log_path)
        bps = assert_forwards(switch, tmp_path, log_path)
        record_property("iperf3_bits_per_second", bps)


def test_forwarding_fail_standalone_without_controller(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    with hairpin_star(tmp_path, fail_mode="standalone", controller_port=None) as switch:
        bps = assert_forwards(switch, tmp_path)
        record_property("iperf3_bits_per_second", bps)
        # NORMAL without tables still counts every port's traffic both ways
        counts = port_packet_counts(switch)
        assert sorted(counts) == [1, 2, 3, 4], counts
        for port, (received, transmitted) in counts.items():
            assert received > 0 and transmitted > 0, f"port {port}: {counts}"


def test_fail_secure_without_controller_drops_everything(tmp_path: Path) -> None:
    with hairpin_star(tmp_path, fail_mode="secure", controller_port=None) as switch:
        assert switch.flows() == []
        answered = answered_pings(switch.hosts)
        assert not answered, f"fail-secure with no flows forwarded: {answered}"
        counts = port_packet_counts(switch)
        assert sorted(counts) == [1, 2, 3, 4], counts
        # every port received the hosts' ARP requests, and none was sent anywhere
        for port, (received, transmitted) in counts.items():
            assert received > 0, f"port {port} received nothing: {counts}\n{switch.log()}"
            assert transmitted == 0, f"port {port} transmitted: {counts}\n{switch.log()}"
        switch.assert_alive()


def test_flows_survive_controller_reconnect(tmp_path: Path) -> None:
    log_path = tmp_path / "osken.log"
    with hairpin_star(tmp_path, fail_mode="secure") as switch:
        h1, h2 = switch.hosts[0], switch.hosts[1]
        with learning_switch_app(switch, log_path) as app:
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 20.0), logs(log_path)
            assert not ping_all_pairs(switch.hosts)
            learned = learned_flows(switch)
            assert len(learned) >= 4 * 3, switch.flows()
            app.kill()
            app.wait()

        assert wait_until(lambda: not switch.controller_connected(), 10.0)
        assert learned_flows(switch) == learned, "fail-secure lost flows when the controller left"
        failures = ping_all_pairs(switch.hosts)
        assert not failures, f"learned pairs stopped forwarding without a controller: {failures}"
        # Nothing new is learned: with both ARP caches empty, the broadcast ARP between h1 and
        # h2 matches only the table-miss entry, whose controller is gone.
        for host in (h1, h2):
            host.ns.run("ip", "neigh", "flush", "dev", "eth0")
        assert not h1.ns.ping(h2.address, count=2), "fail-secure forwarded an unmatched broadcast"
        switch.assert_alive()

        # hairpind retries with a backoff of at most 8 s, so a restarted app is found again.
        with learning_switch_app(switch, log_path):
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 10.0), logs(log_path)
            assert not ping_all_pairs(switch.hosts)
            assert learned <= learned_flows(switch), "the reconnect lost flows"
        switch.assert_alive()
