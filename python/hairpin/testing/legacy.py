"""Legacy 802.1Q switches for HARMLESS tests: each a private Open vSwitch in standalone mode
(NORMAL forwarding, its own namespace, bridge ``br0``) with hosts on its access ports and an
uplink port cabled to an interface of another namespace.

:func:`legacy_switch` builds one as it comes out of the box (access ports p1..pN and uplink t1,
all in VLAN 1) for the HARMLESS manager to configure; :func:`.harmless.legacy_site` builds
switches already configured with access VLANs and a trunk.

:meth:`LegacySwitch.dump` reads the switch's configuration straight from its database (every
column of every port, the bridge's settings), not through the manager's driver, so that a test
can compare the switch before ``up`` and after ``down`` independently of the code under test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from hairpin.testing.netns import Host, Namespace, cabled_host, link, namespace
from hairpin.testing.ovs import OvsInstance, ovs_instance

BRIDGE = "br0"
TRUNK_PORT = "t1"
BRIDGE_COLUMNS = "name,fail_mode,other_config,external_ids,protocols,controller,ports"


@dataclass
class AccessPort:
    """A legacy access port, its VLAN, and the host cabled to it."""

    name: str
    vlan: int
    host: Host


@dataclass
class LegacySwitch:
    """A running legacy switch: its OVS instance, the hosts on its access ports, its uplink."""

    ns: Namespace
    ovs: OvsInstance
    access: list[AccessPort]
    #: The uplink's port on the legacy bridge.
    uplink: str
    #: The uplink's other end, an interface of the namespace it is cabled to.
    trunk: str
    #: Hosts on ports that stay legacy (no logical port of hairpind's).
    ordinary: list[Host] = field(default_factory=list)

    @property
    def db(self) -> str:
        """The OVSDB remote the manager's driver reaches it at."""
        return f"unix:{self.ovs.directory}/db.sock"

    @property
    def hosts(self) -> list[Host]:
        """The access ports' hosts, in port order."""
        return [port.host for port in self.access]

    def ports(self) -> list[str]:
        """The access ports' names, in order."""
        return [port.name for port in self.access]

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

    def trunk_packets(self) -> tuple[int, int]:
        """The uplink's (received, transmitted) packets, read from the datapath."""
        out = self.ovs.run("ovs-ofctl", "dump-ports", BRIDGE, self.uplink).stdout
        rx = re.search(r"rx pkts=(\d+)", out)
        tx = re.search(r"tx pkts=(\d+)", out)
        assert rx and tx, out
        return int(rx.group(1)), int(tx.group(1))


@contextmanager
def legacy_switch(
    name: str, hosts: int, server: Namespace, trunk_interface: str, addresses: list[str]
) -> Iterator[LegacySwitch]:
    """Switch namespace ``name`` with hosts ``name``-h1.. (eth0 at ``addresses[i]``/24) and
    its port t1 cabled to ``trunk_interface`` in ``server``. Everything goes on exit."""
    assert len(addresses) == hosts
    with ExitStack() as stack:
        ns = stack.enter_context(namespace(name))
        access = []
        for i in range(1, hosts + 1):
            host = cabled_host(stack, f"{name}-h{i}", ns, f"p{i}", addresses[i - 1])
            access.append(AccessPort(f"p{i}", 1, host))
        link(ns, TRUNK_PORT, server, trunk_interface)
        ovs = stack.enter_context(ovs_instance(ns))
        args = ["--", "add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev"]
        args += ["fail-mode=standalone", "other-config:disable-in-band=true"]
        for port in [*(p.name for p in access), TRUNK_PORT]:
            args += ["--", "add-port", BRIDGE, port, "tag=1"]
        ovs.vsctl(*args)
        yield LegacySwitch(ns, ovs, access, TRUNK_PORT, trunk_interface)
