"""os-ken app that writes what a controller learns about a switch's ports, one JSON object per
line, to the file named by HAIRPIN_PORT_LOG: the port list (PORT_DESC) when a switch connects,
and every PORT_STATUS with the time it arrived. Run it beside another app, for example
``osken-manager hairpin.apps.learning_switch hairpin.apps.port_log``.

Lines: ``{"event": "ports", "dpid": 1, "time": T, "ports": [{"port_no", "name", "link_down",
"curr_speed"}...]}`` and ``{"event": "port_status", "dpid": 1, "time": T, "reason": "add" |
"delete" | "modify", "port_no": N, "name": S, "link_down": bool, "curr_speed": kbps}``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, ClassVar

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

REASONS = {0: "add", 1: "delete", 2: "modify"}
OFPPS_LINK_DOWN = 1


def _port(port: Any) -> dict[str, object]:
    name = port.name.decode(errors="replace") if isinstance(port.name, bytes) else port.name
    return {
        "port_no": port.port_no,
        "name": name,
        "link_down": bool(port.state & OFPPS_LINK_DOWN),
        "curr_speed": port.curr_speed,
    }


class PortLog(app_manager.OSKenApp):  # type: ignore[misc]
    """Appends port events to $HAIRPIN_PORT_LOG."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.path = os.environ["HAIRPIN_PORT_LOG"]
        self.lock = threading.Lock()

    def _write(self, record: dict[str, object]) -> None:
        with self.lock, open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)  # type: ignore[misc]
    def on_switch_features(self, ev: ofp_event.EventOFPSwitchFeatures) -> None:
        datapath = ev.msg.datapath
        datapath.send_msg(datapath.ofproto_parser.OFPPortDescStatsRequest(datapath, 0))

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_port_desc(self, ev: ofp_event.EventOFPPortDescStatsReply) -> None:
        ports = [_port(p) for p in ev.msg.body]
        self._write(
            {"event": "ports", "dpid": ev.msg.datapath.id, "time": time.time(), "ports": ports}
        )

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)  # type: ignore[misc]
    def on_port_status(self, ev: ofp_event.EventOFPPortStatus) -> None:
        record: dict[str, object] = {
            "event": "port_status",
            "dpid": ev.msg.datapath.id,
            "time": time.time(),
            "reason": REASONS.get(ev.msg.reason, str(ev.msg.reason)),
        }
        record.update(_port(ev.msg.desc))
        self._write(record)
