"""The Python SDK of Hairpin controllets: os-ken-style handlers on a switch-local OpenFlow
channel, and the NATS bus through nats-py. "Hello switch"::

    from os_ken.ofproto import ofproto_v1_3_parser as parser
    from hairpin.controllet import Controllet, on_openflow

    class Hello(Controllet):
        @on_openflow(parser.OFPPortStatus)
        async def port_changed(self, msg):
            print("port", msg.desc.port_no, "changed")
            await self.publish("port", str(msg.desc.port_no))

    Hello.main()
"""

from hairpin.controllet.app import Controllet, Datapath, on_bus, on_openflow
from hairpin.controllet.env import Environment

__all__ = ["Controllet", "Datapath", "Environment", "on_bus", "on_openflow"]
