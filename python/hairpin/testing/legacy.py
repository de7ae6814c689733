"""A legacy 802.1Q switch for HARMLESS tests: a private Open vSwitch in standalone mode (its own
namespace) with hosts on access ports p1..pN, all in VLAN 1 as a switch out of the box, and a
free port t1 cabled to an interface of a server namespace.

:meth:`LegacySwitch.dump` reads the switch's configuration straight from its database (every
column of every port, the bridge's settings), not through the manager's driver, so that a test
can compare the switch before ``up`` and after ``down`` independently of the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from hairpin.testing.netns import Host, Namespace, link, namespace
from hairpin.testing.ovs import OvsInstance, ovs_instance

BRIDGE = "br0"
TRUNK_PORT = "t1"
BRIDGE_COLUMNS = "name,fail_mode,other_config,external_ids,protocols,controller,ports"


@dataclass
class LegacySwitch:
    """A running legacy switch and the hosts on its access ports."""

    ns: Namespace
    ovs: OvsInstance
    hosts: list[Host]

    @property
    def db(self) -> str:
        """The OVSDB remote the manager's driver reaches it at."""
        return f"unix:{self.ovs.directory}/db.sock"

    def ports(self) -> list[str]:
        return [f"p{i}" for i in range(1, len(self.hosts) + 1)]

    def dump(self) -> str:
        """Every column of every port and the bridge's settings, as sorted JSON text."""
        ports = json.loads(self.ovs.vsctl("--format=json", "list", "Port"))
        bridge = json.loads(
            self.ovs.vsctl("--format=json", f"--columns={BRIDGE_COLUMNS}", "list", "Bridge")
        )
        rows = sorted(
            (dict(zip(ports["headings"], row, strict=True)) for row in ports["data"]),
            key=lambda row: str(row["name"]),
        )
        return json.dumps({"ports": rows, "bridge": bridge}, indent=1, sort_keys=True)

    def set_link(self, port: str, up: bool) -> None:
        """Takes an access port's link down or up (as pulling a cable would)."""
        self.ns.run("ip", "link", "set", port, "up" if up else "down")


@contextmanager
def legacy_switch(
    name: str, hosts: int, server: Namespace, trunk_interface: str, addresses: list[str]
) -> Iterator[LegacySwitch]:
    """Switch namespace ``name`` with hosts ``name``-h1.. (eth0 at ``addresses[i]``/24) and
    its port t1 cabled to ``trunk_interface`` in ``server``. Everything goes on exit."""
    assert len(addresses) == hosts
    with ExitStack() as stack:
        ns = stack.enter_context(namespace(name))
        host_list = []
        for i in range(1, hosts + 1):
            host_ns = stack.enter_context(namespace(f"{name}-h{i}"))
            link(ns, f"p{i}", host_ns, "eth0")
            host_ns.run("ip", "addr", "add", f"{addresses[i - 1]}/24", "dev", "eth0")
            host_list.append(Host(host_ns, addresses[i - 1]))
        link(ns, TRUNK_PORT, server, trunk_interface)
        ovs = stack.enter_context(ovs_instance(ns))
        args = ["--", "add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev"]
        args += ["fail-mode=standalone", "other-config:disable-in-band=true"]
        for port in [*(f"p{i}" for i in range(1, hosts + 1)), TRUNK_PORT]:
            args += ["--", "add-port", BRIDGE, port, "tag=1"]
        ovs.vsctl(*args)
        yield LegacySwitch(ns, ovs, host_list)
