"""Two switches, each with its own hairpind and fast-reroute controllet, on a two-node NATS
cluster (each hairpind's embedded server, routed over a control link between the switch
namespaces). The primary path between them crosses a wire namespace (a bridge), so when one
switch's end of it fails only that switch sees the link go down: its controllet tells the bus,
and the other switch's controllet moves that switch's flows to the backup link."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from hairpin.testing.controllets import find_example, hairpind, shared_tempdir
from hairpin.testing.netns import link, namespace, unique_prefix
from hairpin.testing.topology import wait_until

ROUTE_PORT = 16955


def frr(peer: str) -> dict[str, object]:
    binary = find_example("fast_reroute")
    return {
        "name": "frr",
        "program": str(binary),
        "args": ["--pair", "2:3", "--host-port", "1", "--follow", "frr", "--peer", peer],
        "read_only": [str(binary.parent)],
    }


@pytest.mark.usefixtures("root")
def test_a_link_event_at_one_switch_changes_flows_at_the_other() -> None:
    prefix = unique_prefix()
    with ExitStack() as stack:
        ns = {
            n: stack.enter_context(namespace(f"{prefix}-{n}"))
            for n in ("s1", "s2", "h1", "h2", "w")
        }
        s1, s2, w = ns["s1"], ns["s2"], ns["w"]
        link(s1, "p1", ns["h1"], "eth0")
        link(s2, "p1", ns["h2"], "eth0")
        link(s1, "p2", w, "w1")
        link(s2, "p2", w, "w2")
        link(s1, "p3", s2, "p3")
        link(s1, "ctl0", s2, "ctl0")
        w.run("ip", "link", "add", "br0", "type", "bridge")
        for leg in ("w1", "w2"):
            w.run("ip", "link", "set", leg, "master", "br0")
        w.run("ip", "link", "set", "br0", "up")
        for i, host in enumerate(("h1", "h2"), start=1):
            ns[host].run("ip", "addr", "add", f"10.0.0.{i}/24", "dev", "eth0")
        s1.run("ip", "addr", "add", "10.99.0.1/30", "dev", "ctl0")
        s2.run("ip", "addr", "add", "10.99.0.2/30", "dev", "ctl0")

        switches = []
        for i, (sw, peer_ip) in enumerate(((s1, "10.99.0.2"), (s2, "10.99.0.1")), start=1):
            work = stack.enter_context(shared_tempdir(f"hp-infep-s{i}-"))
            cluster = {
                "listen": f"10.99.0.{i}:{ROUTE_PORT}",
                "routes": [f"nats-route://{peer_ip}:{ROUTE_PORT}"],
            }
            ports = ["p1", "p2", "p3"]
            switch = stack.enter_context(
                hairpind(sw, work, ports, [frr("2:2:3")], bus={"cluster": cluster}, datapath_id=i)
            )
            switch.wait_running("frr")
            switches.append(switch)
        one, two = switches

        def routed(switch: object) -> bool:
            log = switch.call("bus/status")["server_log"]  # type: ignore[attr-defined, index]
            return any("Route connection created" in line for line in log)

        assert wait_until(lambda: routed(one) and routed(two), 20), one.call("bus/status")
        for switch in switches:
            assert wait_until(lambda s=switch: "ready" in "".join(s.logs("frr")), 20)
        assert ns["h1"].ping("10.0.0.2", count=2), (one.flows(), two.flows())
        assert any("in_port=1" in f and "output:2" in f for f in two.flows()), two.flows()

        # Only switch one sees its port 2 go down; switch two's port 2 stays up.
        s1.run("ip", "link", "set", "p2", "down")

        def moved() -> bool:
            return any("in_port=1" in f and "output:3" in f for f in two.flows())

        assert wait_until(moved, 10, 0.1), (two.flows(), two.logs("frr"))
        assert "peer port 2 up=false: traffic on port 3" in "\n".join(two.logs("frr"))
        logs = (one.logs("frr"), two.logs("frr"))
        assert ns["h1"].ping("10.0.0.2", count=3), (one.flows(), two.flows(), logs)
        status = two.call("bus/status")
        assert status["connected"], status  # type: ignore[index]
