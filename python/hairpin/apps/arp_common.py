"""What the two ARP responders share: an L2 learning switch that also learns IP/MAC bindings
from the ARP packets it sees (seed 001 section 2.2, the reactive OF-responder of Fig. 3(a)).

A request whose target is known is answered (how, each app says); one whose target is not
known is flooded, and the target's reply teaches the binding. Each app is one module so that
``osken-manager hairpin.apps.arp_insp`` or ``... arp_classic`` loads exactly one of them.
"""

from __future__ import annotations

from typing import Any

from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import arp, ethernet, packet

from hairpin.apps.learning_switch import LearningSwitch


class ArpResponderBase(LearningSwitch):
    """Learns bindings from ARP and answers requests for known addresses through
    :meth:`answer`; :meth:`binding_learned` lets a subclass act on each new binding."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bindings: dict[str, str] = {}  # IPv4 address -> MAC
        self.datapaths: dict[int, Datapath] = {}
        self.packet_ins = 0

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        """The learning switch's table-miss entry, then every binding known so far."""
        super().on_switch_features(ev)
        datapath = ev.msg.datapath
        self.datapaths[datapath.id] = datapath
        for address, mac in self.bindings.items():
            self.binding_learned(datapath, address, mac)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_packet_in(self, ev: ofp_event.EventOFPPacketIn) -> None:
        """ARP: learn, then answer or flood; anything else: the learning switch."""
        self.packet_ins += 1
        msg = ev.msg
        datapath = msg.datapath
        pkt = packet.Packet(msg.data)
        request = pkt.get_protocol(arp.arp)
        eth = pkt.get_protocol(ethernet.ethernet)
        if request is None or eth is None:
            super().on_packet_in(ev)
            return
        self.mac_to_port.setdefault(datapath.id, {})[eth.src] = msg.match["in_port"]
        self._learn(request.src_ip, request.src_mac)
        target_mac = self.bindings.get(request.dst_ip)
        if request.opcode == arp.ARP_REQUEST and target_mac is not None:
            self.answer(datapath, msg.match["in_port"], request, target_mac)
            return
        super().on_packet_in(ev)

    def _learn(self, address: str, mac: str) -> None:
        if address == "0.0.0.0" or self.bindings.get(address) == mac:
            return
        self.bindings[address] = mac
        self.logger.info("learned %s is at %s", address, mac)
        for datapath in self.datapaths.values():
            self.binding_learned(datapath, address, mac)

    def binding_learned(self, datapath: Datapath, address: str, mac: str) -> None:
        """Called for each datapath when a binding is learned or changes."""

    def answer(self, datapath: Datapath, in_port: int, request: arp.arp, mac: str) -> None:
        """Sends the ARP reply `request.dst_ip is at mac` back out of `in_port`."""
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        reply = packet.Packet()
        reply.add_protocol(ethernet.ethernet(request.src_mac, mac, 0x0806))
        reply.add_protocol(
            arp.arp(
                opcode=arp.ARP_REPLY,
                src_mac=mac,
                src_ip=request.dst_ip,
                dst_mac=request.src_mac,
                dst_ip=request.src_ip,
            )
        )
        reply.serialize()
        out = parser.OFPPacketOut(
            datapath=datapath,
            buffer_id=ofproto.OFP_NO_BUFFER,
            in_port=in_port,
            actions=[parser.OFPActionOutput(ofproto.OFPP_IN_PORT)],
            data=bytes(reply.data),
        )
        datapath.send_msg(out)
