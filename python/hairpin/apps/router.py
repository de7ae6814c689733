"""A static IPv4 router whose switches answer for themselves: ARP for their port addresses, and
ICMP Time Exceeded for packets whose TTL runs out (seed 001 section 4.2, Fig. 6), both
generated in the switch from InSP templates. The controller installs everything when a switch
connects and sees no packet afterwards but its gateways' ARP replies.

Run it with ``HAIRPIN_ROUTERS=routers.json osken-manager hairpin.apps.router``. The file holds,
per datapath id, each port's address and MAC and the routes, each with its next hop's MAC
(``next_hop``) or address (``gateway``, resolved with ARP)::

    {"routers": {"1": {"ports": {"1": {"address": "10.0.0.2", "mac": "02:..."}, ...},
                       "routes": [{"prefix": "10.0.0.0/24", "port": 1, "next_hop": "02:..."},
                                  {"prefix": "10.0.9.0/24", "port": 2, "gateway": "10.0.1.2"}]}}}

Per port: the ARP reply for the port's address, and an entry matching IPv4 packets that arrive
there with TTL 1 (Open vSwitch's NXM_NX_IP_TTL, ``nw_ttl``) whose InSP instruction sends the
Time Exceeded from the port's address back out of it; the packet itself goes no further. Per
route: decrement the TTL, rewrite the Ethernet addresses, output. A route through a gateway is
installed once the gateway answers the ARP request the controller sends from the route's port
(asked again every second until it answers, and every ``REFRESH_S`` after, so a changed MAC
moves the routes); ARP replies to a port's address are the only packets the controller sees.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.lib.packet import arp, ethernet, packet
from os_ken.ofproto import ofproto_v1_3

from hairpin.insp import OFPInstructionInsp, insp_error
from hairpin.templates import ETH_TYPE_ARP, ETH_TYPE_IPV4, arp_reply, template_id, time_exceeded

TTL_EXPIRED = 1000
ANSWERS = 900
# Longer prefixes first: priority ROUTE + prefix length.
ROUTE = 100
# Time Exceeded templates are numbered from here by port (ARP's by address, as elsewhere).
TIME_EXCEEDED_TEMPLATES = 0xFFFF_7100
# Seconds between ARP requests for a gateway that has not answered, and for one that has.
RETRY_S = 1.0
REFRESH_S = 30.0


def port_table(config: dict[str, Any]) -> dict[int, Any]:
    """A router's ports from its configuration, by port number."""
    return {int(n): p for n, p in config["ports"].items()}


@dataclass
class Gateway:
    """A next hop known by its address: the routes through it and what ARP said of it."""

    port: int
    routes: list[dict[str, Any]] = field(default_factory=list)
    mac: str | None = None
    asked_at: float = 0.0


class StaticRouter(app_manager.OSKenApp):  # type: ignore[misc]
    """Programs each switch as a router from the configuration file."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with open(os.environ["HAIRPIN_ROUTERS"]) as f:
            self.routers: dict[str, Any] = json.load(f)["routers"]
        # Per datapath id: its datapath and its gateways by address.
        self.datapaths: dict[int, Datapath] = {}
        self.gateways: dict[int, dict[str, Gateway]] = {}
        self.resolver = hub.spawn(self._resolve_forever)

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
        ports = port_table(config)
        for number, port in ports.items():
            answer = arp_reply(datapath, port["mac"], port["address"])
            expired = time_exceeded(
                datapath, TIME_EXCEEDED_TEMPLATES + number, port["mac"], port["address"]
            )
            requests = parser.OFPMatch(
                in_port=number, eth_type=ETH_TYPE_ARP, arp_op=1, arp_tpa=port["address"]
            )
            last_hop = parser.OFPMatch(in_port=number, eth_type=ETH_TYPE_IPV4, nw_ttl=1)
            for template, match, priority in (
                (answer, requests, ANSWERS),
                (expired, last_hop, TTL_EXPIRED),
            ):
                datapath.send_msg(template)
                generate = OFPInstructionInsp(template.pkttmp_id, back)
                datapath.send_msg(
                    parser.OFPFlowMod(
                        datapath, priority=priority, match=match, instructions=[generate]
                    )
                )
            # ARP replies to the port's own address: a gateway answering the controller.
            replies = parser.OFPMatch(
                in_port=number, eth_type=ETH_TYPE_ARP, arp_op=2, arp_tpa=port["address"]
            )
            to_controller = [
                parser.OFPActionOutput(ofproto.OFPP_CONTROLLER, ofproto.OFPCML_NO_BUFFER)
            ]
            datapath.send_msg(
                parser.OFPFlowMod(
                    datapath,
                    priority=ANSWERS,
                    match=replies,
                    instructions=[
                        parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, to_controller)
                    ],
                )
            )
        gateways: dict[str, Gateway] = {}
        for route in config["routes"]:
            if "gateway" in route:
                gateway = gateways.setdefault(route["gateway"], Gateway(route["port"]))
                gateway.routes.append(route)
            else:
                self._install_route(datapath, ports, route, route["next_hop"])
        self.datapaths[datapath.id] = datapath
        self.gateways[datapath.id] = gateways
        for address, gateway in gateways.items():
            self._ask(datapath, ports[gateway.port], address, gateway)
        self.logger.info(
            "router %s: ports %s, %d routes, ARP templates %s",
            datapath.id,
            sorted(ports),
            len(config["routes"]),
            [hex(template_id(p["address"])) for p in ports.values()],
        )

    def _install_route(
        self, datapath: Datapath, ports: dict[int, Any], route: dict[str, Any], mac: str
    ) -> None:
        """The route's entry (added, or its actions replaced) with next hop `mac`."""
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        network = ipaddress.IPv4Network(route["prefix"])
        actions = [
            parser.OFPActionDecNwTtl(),
            parser.OFPActionSetField(eth_src=ports[route["port"]]["mac"]),
            parser.OFPActionSetField(eth_dst=mac),
            parser.OFPActionOutput(route["port"]),
        ]
        match = parser.OFPMatch(
            eth_type=ETH_TYPE_IPV4,
            ipv4_dst=(str(network.network_address), str(network.netmask)),
        )
        apply = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)]
        datapath.send_msg(
            parser.OFPFlowMod(
                datapath, priority=ROUTE + network.prefixlen, match=match, instructions=apply
            )
        )

    def _ask(self, datapath: Datapath, port: dict[str, Any], address: str, gw: Gateway) -> None:
        """Sends the ARP request `who has address, tell port's address` out of `gw.port`."""
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        request = packet.Packet()
        request.add_protocol(ethernet.ethernet("ff:ff:ff:ff:ff:ff", port["mac"], ETH_TYPE_ARP))
        request.add_protocol(
            arp.arp(
                opcode=arp.ARP_REQUEST,
                src_mac=port["mac"],
                src_ip=port["address"],
                dst_mac="00:00:00:00:00:00",
                dst_ip=address,
            )
        )
        request.serialize()
        datapath.send_msg(
            parser.OFPPacketOut(
                datapath=datapath,
                buffer_id=ofproto.OFP_NO_BUFFER,
                in_port=ofproto.OFPP_CONTROLLER,
                actions=[parser.OFPActionOutput(gw.port)],
                data=bytes(request.data),
            )
        )
        gw.asked_at = time.monotonic()

    def _resolve_forever(self) -> None:
        """Asks again for gateways that have not answered, and now and then for those that
        have (a gateway replaced behind the same address)."""
        while True:
            hub.sleep(RETRY_S)
            now = time.monotonic()
            # Copies: a switch connecting meanwhile adds its gateways.
            for dpid, gateways in list(self.gateways.items()):
                datapath = self.datapaths[dpid]
                ports = port_table(self.routers[str(dpid)])
                for address, gw in list(gateways.items()):
                    wait = RETRY_S if gw.mac is None else REFRESH_S
                    if now - gw.asked_at >= wait:
                        self._ask(datapath, ports[gw.port], address, gw)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_packet_in(self, ev: ofp_event.EventOFPPacketIn) -> None:
        """A gateway's ARP reply: its routes get (or move to) the MAC it gave."""
        datapath = ev.msg.datapath
        reply = packet.Packet(ev.msg.data).get_protocol(arp.arp)
        gateways = self.gateways.get(datapath.id, {})
        if reply is None or reply.opcode != arp.ARP_REPLY or reply.src_ip not in gateways:
            return
        gw = gateways[reply.src_ip]
        if ev.msg.match["in_port"] != gw.port or gw.mac == reply.src_mac:
            return
        gw.mac = reply.src_mac
        ports = port_table(self.routers[str(datapath.id)])
        for route in gw.routes:
            self._install_route(datapath, ports, route, reply.src_mac)
        self.logger.info(
            "router %s: gateway %s is at %s (%d routes)",
            datapath.id,
            reply.src_ip,
            reply.src_mac,
            len(gw.routes),
        )

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_error(self, ev: ofp_event.EventOFPErrorMsg) -> None:
        code = insp_error(ev.msg)
        name = code.name if code is not None else f"type {ev.msg.type} code {ev.msg.code}"
        self.logger.warning("switch %s refused xid %s: %s", ev.msg.datapath.id, ev.msg.xid, name)
