"""ICMP Time Exceeded generated in the switch (seed 001 Fig. 6): ``traceroute`` through a chain
of three hairpind routers sees every hop, each answered by an InSP template that an entry
matching TTL 1 (NXM_NX_IP_TTL) triggers; the routers' controller sees no packet but, where the
routes name their gateways by address, the gateways' ARP replies.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from hairpin.apps.router import TIME_EXCEEDED_TEMPLATES
from hairpin.testing.daemon import find_hairpind
from hairpin.testing.fabric import controller
from hairpin.testing.routers import router_chain
from hairpin.testing.topology import wait_until

pytestmark = pytest.mark.usefixtures("root")

# The gateways the three routers resolve: each router's left and right neighbour.
GATEWAYS = sorted(["10.0.0.1", "10.0.1.2", "10.0.1.1", "10.0.2.2", "10.0.2.1", "10.0.3.2"])


@pytest.mark.parametrize("gateways", [False, True], ids=["next-hop-macs", "gateways-by-arp"])
def test_traceroute_through_a_chain_of_hairpin_routers(tmp_path: Path, gateways: bool) -> None:
    with router_chain(tmp_path, routers=3, gateways=gateways) as chain:
        config = tmp_path / "routers.json"
        config.write_text(json.dumps(chain.config))
        log = tmp_path / "osken.log"
        env = {**os.environ, "HAIRPIN_ROUTERS": str(config)}
        h1, h2 = chain.net.hosts
        with controller(chain.net, "hairpin.apps.router", log, env):
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 10.0), log.read_text()
            result = h1.ns.run(
                "traceroute", "-n", "-q", "1", "-N", "1", "-w", "2", "-m", "6", h2.address,
                check=False,
            )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        hops = re.findall(r"^\s*\d+\s+(\S+)", result.stdout, flags=re.M)
        assert hops == chain.hops, result.stdout
        assert "refused" not in log.read_text(), log.read_text()
        # Each router resolved its two gateways (a host or the next router, whose InSP
        # template answered), or, with MACs given, asked for none.
        resolved = re.findall(r"gateway (\S+) is at", log.read_text())
        assert sorted(resolved) == (GATEWAYS if gateways else []), log.read_text()
        # Every router generated its hop's Time Exceeded from its port-1 template.
        for router in chain.net.switches:
            listing = chain.net.ns.run(
                str(find_hairpind().parent / "hairpinctl"),
                "--control", str(tmp_path / f"{router.name}.ctl"), "call", "templates/list",
            )  # fmt: skip
            generated = {t["pkttmp_id"]: t["generated"] for t in json.loads(listing.stdout)}
            assert generated[TIME_EXCEEDED_TEMPLATES + 1] >= 1, (router.name, generated)
