"""The os-ken InSP extension against the switch's own codec and against BEBA's layouts.

`crates/ofp/tests/vectors/insp.json` is written and checked by the Rust test
`crates/ofp/tests/insp_vectors.rs`; here every valid vector must be produced byte for byte by
the extension's classes and parse back through os-ken to the same fields, and every malformed
one must be refused with the error code the switch answers it with.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofproto
from os_ken.ofproto import ofproto_v1_3_parser as parser

from hairpin.insp import (
    BEBA_EXPERIMENTER,
    TIMER_ALL,
    TIMER_MOD_EXP_TYPE,
    ChecksumKind,
    ChecksumOp,
    CopyOp,
    InspDecodeError,
    InspErrorCode,
    OFPInstructionInsp,
    OFPPktTmpMod,
    OFPTimerMod,
    PktTmpCommand,
    TimerCommand,
    insp_error,
)

VECTORS = Path(__file__).resolve().parents[2] / "crates/ofp/tests/vectors/insp.json"
DP = SimpleNamespace(ofproto=ofproto, ofproto_parser=parser, id=1)
MAC_C = bytes([0x02, 0xCC, 0, 0, 0, 0x0C])
IP_C = bytes([10, 0, 0, 12])


def arp_reply_template() -> bytes:
    return (
        b"\0" * 6
        + MAC_C
        + bytes([0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2])
        + MAC_C
        + IP_C
        + b"\0" * 10
    )


def time_exceeded_template() -> bytes:
    return (
        b"\0" * 6
        + bytes([0x02, 0x55, 0, 0, 0, 1])
        + bytes([0x08, 0x00, 0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0])
        + bytes([192, 0, 2, 1, 0, 0, 0, 0])
        + bytes([11, 0, 0, 0, 0, 0, 0, 0])
        + b"\0" * 28
    )


def gratuitous_arp_template() -> bytes:
    arp = bytes([0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]) + MAC_C + IP_C + b"\0" * 6 + IP_C
    return b"\xff" * 6 + MAC_C + arp + b"\0" * 18


def flow(priority: int, match: Any, instructions: list[Any]) -> Any:
    return parser.OFPFlowMod(
        DP,
        priority=priority,
        match=match,
        instructions=instructions,
        out_port=ofproto.OFPP_ANY,
        out_group=ofproto.OFPG_ANY,
    )


def experimenter_error(code: InspErrorCode, data: bytes) -> Any:
    return parser.OFPErrorMsg(
        DP,
        type_=ofproto.OFPET_EXPERIMENTER,
        data=data,
        exp_type=code,
        experimenter=BEBA_EXPERIMENTER,
    )


def builders() -> dict[str, tuple[int, Any]]:
    """The same messages as the Rust test's `valid()`, built with the os-ken extension."""
    fig5 = [CopyOp(6, 0, 6), CopyOp(22, 32, 6), CopyOp(28, 38, 4)]
    fig6_copies = [CopyOp(6, 0, 6), CopyOp(26, 30, 4), CopyOp(14, 42, 28)]
    fig6_sums = [
        ChecksumOp(ChecksumKind.IPV4_HEADER, start=14, length=20, dst_offset=24),
        ChecksumOp(ChecksumKind.ICMPV4, start=34, dst_offset=36),
    ]
    tunnel_sums = [
        ChecksumOp(ChecksumKind.UDPV4, start=54, dst_offset=60, ip_offset=34),
        ChecksumOp(ChecksumKind.TCPV6, start=1, length=2, dst_offset=3, ip_offset=4),
    ]
    add, delete = PktTmpCommand.ADD, PktTmpCommand.DELETE
    to_table = parser.OFPActionOutput(ofproto.OFPP_TABLE, ofproto.OFPCML_NO_BUFFER)
    to_12 = parser.OFPActionOutput(12, ofproto.OFPCML_NO_BUFFER)
    arp_match = parser.OFPMatch(eth_type=0x0806, arp_op=1, arp_tpa="10.0.0.12")
    failed = experimenter_error(
        InspErrorCode.PKTTMP_MOD_FAILED, encode(8, OFPPktTmpMod(DP, delete, 9))
    )
    bad_instr = experimenter_error(InspErrorCode.BAD_EXP_INSTRUCTION, b"")
    flood = parser.OFPActionOutput(ofproto.OFPP_FLOOD, ofproto.OFPCML_NO_BUFFER)
    controller = ofproto.OFPP_CONTROLLER
    too_fast = OFPTimerMod(DP, TimerCommand.ADD, 2, 77, 999, controller, [flood])
    rate_exceeded = experimenter_error(InspErrorCode.TIMER_RATE_EXCEEDED, encode(14, too_fast))
    return {
        "pkttmp_add_base": (1, OFPPktTmpMod(DP, add, 123, arp_reply_template())),
        "pkttmp_delete": (2, OFPPktTmpMod(DP, delete, 123)),
        "pkttmp_add_ext_arp_fig5": (3, OFPPktTmpMod(DP, add, 123, arp_reply_template(), fig5)),
        "pkttmp_add_ext_icmp_fig6": (
            4,
            OFPPktTmpMod(DP, add, 321, time_exceeded_template(), fig6_copies, fig6_sums),
        ),
        "pkttmp_add_ext_checksums_only": (
            5,
            OFPPktTmpMod(DP, add, 0xFFFFFFFE, b"\x45" * 61, checksum_ops=tunnel_sums),
        ),
        "flow_mod_insp_fig5": (6, flow(100, arp_match, [OFPInstructionInsp(123, [to_table])])),
        "flow_mod_insp_and_write_actions": (
            7,
            flow(
                200,
                parser.OFPMatch(in_port=12, eth_type=0x0800),
                [
                    OFPInstructionInsp(321, [to_12]),
                    parser.OFPInstructionActions(ofproto.OFPIT_WRITE_ACTIONS, []),
                ],
            ),
        ),
        "error_pkttmp_mod_failed": (8, failed),
        "error_bad_exp_instruction": (9, bad_instr),
        "pkttmp_add_gratuitous_arp": (10, OFPPktTmpMod(DP, add, 77, gratuitous_arp_template())),
        "timer_add_flood_every_50ms": (
            11,
            OFPTimerMod(DP, TimerCommand.ADD, 1, 77, 50_000, controller, [flood]),
        ),
        "timer_add_into_pipeline": (
            12,
            OFPTimerMod(DP, TimerCommand.ADD, 1, 77, 1_000_000, controller, [to_table]),
        ),
        "timer_delete_all": (13, OFPTimerMod(DP, TimerCommand.DELETE, TIMER_ALL, in_port=0)),
        "error_timer_rate_exceeded": (14, rate_exceeded),
    }


def load(kind: str) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads(VECTORS.read_text())[kind]
    return vectors


def encode(xid: int, msg: Any) -> bytes:
    msg.xid = None  # a parsed message carries its xid already
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


def decode(data: bytes) -> Any:
    version, msg_type, length, xid = struct.unpack_from("!BBHI", data)
    return parser.msg_parser(DP, version, msg_type, length, xid, data)


def test_every_vector_has_a_builder() -> None:
    assert {v["name"] for v in load("valid")} == set(builders())


@pytest.mark.parametrize("vector", load("valid"), ids=lambda v: v["name"])
def test_extension_encodes_the_switch_bytes(vector: dict[str, Any]) -> None:
    xid, msg = builders()[vector["name"]]
    assert encode(xid, msg).hex() == vector["hex"]


@pytest.mark.parametrize("vector", load("valid"), ids=lambda v: v["name"])
def test_os_ken_parses_the_switch_bytes_back(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    parsed = decode(data)
    xid, built = builders()[vector["name"]]
    assert type(parsed) is type(built)
    assert parsed.xid == xid
    if isinstance(built, OFPPktTmpMod):
        fields = ("command", "pkttmp_id", "template", "copy_ops", "checksum_ops", "exp_type")
        for field in fields:
            assert getattr(parsed, field) == getattr(built, field), field
    elif isinstance(built, OFPTimerMod):
        for field in ("command", "timer_id", "pkttmp_id", "period_us", "in_port"):
            assert getattr(parsed, field) == getattr(built, field), field
        assert [a.port for a in parsed.actions] == [a.port for a in built.actions]
    elif isinstance(built, parser.OFPFlowMod):
        insp = [i for i in parsed.instructions if isinstance(i, OFPInstructionInsp)]
        assert len(insp) == 1
        assert insp[0].pkttmp_id == built.instructions[0].pkttmp_id
        assert [a.port for a in insp[0].actions] == [a.port for a in built.instructions[0].actions]
        assert len(parsed.instructions) == len(built.instructions)
    else:
        assert insp_error(parsed) == InspErrorCode(built.exp_type)
        assert parsed.data == built.data
    # Re-serializing what os-ken parsed gives the same bytes.
    assert encode(xid, parsed).hex() == vector["hex"]


@pytest.mark.parametrize("vector", load("malformed"), ids=lambda v: v["name"])
def test_malformed_messages_get_the_switch_error(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    (exp_type,) = struct.unpack_from("!I", data, 12)
    with pytest.raises(InspDecodeError) as caught:
        if exp_type == TIMER_MOD_EXP_TYPE:
            OFPTimerMod.decode_body(DP, data[16:])
        else:
            OFPPktTmpMod.decode_body(DP, exp_type, data[16:])
    assert caught.value.code == InspErrorCode(vector["error"])


def test_base_layout_is_bebas() -> None:
    """BEBA's PKTTMP_MOD (seeds README): header | experimenter | exp_type 1 | command u8 |
    pad u8 | pkttmp_id u32 | pad[4] | template; and its InSP instruction layout."""
    template = arp_reply_template()
    beba = struct.pack("!BBHIIIBxI4x", 4, 4, 26 + len(template), 7, BEBA_EXPERIMENTER, 1, 0, 123)
    assert encode(7, OFPPktTmpMod(DP, PktTmpCommand.ADD, 123, template)) == beba + template
    beba_delete = struct.pack("!BBHIIIBxI4x", 4, 4, 26, 7, BEBA_EXPERIMENTER, 1, 1, 123)
    assert encode(7, OFPPktTmpMod(DP, PktTmpCommand.DELETE, 123)) == beba_delete

    output = struct.pack("!HHIH6x", 0, 16, ofproto.OFPP_TABLE, 0xFFFF)
    beba_instruction = struct.pack("!HHII4xI4x", 0xFFFF, 24 + 16, BEBA_EXPERIMENTER, 0, 123)
    buf = bytearray()
    to_table = parser.OFPActionOutput(ofproto.OFPP_TABLE, ofproto.OFPCML_NO_BUFFER)
    OFPInstructionInsp(123, [to_table]).serialize(buf, 0)
    assert bytes(buf) == beba_instruction + output
    assert parser.OFPInstruction.parser(bytes(buf), 0).pkttmp_id == 123


def test_operations_that_do_not_fit_are_refused_before_sending() -> None:
    too_far = OFPPktTmpMod(DP, template=b"\0" * 60, copy_ops=[CopyOp(70_000, 0, 1)])
    with pytest.raises(ValueError, match="src_offset"):
        encode(1, too_far)
    delete_with_ops = OFPPktTmpMod(DP, PktTmpCommand.DELETE, 1, copy_ops=[CopyOp(0, 0, 1)])
    with pytest.raises(ValueError, match="ADD only"):
        encode(1, delete_with_ops)


def test_timer_fields_that_do_not_fit_are_refused_before_sending() -> None:
    flood = parser.OFPActionOutput(ofproto.OFPP_FLOOD)
    with pytest.raises(ValueError, match="period_us"):
        encode(1, OFPTimerMod(DP, TimerCommand.ADD, 1, 2, 1 << 32, actions=[flood]))
    with pytest.raises(ValueError, match="no actions"):
        encode(1, OFPTimerMod(DP, TimerCommand.DELETE, 1, actions=[flood]))


def test_insp_error_names_only_beba_experimenter_errors() -> None:
    other = parser.OFPErrorMsg(DP, data=b"")
    other.type, other.exp_type, other.experimenter = ofproto.OFPET_EXPERIMENTER, 11, 0x2320
    assert insp_error(other) is None
    flow_failed = parser.OFPErrorMsg(DP, type_=ofproto.OFPET_FLOW_MOD_FAILED, code=1, data=b"")
    assert insp_error(flow_failed) is None
