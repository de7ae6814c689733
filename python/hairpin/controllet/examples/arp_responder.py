"""A local ARP responder: answers ARP requests for the addresses it is given
(``--answer IP=MAC``, repeatable) from the switch itself; other ARP traffic goes on as the
switch's other flows say. Each answer goes on the bus as ``hairpin.<dpid>.c.<name>.answered``."""

from __future__ import annotations

import argparse
from typing import Any

from os_ken.lib.packet import arp, ether_types, ethernet, packet
from os_ken.ofproto import ofproto_v1_3_parser as parser

from hairpin.controllet import Controllet, Environment, on_openflow

ARP_PRIORITY = 100


class ArpResponder(Controllet):
    def __init__(self, env: Environment) -> None:
        super().__init__(env)
        args = argparse.ArgumentParser()
        args.add_argument("--answer", action="append", default=[], metavar="IP=MAC")
        self.table = dict(pair.split("=", 1) for pair in args.parse_args().answer)

    async def started(self) -> None:
        dp = self.datapath
        to_controller = parser.OFPActionOutput(dp.ofproto.OFPP_CONTROLLER, 0xFFFF)
        apply = parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, [to_controller])
        for ip in self.table:
            match = parser.OFPMatch(eth_type=ether_types.ETH_TYPE_ARP, arp_op=1, arp_tpa=ip)
            dp.send_msg(
                parser.OFPFlowMod(dp, priority=ARP_PRIORITY, match=match, instructions=[apply])
            )
        print(f"answering ARP for {sorted(self.table)}", flush=True)

    @on_openflow(parser.OFPPacketIn)
    async def packet_in(self, msg: Any) -> None:
        pkt = packet.Packet(msg.data)
        request = pkt.get_protocol(arp.arp)
        if request is None or request.opcode != arp.ARP_REQUEST:
            return
        mac = self.table.get(request.dst_ip)
        if mac is None:
            return
        reply = packet.Packet()
        reply.add_protocol(
            ethernet.ethernet(ethertype=ether_types.ETH_TYPE_ARP, dst=request.src_mac, src=mac)
        )
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
        dp = self.datapath
        in_port = msg.match["in_port"]
        dp.send_msg(
            parser.OFPPacketOut(
                dp,
                buffer_id=dp.ofproto.OFP_NO_BUFFER,
                in_port=dp.ofproto.OFPP_CONTROLLER,
                actions=[parser.OFPActionOutput(in_port)],
                data=bytes(reply.data),
            )
        )
        await self.publish("answered", f"{request.dst_ip} is-at {mac} for {request.src_ip}")


if __name__ == "__main__":
    ArpResponder.main()
