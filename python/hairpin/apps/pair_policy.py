"""The policy of seed 000 (HARMLESS) Fig. 2 as an os-ken app: two hosts may exchange traffic
with each other and nothing else; every other packet is dropped.

The pair comes from ``HAIRPIN_POLICY_PAIR="PORT_A=IP_A,PORT_B=IP_B"`` (default
``1=10.0.0.1,3=10.0.0.3``). The app writes the flow table of the figure as a controller writes it
for an ordinary OpenFlow switch, by port numbers: on a HARMLESS switch those ports are legacy
access ports, and the rules need no VLAN in them. ARP between the two passes too (the figure
leaves address resolution out). Run with ``osken-manager hairpin.apps.pair_policy``.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ether_types
from os_ken.ofproto import ofproto_v1_3

DEFAULT_PAIR = "1=10.0.0.1,3=10.0.0.3"
ALLOWED_PRIORITY = 100
DROP_PRIORITY = 0


def parse_pair(text: str) -> tuple[tuple[int, str], tuple[int, str]]:
    """``"1=10.0.0.1,3=10.0.0.3"`` -> ((1, "10.0.0.1"), (3, "10.0.0.3"))."""
    ends = []
    for part in text.split(","):
        port, _, address = part.partition("=")
        ends.append((int(port), address.strip()))
    if len(ends) != 2 or not all(address for _, address in ends):
        raise ValueError(f"HAIRPIN_POLICY_PAIR must be PORT=IP,PORT=IP, not {text!r}")
    return ends[0], ends[1]


class PairPolicy(app_manager.OSKenApp):  # type: ignore[misc]
    """Installs the pair's flows when a switch connects; the table-miss entry drops."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pair = parse_pair(os.environ.get("HAIRPIN_POLICY_PAIR", DEFAULT_PAIR))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        datapath = ev.msg.datapath
        parser = datapath.ofproto_parser
        (port_a, ip_a), (port_b, ip_b) = self.pair
        for (in_port, src), (out_port, dst) in (
            ((port_a, ip_a), (port_b, ip_b)),
            ((port_b, ip_b), (port_a, ip_a)),
        ):
            output = [parser.OFPActionOutput(out_port)]
            ip = parser.OFPMatch(
                in_port=in_port, eth_type=ether_types.ETH_TYPE_IP, ipv4_src=src, ipv4_dst=dst
            )
            arp = parser.OFPMatch(
                in_port=in_port, eth_type=ether_types.ETH_TYPE_ARP, arp_spa=src, arp_tpa=dst
            )
            self._add_flow(datapath, ALLOWED_PRIORITY, ip, output)
            self._add_flow(datapath, ALLOWED_PRIORITY, arp, output)
        # An explicit table-miss entry without actions: dropped, and counted.
        self._add_flow(datapath, DROP_PRIORITY, parser.OFPMatch(), [])

    @staticmethod
    def _add_flow(datapath: Any, priority: int, match: Any, actions: list[Any]) -> None:
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        instructions = (
            [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        )
        datapath.send_msg(
            parser.OFPFlowMod(
                datapath=datapath, priority=priority, match=match, instructions=instructions
            )
        )
