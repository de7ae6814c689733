"""os-ken app that installs flows, groups and meters on the switch that connects to it and reads
each back, compared field by field the way os-ken's switch test tool (os_ken/tests/switch/
tester.py) checks its prerequisites: flows by cookie, priority, timeouts, table, match (as JSON)
and instructions (sorted by type); groups by type, id and buckets; meters by flags, id and bands.

The messages come from the switch test tool's own OpenFlow 1.3 test files (every
"prerequisite" block), so the set is the tool's, not ours. Settings come from the environment:
HAIRPIN_READBACK_RESULT (required): where to write the JSON report;
HAIRPIN_READBACK_CASES: directory of test files (default: the installed os-ken's of13 suite).
"""

from __future__ import annotations

import json
import os
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import os_ken.tests.switch
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_parser, ofproto_v1_3, ofproto_v1_3_parser
from os_ken.ofproto.ofproto_parser import MsgBase

DEFAULT_CASES = Path(os_ken.tests.switch.__file__).parent / "of13"
REPLY_TIMEOUT = 10.0

# The switch test tool's port names, bound to the numbers of its default configuration.
PORT_NAMES = {
    "target_recv_port": 1,
    "target_send_port_1": 2,
    "target_send_port_2": 3,
    "tester_send_port": 1,
    "tester_recv_port_1": 2,
    "tester_recv_port_2": 3,
}


@dataclass
class Check:
    """One prerequisite message installed and read back."""

    file: str
    test: str
    kind: str
    ok: bool
    detail: str


def bind_port_names(value: object) -> None:
    """Replaces port names in output actions and in_port matches by numbers, in place."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "OFPActionOutput" and inner.get("port") in PORT_NAMES:
                inner["port"] = PORT_NAMES[inner["port"]]
            if key == "OXMTlv" and inner.get("field") == "in_port":
                inner["value"] = PORT_NAMES.get(inner["value"], inner["value"])
            bind_port_names(inner)
    elif isinstance(value, list):
        for inner in value:
            bind_port_names(inner)


def load_cases(directory: Path) -> list[tuple[str, str, list[dict[str, object]]]]:
    """(file, test description, prerequisite messages as JSON) for every test in every file."""
    cases = []
    for path in sorted(directory.rglob("*.json")):
        name = str(path.relative_to(directory))
        for entry in json.loads(path.read_text()):
            if isinstance(entry, dict):
                bind_port_names(entry)
                cases.append((name, str(entry.get("description")), entry["prerequisite"]))
    return cases


def match_json(match: MsgBase) -> str:
    fields = match.to_jsondict()
    fields["OFPMatch"].pop("wildcards", None)
    return str(fields)


FLOW_ATTRIBUTES = [
    "cookie",
    "priority",
    "hard_timeout",
    "idle_timeout",
    "match",
    "table_id",
    "instructions",
]


def compare(kind: str, got: MsgBase, sent: MsgBase) -> str | None:
    """None when `got` (a stats entry) equals `sent` (the message that installed it)."""
    attributes = {
        "flow": FLOW_ATTRIBUTES,
        "group": ["type", "group_id", "buckets"],
        "meter": ["flags", "meter_id", "bands"],
    }[kind]
    for attribute in attributes:
        value_got = getattr(got, attribute)
        value_sent = getattr(sent, attribute)
        if attribute == "instructions":
            value_got = sorted(value_got, key=lambda i: i.type)
            value_sent = sorted(value_sent, key=lambda i: i.type)
        elif attribute == "match":
            value_got = match_json(value_got)
            value_sent = match_json(value_sent)
        if str(value_got) != str(value_sent):
            return f"{attribute}: switch has {value_got}, sent {value_sent}"
    return None


class ReadbackApp(app_manager.OSKenApp):  # type: ignore[misc]
    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.result_path = Path(os.environ["HAIRPIN_READBACK_RESULT"])
        self.cases_dir = Path(os.environ.get("HAIRPIN_READBACK_CASES", DEFAULT_CASES))
        self.waiting: dict[int, tuple[hub.Event, list[MsgBase], int]] = {}
        self.started = False

    @set_ev_cls(ofp_event.EventOFPStateChange, MAIN_DISPATCHER)
    def _connected(self, ev: ofp_event.EventOFPStateChange) -> None:
        if not self.started:
            self.started = True
            hub.spawn(self._run, ev.datapath)

    @set_ev_cls(
        [
            ofp_event.EventOFPBarrierReply,
            ofp_event.EventOFPErrorMsg,
            ofp_event.EventOFPFlowStatsReply,
            ofp_event.EventOFPGroupDescStatsReply,
            ofp_event.EventOFPMeterConfigStatsReply,
        ],
        MAIN_DISPATCHER,
    )
    def _reply(self, ev: ofp_event.EventOFPMsgBase) -> None:
        msg = ev.msg
        waiter = self.waiting.get(msg.xid)
        if waiter is None:
            return
        event, replies, last_xid = waiter
        replies.append(msg)
        is_error = isinstance(msg, ofproto_v1_3_parser.OFPErrorMsg)
        more = getattr(msg, "flags", 0) & ofproto_v1_3.OFPMPF_REPLY_MORE
        if msg.xid == last_xid and (is_error or not more):
            event.set()

    def _transact(self, dp: Datapath, msg: MsgBase) -> list[MsgBase]:
        """Sends `msg` and, unless it is a multipart request, a barrier behind it; returns
        every reply and error to `msg` (the barrier reply excluded)."""
        event = hub.Event()
        replies: list[MsgBase] = []
        dp.set_xid(msg)
        xids = [msg.xid]
        messages = [msg]
        if not isinstance(msg, dp.ofproto_parser.OFPMultipartRequest):
            barrier = dp.ofproto_parser.OFPBarrierRequest(dp)
            dp.set_xid(barrier)
            xids.append(barrier.xid)
            messages.append(barrier)
        for xid in xids:
            self.waiting[xid] = (event, replies, xids[-1])
        try:
            for message in messages:
                dp.send_msg(message)
            if not event.wait(timeout=REPLY_TIMEOUT):
                raise TimeoutError(f"no reply to {msg}")
        finally:
            for xid in xids:
                self.waiting.pop(xid, None)
        return [r for r in replies if r.xid == msg.xid]

    def _errors(self, replies: list[MsgBase]) -> list[str]:
        return [
            f"error type {r.type} code {r.code}"
            for r in replies
            if isinstance(r, ofproto_v1_3_parser.OFPErrorMsg)
        ]

    def _clear(self, dp: Datapath) -> None:
        ofp, parser = dp.ofproto, dp.ofproto_parser
        for msg in (
            parser.OFPFlowMod(
                dp,
                table_id=ofp.OFPTT_ALL,
                command=ofp.OFPFC_DELETE,
                out_port=ofp.OFPP_ANY,
                out_group=ofp.OFPG_ANY,
            ),
            parser.OFPGroupMod(dp, command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL),
            parser.OFPMeterMod(dp, command=ofp.OFPMC_DELETE, meter_id=ofp.OFPM_ALL),
        ):
            errors = self._errors(self._transact(dp, msg))
            if errors:
                raise RuntimeError(f"clearing the switch failed: {errors}")

    def _read_back(self, dp: Datapath, kind: str) -> list[MsgBase]:
        ofp, parser = dp.ofproto, dp.ofproto_parser
        request = {
            "flow": lambda: parser.OFPFlowStatsRequest(dp),
            "group": lambda: parser.OFPGroupDescStatsRequest(dp),
            "meter": lambda: parser.OFPMeterConfigStatsRequest(dp, 0, ofp.OFPM_ALL),
        }[kind]()
        return [entry for reply in self._transact(dp, request) for entry in reply.body]

    def _check(self, dp: Datapath, file: str, test: str, message: dict[str, object]) -> Check:
        parser = dp.ofproto_parser
        msg = ofproto_parser.ofp_msg_from_jsondict(dp, message)
        kind = (
            "flow"
            if isinstance(msg, parser.OFPFlowMod)
            else "group"
            if isinstance(msg, parser.OFPGroupMod)
            else "meter"
        )
        errors = self._errors(self._transact(dp, msg))
        if errors:
            return Check(file, test, kind, False, f"install refused: {errors}")
        mismatches = []
        for entry in self._read_back(dp, kind):
            mismatch = compare(kind, entry, msg)
            if mismatch is None:
                return Check(file, test, kind, True, "")
            mismatches.append(mismatch)
        return Check(file, test, kind, False, "; ".join(mismatches) or "not found")

    def _run(self, dp: Datapath) -> None:
        checks: list[Check] = []
        failure = ""
        try:
            for file, test, prerequisites in load_cases(self.cases_dir):
                self._clear(dp)
                for message in prerequisites:
                    checks.append(self._check(dp, file, test, message))
        except Exception as e:  # the report must say why the run stopped
            failure = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        report = {"checks": [asdict(c) for c in checks], "failure": failure}
        partial = self.result_path.with_suffix(".partial")
        partial.write_text(json.dumps(report, indent=1))
        partial.rename(self.result_path)
