"""An OpenFlow 1.3 L2 learning switch for os-ken (os-ken 3.x and 4.x no longer ship one).

Run it with ``osken-manager hairpin.apps.learning_switch``. On connect it installs a table-miss
entry that sends packets to the controller. For each packet-in it learns the source MAC on the
ingress port; when the destination is known it installs a flow (in_port, eth_src, eth_dst) that
outputs to the learned port, otherwise it floods.
"""

from __future__ import annotations

from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ether_types, ethernet, packet
from os_ken.ofproto import ofproto_v1_3

TABLE_MISS_PRIORITY = 0
LEARNED_PRIORITY = 10
# Learned entries expire when idle so a host that moves is re-learned.
LEARNED_IDLE_TIMEOUT = 60


class LearningSwitch(app_manager.OSKenApp):  # type: ignore[misc]
    """Per-datapath MAC learning with exact-match forwarding flows."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mac_to_port: dict[int, dict[str, int]] = {}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        """Send everything that matches nothing to the controller, unbuffered."""
        datapath = ev.msg.datapath
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        self.mac_to_port[datapath.id] = {}
        to_controller = parser.OFPActionOutput(ofproto.OFPP_CONTROLLER, ofproto.OFPCML_NO_BUFFER)
        self._add_flow(datapath, TABLE_MISS_PRIORITY, parser.OFPMatch(), [to_controller])

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_packet_in(self, ev: ofp_event.EventOFPPacketIn) -> None:
        """Learn the source, then forward to the known port or flood."""
        msg = ev.msg
        datapath = msg.datapath
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        in_port: int = msg.match["in_port"]

        eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
        if eth is None or eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return

        table = self.mac_to_port.setdefault(datapath.id, {})
        table[eth.src] = in_port
        out_port = table.get(eth.dst, ofproto.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]

        buffered = msg.buffer_id != ofproto.OFP_NO_BUFFER
        if out_port != ofproto.OFPP_FLOOD:
            match = parser.OFPMatch(in_port=in_port, eth_src=eth.src, eth_dst=eth.dst)
            self._add_flow(
                datapath,
                LEARNED_PRIORITY,
                match,
                actions,
                idle_timeout=LEARNED_IDLE_TIMEOUT,
                buffer_id=msg.buffer_id if buffered else None,
            )
            if buffered:
                return  # the flow-mod released the buffered packet through the new entry

        out = parser.OFPPacketOut(
            datapath=datapath,
            buffer_id=msg.buffer_id,
            in_port=in_port,
            actions=actions,
            data=None if buffered else msg.data,
        )
        datapath.send_msg(out)

    @staticmethod
    def _add_flow(
        datapath: Datapath,
        priority: int,
        match: Any,
        actions: list[Any],
        idle_timeout: int = 0,
        buffer_id: int | None = None,
    ) -> None:
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        instructions = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)]
        extra = {} if buffer_id is None else {"buffer_id": buffer_id}
        mod = parser.OFPFlowMod(
            datapath=datapath,
            priority=priority,
            match=match,
            instructions=instructions,
            idle_timeout=idle_timeout,
            **extra,
        )
        datapath.send_msg(mod)
