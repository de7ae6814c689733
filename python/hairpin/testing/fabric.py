"""Networks of several hairpind instances, first the datacenter of seed 001 section 5.2
(Table 1, Fig. 10).

A core switch, ``m`` aggregation switches (each cabled to the core and to its neighbour),
``m`` edge switches (each cabled to every aggregation switch and to its neighbour) and
``alpha`` hosts per edge switch. Every switch is a hairpind of its own; they share one switch
namespace (each owns its interfaces, and the inter-switch cables have both ends there), with
the controller on its loopback. Hosts are namespaces of their own, 10.0.0.i/24.

:func:`fabric` builds it; :meth:`Fabric.describe` is the topology the controller app reads
(``HAIRPIN_FABRIC``); :meth:`Fabric.link_packets` reads the kernel's own counters of every
cable, so the data-plane messages are counted independently of the switches. The parts
(:func:`cable`, :func:`start_switches`, :func:`controller`) build other shapes too
(:mod:`hairpin.testing.routers`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hairpin.testing.apps import OSKEN_MANAGER
from hairpin.testing.daemon import find_hairpind
from hairpin.testing.netns import Host, Namespace, link, namespace, unique_prefix
from hairpin.testing.topology import background, wait_until

# In the switch namespace: the controller's port, and the switches' passive listeners after it.
CONTROLLER_PORT = 16750


@dataclass
class FabricSwitch:
    """One hairpind of the fabric: its name, datapath id, and ports by OpenFlow number."""

    name: str
    dpid: int
    ports: dict[int, str] = field(default_factory=dict)  # OpenFlow port -> interface
    neighbours: dict[int, str] = field(default_factory=dict)  # port -> switch name
    host_ports: dict[int, Host] = field(default_factory=dict)

    def add_port(self, ifname: str) -> int:
        number = len(self.ports) + 1
        self.ports[number] = ifname
        return number


@dataclass
class Fabric:
    """The switches, the hosts, and the namespace the switches and controller share."""

    ns: Namespace
    switches: list[FabricSwitch]
    hosts: list[Host]
    workdir: Path

    def describe(self) -> dict[str, object]:
        """The topology as the controller reads it: per datapath id, whether it is an edge
        switch, its host ports and its inter-switch ports with the neighbour's datapath id."""
        dpid = {s.name: s.dpid for s in self.switches}
        return {
            "switches": {
                str(s.dpid): {
                    "name": s.name,
                    "edge": s.name.startswith("e"),
                    "host_ports": sorted(s.host_ports),
                    "links": {str(p): dpid[n] for p, n in s.neighbours.items()},
                }
                for s in self.switches
            }
        }

    def link_packets(self) -> dict[str, int]:
        """Frames sent over each cable so far, by the kernel's counters: a host cable counts
        its host interface's transmitted and received frames, a switch cable both ends'
        transmitted frames."""
        counts: dict[str, int] = {}
        for host in self.hosts:
            rx, tx = _counters(host.ns, "eth0")
            counts[f"{host.ns.name}:eth0"] = rx + tx
        for s in self.switches:
            for port, neighbour in s.neighbours.items():
                if s.name < neighbour:
                    mine = s.ports[port]
                    _, tx_a = _counters(self.ns, mine)
                    _, tx_b = _counters(self.ns, f"{neighbour}-{s.name}")
                    counts[mine] = tx_a + tx_b
        return counts

    def connected(self) -> int:
        """How many switches hold a connection to the controller."""
        listing = self.ns.run("ss", "-Htn", "state", "established", f"dport = :{CONTROLLER_PORT}")
        return len(listing.stdout.splitlines())


@contextmanager
def controller(
    net: Fabric, module: str, log: Path, env: Mapping[str, str]
) -> Iterator[subprocess.Popen[bytes]]:
    """os-ken app `module` as the fabric's controller, once every switch has connected."""
    args = [str(OSKEN_MANAGER), "--ofp-listen-host", "127.0.0.1"]
    args += ["--ofp-tcp-listen-port", str(CONTROLLER_PORT), module]
    with background(net.ns, args, log, env=env) as app:
        if not wait_until(lambda: net.connected() == len(net.switches), 30.0):
            raise RuntimeError(f"the switches did not all connect:\n{log.read_text()}")
        yield app


def _counters(ns: Namespace, ifname: str) -> tuple[int, int]:
    (info,) = json.loads(ns.run("ip", "-j", "-s", "link", "show", ifname).stdout)
    stats = info["stats64"]
    return int(stats["rx"]["packets"]), int(stats["tx"]["packets"])


def cable(ns: Namespace, a: FabricSwitch, b: FabricSwitch) -> None:
    """A veth between switches `a` and `b` of `ns`, a new port on each."""
    link(ns, f"{a.name}-{b.name}", ns, f"{b.name}-{a.name}")
    a.neighbours[a.add_port(f"{a.name}-{b.name}")] = b.name
    b.neighbours[b.add_port(f"{b.name}-{a.name}")] = a.name


@contextmanager
def fabric(workdir: Path, m: int = 2, alpha: int = 2) -> Iterator[Fabric]:
    """Table 1's topology with a hairpind per switch, each connecting to a controller at
    ``tcp:127.0.0.1:CONTROLLER_PORT`` in the switch namespace. Everything is removed on exit."""
    prefix = unique_prefix()
    with ExitStack() as stack:
        ns = stack.enter_context(namespace(f"{prefix}-sw"))
        core = FabricSwitch("c", 1)
        aggregation = [FabricSwitch(f"a{i}", 1 + i) for i in range(1, m + 1)]
        edge = [FabricSwitch(f"e{i}", 1 + m + i) for i in range(1, m + 1)]
        for i, a in enumerate(aggregation):
            cable(ns, core, a)
            if i + 1 < m:
                cable(ns, a, aggregation[i + 1])
        for i, e in enumerate(edge):
            for a in aggregation:
                cable(ns, e, a)
            if i + 1 < m:
                cable(ns, e, edge[i + 1])
        hosts = []
        for e in edge:
            for _ in range(alpha):
                index = len(hosts) + 1
                host_ns = stack.enter_context(namespace(f"{prefix}-h{index}"))
                ifname = f"{e.name}h{index}"
                link(ns, ifname, host_ns, "eth0")
                address = f"10.0.0.{index}"
                host_ns.run("ip", "addr", "add", f"{address}/24", "dev", "eth0")
                host = Host(host_ns, address)
                e.host_ports[e.add_port(ifname)] = host
                hosts.append(host)
        switches = [core, *aggregation, *edge]
        start_switches(stack, ns, switches, workdir)
        yield Fabric(ns, switches, hosts, workdir)


def start_switches(
    stack: ExitStack, ns: Namespace, switches: list[FabricSwitch], workdir: Path
) -> None:
    """A hairpind per switch in `ns`, each connecting to the controller at
    ``tcp:127.0.0.1:CONTROLLER_PORT``, stopped when `stack` closes; returns once all listen."""
    binary = find_hairpind()
    for i, s in enumerate(switches):
        args = [str(binary), "--datapath-id", str(s.dpid), "--fail-mode", "secure"]
        args += ["--listen", f"ptcp:{CONTROLLER_PORT + 1 + i}:127.0.0.1"]
        args += ["--controller", f"tcp:127.0.0.1:{CONTROLLER_PORT}"]
        args += ["--control-socket", str(workdir / f"{s.name}.ctl")]
        for number, ifname in s.ports.items():
            args += ["--port", f"{number}={ifname}"]
        stack.enter_context(background(ns, args, workdir / f"hairpind-{s.name}.log"))

    def listening() -> bool:
        return all(_listens(ns, CONTROLLER_PORT + 1 + i) for i in range(len(switches)))

    if not wait_until(listening, 20.0):
        logs = {s.name: (workdir / f"hairpind-{s.name}.log").read_text() for s in switches}
        raise RuntimeError(f"the hairpinds did not start: {logs}")


def _listens(ns: Namespace, port: int) -> bool:
    listing = ns.run("ss", "-Htln", f"sport = :{port}").stdout
    return bool(listing.strip())
