"""ARP over a fabric of switches the way seed 001's datacenter model assumes it (section
5.2.2): the OF-responder of Fig. 3(a), or the same with the replies for learnt hosts generated
by the edge switches (InSP, Fig. 4).

Run it with ``HAIRPIN_FABRIC=topology.json HAIRPIN_ARP_MODE=responder|insp osken-manager
hairpin.apps.arp_fabric``; the topology is :meth:`hairpin.testing.fabric.Fabric.describe`'s.

- Every switch sends ARP to the controller; nothing else is forwarded until hosts are learnt.
- A host is learnt from the first ARP message it sends, at its edge switch's host port. The
  controller then installs on every switch an entry forwarding frames for the host's MAC
  along a shortest path; in InSP mode also, on every edge switch, the host's ARP reply
  template and the entry that answers requests for its address from the switch.
- A request for a learnt address is answered with a PACKET_OUT of the reply (OF-responder;
  in InSP mode the edge switch answers and the controller never sees it). A request for an
  address nobody knows goes out of every other host port, one PACKET_OUT per port; the
  target's reply comes back as a PACKET_IN and goes to the requester in a PACKET_OUT.
"""

from __future__ import annotations

import json
import os
from collections import deque
from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import arp, ethernet, packet
from os_ken.ofproto import ofproto_v1_3

from hairpin.insp import OFPInstructionInsp
from hairpin.templates import ETH_TYPE_ARP, arp_reply, template_id

# ARP reaches the controller even when addressed to a learnt host (the model's OF-responder
# sees the target's reply), unless an edge switch answers it (InSP).
FORWARDING = 10
ARP_TO_CONTROLLER = 50
INSP_ANSWER = 100


class Topology:
    """The fabric's switches: edge switches with their host ports, and the cables."""

    def __init__(self, description: dict[str, Any]) -> None:
        switches = description["switches"]
        self.links = {
            int(d): {int(p): int(n) for p, n in s["links"].items()} for d, s in switches.items()
        }
        self.host_ports = {int(d): list(s["host_ports"]) for d, s in switches.items() if s["edge"]}

    def out_ports(self, edge: int, host_port: int) -> dict[int, int]:
        """The port every switch forwards a host's frames out of: a shortest path to its edge
        switch (lowest port first among equals), then its host port."""
        distance = {edge: 0}
        queue = deque([edge])
        while queue:
            here = queue.popleft()
            for there in self.links[here].values():
                if there not in distance:
                    distance[there] = distance[here] + 1
                    queue.append(there)
        ports = {edge: host_port}
        for dpid, links in self.links.items():
            if dpid != edge:
                toward = [p for p, n in sorted(links.items()) if distance[n] < distance[dpid]]
                ports[dpid] = toward[0]
        return ports


class FabricArpResponder(app_manager.OSKenApp):  # type: ignore[misc]
    """The model's controller: learns hosts from ARP and answers, floods or delivers."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with open(os.environ["HAIRPIN_FABRIC"]) as f:
            self.topology = Topology(json.load(f))
        self.insp = os.environ.get("HAIRPIN_ARP_MODE", "responder") == "insp"
        self.datapaths: dict[int, Datapath] = {}
        self.hosts: dict[str, tuple[str, int, int]] = {}  # IPv4 -> (MAC, edge dpid, port)

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        """A clean table with ARP to the controller."""
        datapath = ev.msg.datapath
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        self.datapaths[datapath.id] = datapath
        datapath.send_msg(
            parser.OFPFlowMod(
                datapath,
                command=ofproto.OFPFC_DELETE,
                table_id=ofproto.OFPTT_ALL,
                out_port=ofproto.OFPP_ANY,
                out_group=ofproto.OFPG_ANY,
            )
        )
        to_controller = parser.OFPActionOutput(ofproto.OFPP_CONTROLLER, ofproto.OFPCML_NO_BUFFER)
        self._flow(
            datapath, ARP_TO_CONTROLLER, parser.OFPMatch(eth_type=ETH_TYPE_ARP), [to_controller]
        )
        datapath.send_msg(parser.OFPBarrierRequest(datapath))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_packet_in(self, ev: ofp_event.EventOFPPacketIn) -> None:
        msg = ev.msg
        dpid, in_port = msg.datapath.id, msg.match["in_port"]
        message = packet.Packet(msg.data).get_protocol(arp.arp)
        if message is None or in_port not in self.topology.host_ports.get(dpid, ()):
            return
        if message.src_ip not in self.hosts:
            self._learn(message.src_ip, message.src_mac, dpid, in_port)
        if message.opcode == arp.ARP_REPLY:
            requester = self.hosts.get(message.dst_ip)
            if requester is not None:
                self._packet_out(requester[1], requester[2], msg.data)
            return
        target = self.hosts.get(message.dst_ip)
        if target is not None:
            self._packet_out(dpid, in_port, self._reply(message, target[0]))
            return
        for edge, ports in self.topology.host_ports.items():
            for port in ports:
                if (edge, port) != (dpid, in_port):
                    self._packet_out(edge, port, msg.data)

    def _learn(self, address: str, mac: str, edge: int, port: int) -> None:
        self.hosts[address] = (mac, edge, port)
        for dpid, out_port in self.topology.out_ports(edge, port).items():
            datapath = self.datapaths[dpid]
            parser = datapath.ofproto_parser
            forward = [parser.OFPActionOutput(out_port)]
            self._flow(datapath, FORWARDING, parser.OFPMatch(eth_dst=mac), forward)
        if self.insp:
            for dpid in self.topology.host_ports:
                datapath = self.datapaths[dpid]
                ofproto = datapath.ofproto
                parser = datapath.ofproto_parser
                datapath.send_msg(arp_reply(datapath, mac, address))
                back = [parser.OFPActionOutput(ofproto.OFPP_IN_PORT)]
                answer = OFPInstructionInsp(template_id(address), back)
                requests = parser.OFPMatch(eth_type=ETH_TYPE_ARP, arp_op=1, arp_tpa=address)
                mod = parser.OFPFlowMod(
                    datapath, priority=INSP_ANSWER, match=requests, instructions=[answer]
                )
                datapath.send_msg(mod)
        for datapath in self.datapaths.values():
            datapath.send_msg(datapath.ofproto_parser.OFPBarrierRequest(datapath))
        self.logger.info("learned %s at %s on switch %d port %d", address, mac, edge, port)

    @staticmethod
    def _reply(request: arp.arp, mac: str) -> bytes:
        reply = packet.Packet()
        reply.add_protocol(ethernet.ethernet(request.src_mac, mac, ETH_TYPE_ARP))
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
        return bytes(reply.data)

    def _packet_out(self, dpid: int, port: int, data: bytes) -> None:
        datapath = self.datapaths[dpid]
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        out = parser.OFPPacketOut(
            datapath=datapath,
            buffer_id=ofproto.OFP_NO_BUFFER,
            in_port=ofproto.OFPP_CONTROLLER,
            actions=[parser.OFPActionOutput(port)],
            data=data,
        )
        datapath.send_msg(out)

    @staticmethod
    def _flow(datapath: Datapath, priority: int, match: Any, actions: list[Any]) -> None:
        parser = datapath.ofproto_parser
        ofproto = datapath.ofproto
        apply = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)]
        datapath.send_msg(
            parser.OFPFlowMod(datapath, priority=priority, match=match, instructions=apply)
        )
