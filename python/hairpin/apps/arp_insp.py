"""The InSP ARP responder (seed 001 section 4.1, Figs. 4-5).

Run it with ``osken-manager hairpin.apps.arp_insp``. For every IP/MAC binding it learns, it
installs on every switch a packet template holding the ARP reply, with copy operations that
fill in the requester's addresses, and a flow entry that matches ARP requests for that
address and generates the reply in the switch, sent back out of the port the request came in
on. Requests for unknown addresses still reach the controller, which floods them as the
classic responder does (``hairpin.apps.arp_classic``); the target's reply teaches the binding.

Templates are numbered by the IPv4 address they answer for, so a restarted app pushes the same
templates again and the switch accepts them unchanged (crates/ofp/INSP.md). A host that moves
(same address, new MAC) gets its entry and template replaced.
"""

from __future__ import annotations

from typing import Any

from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls

from hairpin.apps.arp_common import ArpResponderBase
from hairpin.insp import OFPInstructionInsp, OFPPktTmpMod, PktTmpCommand, insp_error
from hairpin.templates import ETH_TYPE_ARP, arp_reply, template_id

# Above the learning switch's entries, so requests for known addresses never reach it.
INSP_PRIORITY = 100


class InspArpResponder(ArpResponderBase):
    """Delegates ARP replies for every learned binding to the switches."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.installed: dict[tuple[int, str], str] = {}  # (datapath, address) -> MAC

    def binding_learned(self, datapath: Datapath, address: str, mac: str) -> None:
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        match = parser.OFPMatch(eth_type=ETH_TYPE_ARP, arp_op=1, arp_tpa=address)
        pkttmp_id = template_id(address)
        previous = self.installed.get((datapath.id, address))
        if previous is not None and previous != mac:
            # The host moved: the entry goes before its template (the switch refuses to
            # delete a template that a flow entry still names).
            datapath.send_msg(
                parser.OFPFlowMod(
                    datapath,
                    command=ofproto.OFPFC_DELETE_STRICT,
                    priority=INSP_PRIORITY,
                    match=match,
                    out_port=ofproto.OFPP_ANY,
                    out_group=ofproto.OFPG_ANY,
                )
            )
            datapath.send_msg(parser.OFPBarrierRequest(datapath))
            datapath.send_msg(OFPPktTmpMod(datapath, PktTmpCommand.DELETE, pkttmp_id))
        datapath.send_msg(arp_reply(datapath, mac, address))
        generate = OFPInstructionInsp(pkttmp_id, [parser.OFPActionOutput(ofproto.OFPP_IN_PORT)])
        datapath.send_msg(
            parser.OFPFlowMod(
                datapath, priority=INSP_PRIORITY, match=match, instructions=[generate]
            )
        )
        self.installed[(datapath.id, address)] = mac

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_error(self, ev: ofp_event.EventOFPErrorMsg) -> None:
        code = insp_error(ev.msg)
        name = code.name if code is not None else f"type {ev.msg.type} code {ev.msg.code}"
        self.logger.warning("switch %s refused xid %s: %s", ev.msg.datapath.id, ev.msg.xid, name)
