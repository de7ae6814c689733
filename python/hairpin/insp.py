"""InSP (In-Switch Packet generation, seed 001) for os-ken controllers.

The wire format is Hairpin's `crates/ofp/INSP.md`: the BEBA experimenter (0xBEBABEBA)
PKTTMP_MOD (exp_type 1, byte for byte BEBA's), our exp_type 2 carrying copy and checksum
operations, the InSP instruction, our timer trigger TIMER_MOD (exp_type 0x100), and the InSP
experimenter errors. Importing this module
registers the messages with os-ken's experimenter parser and the instruction with its
instruction parser, so an app sends and receives them like any OpenFlow 1.3 message::

    dp.send_msg(OFPPktTmpMod(dp, pkttmp_id=7, template=reply, copy_ops=[CopyOp(6, 0, 6)]))
    insp = OFPInstructionInsp(7, [parser.OFPActionOutput(ofproto.OFPP_TABLE)])
    dp.send_msg(parser.OFPFlowMod(dp, match=..., instructions=[insp]))

A switch's refusal arrives as an ``OFPErrorMsg``; :func:`insp_error` names its code.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofproto
from os_ken.ofproto import ofproto_v1_3_parser as parser

BEBA_EXPERIMENTER = 0xBEBABEBA
PKTTMP_MOD_EXP_TYPE = 1
PKTTMP_MOD_EXT_EXP_TYPE = 2
INSP_INSTR_TYPE = 0
# Our timer trigger, numbered past BEBA's message types and error codes (INSP.md).
TIMER_MOD_EXP_TYPE = 0x100
TIMER_ALL = 0xFFFF_FFFF

_EXPERIMENTER_HEADER = struct.Struct("!II")  # experimenter, exp_type (after ofp_header)
_BASE_FIXED = struct.Struct("!BxI4x")  # command, pad, pkttmp_id, pad[4]
_EXT_FIXED = struct.Struct("!BxIH")  # command, pad, pkttmp_id, template_len
_OP_HEADER = struct.Struct("!HH")
_COPY_BODY = struct.Struct("!BxHHH4x")  # source, pad, src_offset, dst_offset, len, pad[4]
_CHECKSUM_BODY = struct.Struct("!BxHHHH2x")  # kind, pad, start, len, dst_offset, ip_offset
_INSTRUCTION_HEADER = struct.Struct("!HHII4xI4x")  # type, len, experimenter, instr_type, id
_TIMER_FIXED = struct.Struct("!BxI2xIII4x")  # command, timer_id, pkttmp_id, period_us, in_port
_OP_COPY = 1
_OP_CHECKSUM = 2
_OP_LEN = 16
_COPY_SOURCE_PACKET = 0
# The template of exp_type 2 starts at this message offset; operations start 8-aligned after.
_EXT_TEMPLATE_OFFSET = 24


class PktTmpCommand(IntEnum):
    ADD = 0
    DELETE = 1


class TimerCommand(IntEnum):
    ADD = 0  # installs a timer, or replaces the one installed under its id
    DELETE = 1


class ChecksumKind(IntEnum):
    """Which Internet checksum a :class:`ChecksumOp` computes (INSP.md)."""

    IPV4_HEADER = 0
    ICMPV4 = 1
    ICMPV6 = 2
    TCPV4 = 3
    UDPV4 = 4
    TCPV6 = 5
    UDPV6 = 6


class InspErrorCode(IntEnum):
    """BEBA's error codes, sent as OFPET_EXPERIMENTER errors of experimenter 0xBEBABEBA."""

    BAD_EXP_LEN = 7
    BAD_EXP_INSTRUCTION = 10
    PKTTMP_MOD_FAILED = 11
    PKTTMP_MOD_BAD_COMMAND = 12
    TIMER_MOD_FAILED = 0x100
    TIMER_RATE_EXCEEDED = 0x101
    TIMER_MOD_BAD_COMMAND = 0x102


class InspDecodeError(ValueError):
    """A malformed PKTTMP_MOD or TIMER_MOD, with the error code a switch answers it with."""

    def __init__(self, code: InspErrorCode, reason: str) -> None:
        super().__init__(f"{code.name}: {reason}")
        self.code = code


@dataclass(frozen=True)
class CopyOp:
    """Copies ``length`` bytes of the triggering packet at ``src_offset`` to ``dst_offset``."""

    src_offset: int
    dst_offset: int
    length: int


@dataclass(frozen=True)
class ChecksumOp:
    """Stores at ``dst_offset`` the checksum over ``length`` bytes from ``start`` (0: to the
    end of the packet); pseudo-header kinds take it from the IP header at ``ip_offset``."""

    kind: ChecksumKind
    start: int
    dst_offset: int
    length: int = 0
    ip_offset: int = 0


def _u16(value: int, what: str) -> int:
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"{what} {value} does not fit 16 bits")
    return value


class OFPPktTmpMod(parser.OFPExperimenter):  # type: ignore[misc]
    """PKTTMP_MOD: adds a packet template (with copy and checksum operations) or deletes one.

    Sent as BEBA's exp_type 1 when it has no operations, else as exp_type 2.
    """

    def __init__(
        self,
        datapath: Any,
        command: PktTmpCommand = PktTmpCommand.ADD,
        pkttmp_id: int = 0,
        template: bytes = b"",
        copy_ops: Iterable[CopyOp] = (),
        checksum_ops: Iterable[ChecksumOp] = (),
    ) -> None:
        self.command = PktTmpCommand(command)
        self.pkttmp_id = pkttmp_id
        self.template = bytes(template)
        self.copy_ops = list(copy_ops)
        self.checksum_ops = list(checksum_ops)
        has_ops = bool(self.copy_ops or self.checksum_ops)
        exp_type = PKTTMP_MOD_EXT_EXP_TYPE if has_ops else PKTTMP_MOD_EXP_TYPE
        super().__init__(datapath, BEBA_EXPERIMENTER, exp_type, b"")

    def _serialize_body(self) -> None:
        self.data = self.encode_body()
        super()._serialize_body()

    def encode_body(self) -> bytes:
        """The bytes after ``experimenter | exp_type`` (message offset 16 on)."""
        if self.exp_type == PKTTMP_MOD_EXP_TYPE:
            return _BASE_FIXED.pack(self.command, self.pkttmp_id) + self.template
        if self.command != PktTmpCommand.ADD:
            raise ValueError("copy and checksum operations go with ADD only")
        length = _u16(len(self.template), "template length")
        body = _EXT_FIXED.pack(self.command, self.pkttmp_id, length) + self.template
        body += b"\0" * (-(_EXT_TEMPLATE_OFFSET + length) % 8)
        for c in self.copy_ops:
            fields = (c.src_offset, c.dst_offset, c.length)
            for name, value in zip(("src_offset", "dst_offset", "length"), fields, strict=True):
                _u16(value, name)
            body += _OP_HEADER.pack(_OP_COPY, _OP_LEN) + _COPY_BODY.pack(0, *fields)
        for s in self.checksum_ops:
            fields = (s.start, s.length, s.dst_offset, s.ip_offset)
            for name, value in zip(
                ("start", "length", "dst_offset", "ip_offset"), fields, strict=True
            ):
                _u16(value, name)
            body += _OP_HEADER.pack(_OP_CHECKSUM, _OP_LEN) + _CHECKSUM_BODY.pack(s.kind, *fields)
        return body

    @classmethod
    def parser_subtype(cls, msg: parser.OFPExperimenter) -> OFPPktTmpMod:
        """Called by os-ken's experimenter parser for (0xBEBABEBA, 1 or 2)."""
        return cls.decode_body(msg.datapath, msg.exp_type, bytes(msg.data))

    @classmethod
    def decode_body(cls, datapath: Any, exp_type: int, body: bytes) -> OFPPktTmpMod:
        """Parses the bytes after ``experimenter | exp_type`` as the switch does; raises
        :class:`InspDecodeError` with the code the switch would answer with."""
        fixed = _BASE_FIXED if exp_type == PKTTMP_MOD_EXP_TYPE else _EXT_FIXED
        if len(body) < 1:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "no command")
        if body[0] not in (PktTmpCommand.ADD, PktTmpCommand.DELETE):
            raise InspDecodeError(InspErrorCode.PKTTMP_MOD_BAD_COMMAND, f"command {body[0]}")
        if len(body) < fixed.size:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "shorter than the fixed part")
        if exp_type == PKTTMP_MOD_EXP_TYPE:
            command, pkttmp_id = _BASE_FIXED.unpack_from(body)
            template = body[fixed.size :]
            if command == PktTmpCommand.DELETE and template:
                raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "DELETE with template bytes")
            return cls(datapath, command, pkttmp_id, template)
        command, pkttmp_id, length = _EXT_FIXED.unpack_from(body)
        ops_at = fixed.size + length + (-(_EXT_TEMPLATE_OFFSET + length) % 8)
        if len(body) < ops_at:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "template or padding cut short")
        copies, sums = _decode_ops(body[ops_at:])
        if command != PktTmpCommand.ADD or not (copies or sums):
            raise InspDecodeError(InspErrorCode.PKTTMP_MOD_FAILED, "exp_type 2 is ADD with ops")
        template = body[fixed.size : fixed.size + length]
        return cls(datapath, command, pkttmp_id, template, copies, sums)


def _decode_ops(raw: bytes) -> tuple[list[CopyOp], list[ChecksumOp]]:
    copies: list[CopyOp] = []
    sums: list[ChecksumOp] = []
    offset = 0
    while offset < len(raw):
        if len(raw) - offset < _OP_HEADER.size:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "operation header cut short")
        op_type, op_len = _OP_HEADER.unpack_from(raw, offset)
        if op_len != _OP_LEN or len(raw) - offset < _OP_LEN:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, f"operation of {op_len} bytes")
        at = offset + _OP_HEADER.size
        if op_type == _OP_COPY and not sums:
            source, src, dst, length = _COPY_BODY.unpack_from(raw, at)
            if source != _COPY_SOURCE_PACKET:
                raise InspDecodeError(InspErrorCode.PKTTMP_MOD_FAILED, f"copy source {source}")
            copies.append(CopyOp(src, dst, length))
        elif op_type == _OP_CHECKSUM:
            kind, start, length, dst, ip = _CHECKSUM_BODY.unpack_from(raw, at)
            if kind not in ChecksumKind._value2member_map_:
                raise InspDecodeError(InspErrorCode.PKTTMP_MOD_FAILED, f"checksum kind {kind}")
            sums.append(ChecksumOp(ChecksumKind(kind), start, dst, length, ip))
        else:
            raise InspDecodeError(InspErrorCode.PKTTMP_MOD_FAILED, f"operation type {op_type}")
        offset += _OP_LEN
    return copies, sums


class OFPTimerMod(parser.OFPExperimenter):  # type: ignore[misc]
    """TIMER_MOD, our timer trigger: every ``period_us`` the switch generates a packet from
    template ``pkttmp_id`` (one without copy operations) and applies ``actions`` to it as to a
    packet-out arriving on ``in_port``. DELETE reads only ``timer_id`` (TIMER_ALL: every
    timer); a period under the switch's bound is refused with TIMER_RATE_EXCEEDED."""

    def __init__(
        self,
        datapath: Any,
        command: TimerCommand = TimerCommand.ADD,
        timer_id: int = 0,
        pkttmp_id: int = 0,
        period_us: int = 0,
        in_port: int = ofproto.OFPP_CONTROLLER,
        actions: Sequence[Any] = (),
    ) -> None:
        self.command = TimerCommand(command)
        self.timer_id = timer_id
        self.pkttmp_id = pkttmp_id
        self.period_us = period_us
        self.in_port = in_port
        self.actions = list(actions)
        super().__init__(datapath, BEBA_EXPERIMENTER, TIMER_MOD_EXP_TYPE, b"")

    def _serialize_body(self) -> None:
        self.data = self.encode_body()
        super()._serialize_body()

    def encode_body(self) -> bytes:
        """The bytes after ``experimenter | exp_type`` (message offset 16 on)."""
        if self.command == TimerCommand.DELETE and self.actions:
            raise ValueError("a DELETE carries no actions")
        for name in ("timer_id", "pkttmp_id", "period_us", "in_port"):
            value = getattr(self, name)
            if not 0 <= value <= 0xFFFF_FFFF:
                raise ValueError(f"{name} {value} does not fit 32 bits")
        fixed = _TIMER_FIXED.pack(
            self.command, self.timer_id, self.pkttmp_id, self.period_us, self.in_port
        )
        actions = bytearray()
        for action in self.actions:
            at = len(actions)
            actions += bytes(action.len)
            action.serialize(actions, at)
        return fixed + bytes(actions)

    @classmethod
    def parser_subtype(cls, msg: parser.OFPExperimenter) -> OFPTimerMod:
        """Called by os-ken's experimenter parser for (0xBEBABEBA, 0x100)."""
        return cls.decode_body(msg.datapath, bytes(msg.data))

    @classmethod
    def decode_body(cls, datapath: Any, body: bytes) -> OFPTimerMod:
        """Parses the bytes after ``experimenter | exp_type`` as the switch does; raises
        :class:`InspDecodeError` with the code the switch would answer with (a malformed
        action raises os-ken's own error: the switch answers it with OFPET_BAD_ACTION)."""
        if len(body) < _TIMER_FIXED.size:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "shorter than the fixed part")
        command, timer_id, pkttmp_id, period_us, in_port = _TIMER_FIXED.unpack_from(body)
        if command not in TimerCommand._value2member_map_:
            raise InspDecodeError(InspErrorCode.TIMER_MOD_BAD_COMMAND, f"command {command}")
        actions = []
        at = _TIMER_FIXED.size
        while at < len(body):
            action = parser.OFPAction.parser(body, at)
            actions.append(action)
            at += action.len
        if command == TimerCommand.DELETE and actions:
            raise InspDecodeError(InspErrorCode.BAD_EXP_LEN, "DELETE with actions")
        return cls(datapath, command, timer_id, pkttmp_id, period_us, in_port, actions)


for _exp_type in (PKTTMP_MOD_EXP_TYPE, PKTTMP_MOD_EXT_EXP_TYPE):
    parser.OFPExperimenter._subtypes[(BEBA_EXPERIMENTER, _exp_type)] = OFPPktTmpMod
parser.OFPExperimenter._subtypes[(BEBA_EXPERIMENTER, TIMER_MOD_EXP_TYPE)] = OFPTimerMod


@parser.OFPInstruction.register_instruction_type([ofproto.OFPIT_EXPERIMENTER])
class OFPInstructionInsp(parser.OFPInstruction):  # type: ignore[misc]
    """The InSP instruction: on match, generate a packet from template ``pkttmp_id`` and apply
    ``actions`` (applied at once, there is no action set) to it."""

    def __init__(
        self, pkttmp_id: int, actions: Sequence[Any] = (), len_: int | None = None
    ) -> None:
        super().__init__()
        self.type = ofproto.OFPIT_EXPERIMENTER
        self.experimenter = BEBA_EXPERIMENTER
        self.pkttmp_id = pkttmp_id
        self.actions = list(actions)
        self.len = len_ if len_ is not None else _INSTRUCTION_HEADER.size + _actions_len(actions)

    @classmethod
    def parser(cls, buf: bytes, offset: int) -> parser.OFPInstruction:
        _, len_, experimenter = struct.unpack_from("!HHI", buf, offset)
        if experimenter != BEBA_EXPERIMENTER:
            return OFPInstructionExperimenterRaw(
                experimenter, bytes(buf[offset + 8 : offset + len_])
            )
        _, _, _, instr_type, pkttmp_id = _INSTRUCTION_HEADER.unpack_from(buf, offset)
        if instr_type != INSP_INSTR_TYPE:
            raise InspDecodeError(InspErrorCode.BAD_EXP_INSTRUCTION, f"instr_type {instr_type}")
        actions = []
        at = offset + _INSTRUCTION_HEADER.size
        while at < offset + len_:
            action = parser.OFPAction.parser(buf, at)
            actions.append(action)
            at += action.len
        return cls(pkttmp_id, actions, len_)

    def serialize(self, buf: bytearray, offset: int) -> None:
        at = offset + _INSTRUCTION_HEADER.size
        parser.msg_pack_into(f"{at - offset}x", buf, offset)
        for action in self.actions:
            action.serialize(buf, at)
            at += action.len
        self.len = at - offset
        parser.msg_pack_into(
            _INSTRUCTION_HEADER.format,
            buf,
            offset,
            self.type,
            self.len,
            BEBA_EXPERIMENTER,
            INSP_INSTR_TYPE,
            self.pkttmp_id,
        )


class OFPInstructionExperimenterRaw(parser.OFPInstruction):  # type: ignore[misc]
    """Another experimenter's instruction, kept as bytes so a flow-stats reply still parses."""

    def __init__(self, experimenter: int, data: bytes) -> None:
        super().__init__()
        self.type = ofproto.OFPIT_EXPERIMENTER
        self.experimenter = experimenter
        self.data = data
        self.len = 8 + len(data)

    def serialize(self, buf: bytearray, offset: int) -> None:
        parser.msg_pack_into("!HHI", buf, offset, self.type, self.len, self.experimenter)
        buf[offset + 8 : offset + self.len] = self.data


def _actions_len(actions: Iterable[Any]) -> int:
    total = 0
    for action in actions:
        length: int = action.len
        total += length
    return total


def insp_error(msg: Any) -> InspErrorCode | None:
    """The InSP error code of an ``OFPErrorMsg``, or None when it is not an InSP error."""
    if getattr(msg, "type", None) != ofproto.OFPET_EXPERIMENTER:
        return None
    if getattr(msg, "experimenter", None) != BEBA_EXPERIMENTER:
        return None
    exp_type = msg.exp_type
    if exp_type not in InspErrorCode._value2member_map_:
        return None
    return InspErrorCode(exp_type)
