"""The learning-switch app drives an OVS netdev bridge: hosts ping each other, flows appear."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from hairpin.testing.netns import star, unique_prefix
from hairpin.testing.ovs import ovs_instance

OF_PORT = "16670"
HOSTS = 4


@pytest.mark.usefixtures("root")
def test_hosts_ping_each_other_through_learning_switch(tmp_path: Path) -> None:
    manager = Path(sys.executable).parent / "osken-manager"
    log_path = tmp_path / "osken.log"
    with (
        star(unique_prefix(), HOSTS) as topo,
        ovs_instance(topo.switch) as ovs,
        log_path.open("wb") as log,
    ):
        controller = topo.switch.popen(
            str(manager),
            "--ofp-tcp-listen-port",
            OF_PORT,
            "hairpin.apps.learning_switch",
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            ovs.add_bridge("br0", 0x1, topo.ports)
            ovs.set_controller("br0", f"tcp:127.0.0.1:{OF_PORT}")
            assert ovs.wait_connected(), log_path.read_text()

            for src, dst in itertools.permutations(topo.hosts, 2):
                assert src.ns.ping(dst.address, count=2), f"{src.ns.name} -> {dst.address}"

            flows = ovs.ofctl("dump-flows", "br0")
            learned = [line for line in flows.splitlines() if "priority=10" in line]
            # every ordered pair of hosts got its own exact-match entry
            assert len(learned) >= HOSTS * (HOSTS - 1), flows
            assert "actions=CONTROLLER:65535" in flows, flows
        finally:
            controller.terminate()
            controller.wait(timeout=10)
