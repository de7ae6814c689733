"""An os-ken app that sends every packet to the controller and answers none (the PACKET_IN
only case of seed 001 Fig. 8). ``osken-manager hairpin.bench.packet_in_sink``."""

from __future__ import annotations

from typing import ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3


class PacketInSink(app_manager.OSKenApp):  # type: ignore[misc]
    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        datapath = ev.msg.datapath
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        to_controller = parser.OFPActionOutput(ofproto.OFPP_CONTROLLER, ofproto.OFPCML_NO_BUFFER)
        instructions = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, [to_controller])]
        datapath.send_msg(
            parser.OFPFlowMod(
                datapath, priority=0, match=parser.OFPMatch(), instructions=instructions
            )
        )

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_packet_in(self, ev: ofp_event.EventOFPPacketIn) -> None:
        """Received and parsed by os-ken; nothing is sent back."""
