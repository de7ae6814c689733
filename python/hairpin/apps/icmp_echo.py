"""ICMP echo responder for an address the switch owns, answered entirely by InSP.

Run it with ``osken-manager hairpin.apps.icmp_echo``. The address, its MAC and the echo size
come from the environment: ``HAIRPIN_ECHO_ADDRESS`` (default 10.0.0.254),
``HAIRPIN_ECHO_MAC`` (02:00:00:00:00:fe) and ``HAIRPIN_ECHO_PAYLOAD`` (56 data bytes, what
``ping`` sends). On connect it installs two templates and their flow entries: the ARP reply
for the address, and the echo reply, whose identifier, sequence number and data are copied
from the request and whose IPv4 and ICMP checksums the switch computes. Nothing reaches the
controller afterwards.

With ``HAIRPIN_ECHO_ANNOUNCE_MS`` set (milliseconds, fractions allowed), the switch also
announces the address with a gratuitous ARP out of every port at that period, from a timer
trigger (TIMER_MOD, crates/ofp/INSP.md): hosts that cached an old MAC for the address learn
the new one without asking.

A template has a fixed size, so only requests with the configured payload are answered; the
flow entry cannot tell others apart (OpenFlow 1.3 matches no length), and they get a reply
carrying the wrong data, which ping reports.
"""

from __future__ import annotations

import os
from typing import ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

from hairpin.insp import OFPInstructionInsp, OFPTimerMod, insp_error
from hairpin.templates import (
    ETH_TYPE_ARP,
    ETH_TYPE_IPV4,
    ICMP_ECHO_REQUEST,
    IPPROTO_ICMP,
    arp_reply,
    echo_reply,
    gratuitous_arp,
    template_id,
)

PRIORITY = 100
# The echo and announcement templates' ids; the ARP template is numbered by the address
# like the ARP apps'.
ECHO_TEMPLATE_ID = 0xFFFF_EC00
ANNOUNCE_TEMPLATE_ID = 0xFFFF_EC01
ANNOUNCE_TIMER_ID = 1


class InspEchoResponder(app_manager.OSKenApp):  # type: ignore[misc]
    """Answers ARP and ICMP echo for one switch-owned address from the switch."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        datapath = ev.msg.datapath
        ofproto = datapath.ofproto
        parser = datapath.ofproto_parser
        address = os.environ.get("HAIRPIN_ECHO_ADDRESS", "10.0.0.254")
        mac = os.environ.get("HAIRPIN_ECHO_MAC", "02:00:00:00:00:fe")
        payload = int(os.environ.get("HAIRPIN_ECHO_PAYLOAD", "56"))
        back = [parser.OFPActionOutput(ofproto.OFPP_IN_PORT)]
        rules = [
            (
                arp_reply(datapath, mac, address),
                parser.OFPMatch(eth_type=ETH_TYPE_ARP, arp_op=1, arp_tpa=address),
            ),
            (
                echo_reply(datapath, ECHO_TEMPLATE_ID, mac, address, payload),
                parser.OFPMatch(
                    eth_type=ETH_TYPE_IPV4,
                    ip_proto=IPPROTO_ICMP,
                    ipv4_dst=address,
                    icmpv4_type=ICMP_ECHO_REQUEST,
                ),
            ),
        ]
        for template, match in rules:
            datapath.send_msg(template)
            insp = OFPInstructionInsp(template.pkttmp_id, back)
            mod = parser.OFPFlowMod(datapath, priority=PRIORITY, match=match, instructions=[insp])
            datapath.send_msg(mod)
        announce_ms = float(os.environ.get("HAIRPIN_ECHO_ANNOUNCE_MS", "0"))
        if announce_ms > 0:
            datapath.send_msg(gratuitous_arp(datapath, ANNOUNCE_TEMPLATE_ID, mac, address))
            flood = [parser.OFPActionOutput(ofproto.OFPP_FLOOD)]
            period_us = round(announce_ms * 1000)
            timer = OFPTimerMod(
                datapath,
                timer_id=ANNOUNCE_TIMER_ID,
                pkttmp_id=ANNOUNCE_TEMPLATE_ID,
                period_us=period_us,
                actions=flood,
            )
            datapath.send_msg(timer)
            self.logger.info("announcing %s every %d us", address, period_us)
        self.logger.info(
            "answering for %s (%s), templates %#x and %#x",
            address,
            mac,
            template_id(address),
            ECHO_TEMPLATE_ID,
        )

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_error(self, ev: ofp_event.EventOFPErrorMsg) -> None:
        code = insp_error(ev.msg)
        name = code.name if code is not None else f"type {ev.msg.type} code {ev.msg.code}"
        self.logger.warning("switch %s refused xid %s: %s", ev.msg.datapath.id, ev.msg.xid, name)
