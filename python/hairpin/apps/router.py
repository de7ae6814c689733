"""A static IPv4 router whose switches answer for themselves: ARP for their port addresses, and
ICMP Time Exceeded for packets whose TTL runs out (seed 001 section 4.2, Fig. 6), both
generated in the switch from InSP templates. The controller installs everything when a switch
connects and sees no packet afterwards.

Run it with ``HAIRPIN_ROUTERS=routers.json osken-manager hairpin.apps.router``. The file holds,
per datapath id, each port's address and MAC and the routes::

    {"routers": {"1": {"ports": {"1": {"address": "10.0.0.2", "mac": "02:..."}, ...},
                       "routes": [{"prefix": "10.0.0.0/24", "port": 1, "next_hop": "02:..."}]}}}

Per port: the ARP reply for the port's address, and an entry matching IPv4 packets that arrive
there with TTL 1 (Open vSwitch's NXM_NX_IP_TTL, ``nw_ttl``) whose InSP instruction sends the
Time Exceeded from the port's address back out of it; the packet itself goes no further. Per
route: decrement the TTL, rewrite the Ethernet addresses, output.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

from hairpin.insp import OFPInstructionInsp, insp_error
from hairpin.templates import ETH_TYPE_ARP, ETH_TYPE_IPV4, arp_reply, template_id, time_exceeded

TTL_EXPIRED = 1000
ANSWERS = 900
# Longer prefixes first: priority ROUTE + prefix length.
ROUTE = 100
# Time Exceeded templates are numbered from here by port (ARP's by address, as elsewhere).
TIME_EXCEEDED_TEMPLATES = 0xFFFF_7100


class StaticRouter(app_manager.OSKenApp):  # type: ignore[misc]
    """Programs each switch as a router from the configuration file."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with open(os.environ["HAIRPIN_ROUTERS"]) as f:
            self.routers: dict[str, Any] = json.load(f)["routers"]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        datapath = ev.msg.datapath
        config = self.routers.get(str(datapath.id))
        if config is None:
            self.logger.warning("switch %s is not in the configuration", datapath.id)
            return
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        back = [parser.OFPActionOutput(ofproto.OFPP_IN_PORT)]
        ports = {int(n): p for n, p in config["ports"].items()}
        for number, port in ports.items():
            arp = arp_reply(datapath, port["mac"], port["address"])
            expired = time_exceeded(
                datapath, TIME_EXCEEDED_TEMPLATES + number, port["mac"], port["address"]
            )
            requests = parser.OFPMatch(
                in_port=number, eth_type=ETH_TYPE_ARP, arp_op=1, arp_tpa=port["address"]
            )
            last_hop = parser.OFPMatch(in_port=number, eth_type=ETH_TYPE_IPV4, nw_ttl=1)
            for template, match, priority in (
                (arp, requests, ANSWERS),
                (expired, last_hop, TTL_EXPIRED),
            ):
                datapath.send_msg(template)
                generate = OFPInstructionInsp(template.pkttmp_id, back)
                datapath.send_msg(
                    parser.OFPFlowMod(
                        datapath, priority=priority, match=match, instructions=[generate]
                    )
                )
        for route in config["routes"]:
            network = ipaddress.IPv4Network(route["prefix"])
            out = ports[route["port"]]
            actions = [
                parser.OFPActionDecNwTtl(),
                parser.OFPActionSetField(eth_src=out["mac"]),
                parser.OFPActionSetField(eth_dst=route["next_hop"]),
                parser.OFPActionOutput(route["port"]),
            ]
            match = parser.OFPMatch(
                eth_type=ETH_TYPE_IPV4,
                ipv4_dst=(str(network.network_address), str(network.netmask)),
            )
            apply = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)]
            datapath.send_msg(
                parser.OFPFlowMod(
                    datapath,
                    priority=ROUTE + network.prefixlen,
                    match=match,
                    instructions=apply,
                )
            )
        self.logger.info(
            "router %s: ports %s, %d routes, ARP templates %s",
            datapath.id,
            sorted(ports),
            len(config["routes"]),
            [hex(template_id(p["address"])) for p in ports.values()],
        )

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_error(self, ev: ofp_event.EventOFPErrorMsg) -> None:
        code = insp_error(ev.msg)
        name = code.name if code is not None else f"type {ev.msg.type} code {ev.msg.code}"
        self.logger.warning("switch %s refused xid %s: %s", ev.msg.datapath.id, ev.msg.xid, name)
