"""A local learning switch in Python: learns source addresses from packet-ins, floods unknown
destinations, installs a flow per (in port, destination) once known. ``--no-flows`` installs
none, so every packet crosses the controllet (the latency benchmark's mode). Each address it
learns goes on the bus as ``hairpin.<dpid>.c.<name>.learned``."""

from __future__ import annotations

import sys
from typing import Any

from os_ken.ofproto import ofproto_v1_3_parser as parser

from hairpin.controllet import Controllet, Environment, on_openflow


class LearningSwitch(Controllet):
    def __init__(self, env: Environment) -> None:
        super().__init__(env)
        self.install = "--no-flows" not in sys.argv
        self.macs: dict[bytes, int] = {}

    async def started(self) -> None:
        dp = self.datapath
        to_controller = parser.OFPActionOutput(dp.ofproto.OFPP_CONTROLLER, 0xFFFF)
        dp.send_msg(flow(dp, 0, parser.OFPMatch(), [to_controller]))
        print(f"learning switch on {self.env.dpid}, flows: {self.install}", flush=True)

    @on_openflow(parser.OFPPacketIn)
    async def packet_in(self, msg: Any) -> None:
        dp = self.datapath
        data = msg.data
        if len(data) < 14:
            return
        dst, src, in_port = data[0:6], data[6:12], msg.match["in_port"]
        if not src[0] & 1 and self.macs.get(src) != in_port:
            self.macs[src] = in_port
            await self.publish("learned", f"{src.hex(':')} {in_port}")
        out = self.macs.get(dst)
        if out is not None and self.install:
            match = parser.OFPMatch(in_port=in_port, eth_dst=dst.hex(":"))
            dp.send_msg(flow(dp, 10, match, [parser.OFPActionOutput(out)], idle_timeout=60))
        port = dp.ofproto.OFPP_FLOOD if out is None else out
        dp.send_msg(
            parser.OFPPacketOut(
                dp,
                buffer_id=msg.buffer_id,
                in_port=in_port,
                actions=[parser.OFPActionOutput(port)],
                data=None if msg.buffer_id != dp.ofproto.OFP_NO_BUFFER else data,
            )
        )


def flow(dp: Any, priority: int, match: Any, actions: list[Any], idle_timeout: int = 0) -> Any:
    apply = parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)
    return parser.OFPFlowMod(
        dp, priority=priority, match=match, instructions=[apply], idle_timeout=idle_timeout
    )


if __name__ == "__main__":
    LearningSwitch.main()
