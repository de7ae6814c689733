"""The namespace and OVS helpers build a working network and leave nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from hairpin.testing.netns import existing_namespaces, star, unique_prefix
from hairpin.testing.ovs import ovs_instance

LISTEN_PORT = "16671"


@pytest.mark.usefixtures("root")
def test_normal_bridge_forwards_and_everything_is_removed_after() -> None:
    prefix = unique_prefix()
    with star(prefix, 2) as topo, ovs_instance(topo.switch) as ovs:
        ovs_dir = ovs.directory
        ovs.add_bridge("br0", 0xABC, topo.ports)
        ovs.set_controller("br0", f"ptcp:{LISTEN_PORT}:127.0.0.1")
        assert not topo.hosts[0].ns.ping(topo.hosts[1].address, count=1), "secure mode, no flows"

        # forget the failed ARP resolution, or its last probe can drop the next pings
        topo.hosts[0].ns.run("ip", "neigh", "flush", "dev", "eth0")
        ovs.ofctl("add-flow", "br0", "actions=NORMAL")
        assert topo.hosts[0].ns.ping(topo.hosts[1].address)

        # ovs-ofctl reaches a passive listener the way it will reach hairpind's ptcp: port
        show = topo.switch.run(
            "ovs-ofctl", "-O", "OpenFlow13", "show", f"tcp:127.0.0.1:{LISTEN_PORT}"
        ).stdout
        assert "dpid:0000000000000abc" in show
        assert "1(p1)" in show and "2(p2)" in show

    assert not any(name.startswith(prefix) for name in existing_namespaces())
    assert not Path(ovs_dir).exists()
