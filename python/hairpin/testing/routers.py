"""A chain of hairpind routers between two hosts, for ``traceroute`` (seed 001 Fig. 6).

``h1 - r1 - r2 - ... - rK - h2``: link i (0..K) is 10.0.i.0/24, its left end .1 and its right
end .2, so h1 is 10.0.0.1 behind gateway 10.0.0.2 (r1's port 1), router j's port 1 is
10.0.(j-1).2 and its port 2 10.0.j.1, and h2 is 10.0.K.2 behind 10.0.K.1. The routers share
one namespace (:mod:`hairpin.testing.fabric`); :attr:`RouterChain.config` is the
configuration :mod:`hairpin.apps.router` reads, with each route's next hop given by its MAC or,
with ``gateways``, by its address for the app to resolve with ARP.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hairpin.testing.fabric import Fabric, FabricSwitch, cable, start_switches
from hairpin.testing.netns import Host, Namespace, link, namespace, unique_prefix


@dataclass
class RouterChain:
    net: Fabric
    config: dict[str, Any]

    @property
    def hops(self) -> list[str]:
        """What traceroute from h1 to h2 must show: each router's address on the port facing
        h1 (where the expiring packet arrives), then h2."""
        routers = len(self.net.switches)
        return [f"10.0.{j - 1}.2" for j in range(1, routers + 1)] + [f"10.0.{routers}.2"]


def _mac(ns: Namespace, ifname: str) -> str:
    (info,) = json.loads(ns.run("ip", "-j", "link", "show", ifname).stdout)
    mac: str = info["address"]
    return mac


def _host(
    stack: ExitStack, ns: Namespace, name: str, router: FabricSwitch, address: str, gateway: str
) -> Host:
    """A host namespace cabled to a new port of `router`, with its default route."""
    host_ns = stack.enter_context(namespace(name))
    ifname = f"{router.name}{name.rsplit('-', 1)[1]}"
    link(ns, ifname, host_ns, "eth0")
    host_ns.run("ip", "addr", "add", f"{address}/24", "dev", "eth0")
    host_ns.run("ip", "route", "add", "default", "via", gateway)
    host = Host(host_ns, address)
    router.host_ports[router.add_port(ifname)] = host
    return host


@contextmanager
def router_chain(workdir: Path, routers: int = 3, gateways: bool = False) -> Iterator[RouterChain]:
    """`routers` hairpinds in a chain between two hosts; removed on exit."""
    prefix = unique_prefix()
    with ExitStack() as stack:
        ns = stack.enter_context(namespace(f"{prefix}-sw"))
        chain = [FabricSwitch(f"r{j}", j) for j in range(1, routers + 1)]
        h1 = _host(stack, ns, f"{prefix}-h1", chain[0], "10.0.0.1", "10.0.0.2")
        for left, right in itertools.pairwise(chain):
            cable(ns, left, right)
        k = routers
        h2 = _host(stack, ns, f"{prefix}-h2", chain[-1], f"10.0.{k}.2", f"10.0.{k}.1")
        start_switches(stack, ns, chain, workdir)
        net = Fabric(ns, chain, [h1, h2], workdir)
        yield RouterChain(net, _configuration(ns, chain, [h1, h2], gateways))


def _configuration(
    ns: Namespace, chain: list[FabricSwitch], hosts: list[Host], gateways: bool
) -> dict[str, Any]:
    """Each router's ports (address, MAC of its interface) and routes: every link left of it
    through port 1 to its left neighbour, every link right of it through port 2, the
    neighbour named by its MAC (``next_hop``) or, with `gateways`, its address."""
    k = len(chain)
    port_macs = [{n: _mac(ns, ifname) for n, ifname in r.ports.items()} for r in chain]
    host_macs = [_mac(h.ns, "eth0") for h in hosts]
    routers = {}
    for j, router in enumerate(chain, start=1):
        macs = port_macs[j - 1]
        if gateways:
            # h1 and each router's port 2 are .1 of their link, h2 and each port 1 are .2.
            hop = "gateway"
            left, right = f"10.0.{j - 1}.1", f"10.0.{j}.2"
        else:
            hop = "next_hop"
            left = host_macs[0] if j == 1 else port_macs[j - 2][2]
            right = host_macs[1] if j == k else port_macs[j][1]
        routes = [
            {"prefix": f"10.0.{i}.0/24", "port": 1 if i < j else 2, hop: left if i < j else right}
            for i in range(k + 1)
        ]
        routers[str(router.dpid)] = {
            "ports": {
                "1": {"address": f"10.0.{j - 1}.2", "mac": macs[1]},
                "2": {"address": f"10.0.{j}.1", "mac": macs[2]},
            },
            "routes": routes,
        }
    return {"routers": routers}
