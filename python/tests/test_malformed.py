"""Malformed and invalid OpenFlow messages get the OFPT_ERROR that OpenFlow 1.3.5 names
(type, code, the offending xid, and at least 64 bytes of the request as data), and the
connection, every flow, group and meter installed before stay exactly as they were.

Messages are packed by hand so each case carries exactly the defect it names.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from hairpin.testing.daemon import (
    HEADER,
    OFP_VERSION,
    OFPGC_ADD,
    OFPGC_MODIFY,
    OFPMC_ADD,
    OFPMC_MODIFY,
    OFPT_ERROR,
    OFPT_HELLO,
    OFPT_MULTIPART_REPLY,
    OFPT_MULTIPART_REQUEST,
    HairpinDaemon,
    OfClient,
    action_group,
    action_output,
    band_drop,
    bucket,
    connected_client,
    error_of,
    flow_mod_body,
    group_mod_body,
    instruction_apply,
    instruction_goto,
    instruction_meter,
    match,
    message,
    meter_mod_body,
    oxm,
    running_hairpind,
)

ETH_IP = oxm(ofp.OFPXMT_OFB_ETH_TYPE, struct.pack("!H", 0x0800))
ETH_IPV6 = oxm(ofp.OFPXMT_OFB_ETH_TYPE, struct.pack("!H", 0x86DD))


def in_port(port: int) -> bytes:
    return oxm(ofp.OFPXMT_OFB_IN_PORT, struct.pack("!I", port))


def flow_add(*instructions: bytes, match_bytes: bytes = b"", table_id: int = 0) -> bytes:
    return flow_mod_body(
        table_id=table_id,
        priority=77,
        match_bytes=match_bytes or match(in_port(9)),
        instructions=instructions,
    )


def apply_output(port: int = 1) -> bytes:
    return instruction_apply(action_output(port))


@dataclass(frozen=True)
class Case:
    """One invalid message: its type and body (or whole bytes), and the error it must get."""

    name: str
    msg_type: int
    body: bytes
    error: tuple[int, int]
    version: int = OFP_VERSION

    def encode(self, xid: int) -> bytes:
        return message(self.msg_type, self.body, xid, self.version)


BAD_REQUEST = ofp.OFPET_BAD_REQUEST
BAD_MATCH = ofp.OFPET_BAD_MATCH
BAD_INSTRUCTION = ofp.OFPET_BAD_INSTRUCTION
BAD_ACTION = ofp.OFPET_BAD_ACTION
FLOW_MOD_FAILED = ofp.OFPET_FLOW_MOD_FAILED
GROUP_MOD_FAILED = ofp.OFPET_GROUP_MOD_FAILED
METER_MOD_FAILED = ofp.OFPET_METER_MOD_FAILED

CASES = [
    # Header and message level.
    Case("bad version", ofp.OFPT_ECHO_REQUEST, b"x", (BAD_REQUEST, ofp.OFPBRC_BAD_VERSION), 3),
    Case("unknown message type", 99, b"", (BAD_REQUEST, ofp.OFPBRC_BAD_TYPE)),
    Case(
        "unknown multipart type",
        ofp.OFPT_MULTIPART_REQUEST,
        struct.pack("!HH4x", 0x55, 0),
        (BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART),
    ),
    Case(
        "unknown experimenter",
        ofp.OFPT_EXPERIMENTER,
        struct.pack("!II", 0x00ABCDEF, 1),
        (BAD_REQUEST, ofp.OFPBRC_BAD_EXPERIMENTER),
    ),
    Case(
        "packet-out with unknown buffer",
        ofp.OFPT_PACKET_OUT,
        struct.pack("!IIH6x", 0x1234, ofp.OFPP_CONTROLLER, 16) + action_output(1),
        (BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN),
    ),
    # Truncated bodies.
    Case(
        "truncated flow-mod",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output())[:20],
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "truncated group-mod",
        ofp.OFPT_GROUP_MOD,
        struct.pack("!HBx", OFPGC_ADD, ofp.OFPGT_ALL),
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "truncated meter-mod",
        ofp.OFPT_METER_MOD,
        struct.pack("!HH", OFPMC_ADD, ofp.OFPMF_KBPS),
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "truncated port-mod",
        ofp.OFPT_PORT_MOD,
        struct.pack("!I4x", 1),
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "truncated flow stats request",
        ofp.OFPT_MULTIPART_REQUEST,
        struct.pack("!HH4x", ofp.OFPMP_FLOW, 0) + struct.pack("!B3xI", ofp.OFPTT_ALL, 0),
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "truncated role request",
        ofp.OFPT_ROLE_REQUEST,
        struct.pack("!I", ofp.OFPCR_ROLE_MASTER),
        (BAD_REQUEST, ofp.OFPBRC_BAD_LEN),
    ),
    Case(
        "match longer than the message",
        ofp.OFPT_FLOW_MOD,
        flow_add(match_bytes=struct.pack("!HH", ofp.OFPMT_OXM, 200) + in_port(1)),
        (BAD_MATCH, ofp.OFPBMC_BAD_LEN),
    ),
    # Bad OXM.
    Case(
        "match type other than OXM",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=struct.pack("!HH4x", 0, 8)),
        (BAD_MATCH, ofp.OFPBMC_BAD_TYPE),
    ),
    Case(
        "unknown OXM field",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(oxm(60, b"\0\0"))),
        (BAD_MATCH, ofp.OFPBMC_BAD_FIELD),
    ),
    Case(
        "OXM length wrong for its field",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(oxm(ofp.OFPXMT_OFB_IN_PORT, b"\0\1"))),
        (BAD_MATCH, ofp.OFPBMC_BAD_LEN),
    ),
    Case(
        "duplicate OXM field",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(in_port(1), in_port(2))),
        (BAD_MATCH, ofp.OFPBMC_DUP_FIELD),
    ),
    Case(
        "mask on a field that is not maskable",
        ofp.OFPT_FLOW_MOD,
        flow_add(
            apply_output(),
            match_bytes=match(
                oxm(ofp.OFPXMT_OFB_IN_PORT, struct.pack("!I", 1), struct.pack("!I", 0xFF))
            ),
        ),
        (BAD_MATCH, ofp.OFPBMC_BAD_MASK),
    ),
    Case(
        "value bits outside the mask",
        ofp.OFPT_FLOW_MOD,
        flow_add(
            apply_output(),
            match_bytes=match(
                ETH_IP,
                oxm(ofp.OFPXMT_OFB_IPV4_DST, bytes([10, 0, 0, 1]), bytes([255, 255, 255, 0])),
            ),
        ),
        (BAD_MATCH, ofp.OFPBMC_BAD_WILDCARDS),
    ),
    Case(
        "OXM value out of range",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(ETH_IP, oxm(ofp.OFPXMT_OFB_IP_DSCP, b"\x40"))),
        (BAD_MATCH, ofp.OFPBMC_BAD_VALUE),
    ),
    Case(
        "IPv4 field without eth_type",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(oxm(ofp.OFPXMT_OFB_IPV4_SRC, b"\x0a\0\0\1"))),
        (BAD_MATCH, ofp.OFPBMC_BAD_PREREQ),
    ),
    Case(
        "TCP port without ip_proto",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), match_bytes=match(ETH_IP, oxm(ofp.OFPXMT_OFB_TCP_DST, b"\0\x50"))),
        (BAD_MATCH, ofp.OFPBMC_BAD_PREREQ),
    ),
    # Bad instructions.
    Case(
        "unknown instruction type",
        ofp.OFPT_FLOW_MOD,
        flow_add(struct.pack("!HH4x", 0x0042, 8)),
        (BAD_INSTRUCTION, ofp.OFPBIC_UNKNOWN_INST),
    ),
    Case(
        "instruction length wrong",
        ofp.OFPT_FLOW_MOD,
        flow_add(struct.pack("!HHB3x", ofp.OFPIT_GOTO_TABLE, 16, 2) + b"\0" * 8),
        (BAD_INSTRUCTION, ofp.OFPBIC_BAD_LEN),
    ),
    Case(
        "goto a lower table",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_goto(1), table_id=2),
        (BAD_INSTRUCTION, ofp.OFPBIC_BAD_TABLE_ID),
    ),
    Case(
        "goto past the last table",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_goto(0xFE)),
        (BAD_INSTRUCTION, ofp.OFPBIC_BAD_TABLE_ID),
    ),
    # Bad actions.
    Case(
        "unknown action type",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_apply(struct.pack("!HH4x", 0x0042, 8))),
        (BAD_ACTION, ofp.OFPBAC_BAD_TYPE),
    ),
    Case(
        "action length wrong",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_apply(struct.pack("!HHI", ofp.OFPAT_OUTPUT, 8, 1))),
        (BAD_ACTION, ofp.OFPBAC_BAD_LEN),
    ),
    Case(
        "output to port 0",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(0)),
        (BAD_ACTION, ofp.OFPBAC_BAD_OUT_PORT),
    ),
    Case(
        "output to OFPP_ANY",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(ofp.OFPP_ANY)),
        (BAD_ACTION, ofp.OFPBAC_BAD_OUT_PORT),
    ),
    Case(
        "group action to an unknown group",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_apply(action_group(99))),
        (BAD_ACTION, ofp.OFPBAC_BAD_OUT_GROUP),
    ),
    Case(
        "set-field without its prerequisite",
        ofp.OFPT_FLOW_MOD,
        flow_add(
            instruction_apply(
                struct.pack("!HH", ofp.OFPAT_SET_FIELD, 16)
                + oxm(ofp.OFPXMT_OFB_IPV4_DST, bytes([10, 0, 0, 9]))
                + b"\0" * 4
            )
        ),
        (BAD_ACTION, ofp.OFPBAC_MATCH_INCONSISTENT),
    ),
    # Unknown table, group, meter, port.
    Case(
        "flow-mod add to table 0xfe",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), table_id=0xFE),
        (FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_TABLE_ID),
    ),
    Case(
        "flow-mod add to OFPTT_ALL",
        ofp.OFPT_FLOW_MOD,
        flow_add(apply_output(), table_id=ofp.OFPTT_ALL),
        (FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_TABLE_ID),
    ),
    Case(
        "flow-mod unknown command",
        ofp.OFPT_FLOW_MOD,
        flow_mod_body(command=9, match_bytes=match(in_port(9))),
        (FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_COMMAND),
    ),
    Case(
        "meter instruction to an unknown meter",
        ofp.OFPT_FLOW_MOD,
        flow_add(instruction_meter(99), apply_output()),
        (METER_MOD_FAILED, ofp.OFPMMFC_UNKNOWN_METER),
    ),
    Case(
        "group-mod modify unknown group",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_MODIFY, ofp.OFPGT_ALL, 99, bucket(action_output(1))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_UNKNOWN_GROUP),
    ),
    Case(
        "group-mod add existing group",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_ADD, ofp.OFPGT_ALL, 1, bucket(action_output(4))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_GROUP_EXISTS),
    ),
    Case(
        "group-mod add reserved group id",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_ADD, ofp.OFPGT_ALL, ofp.OFPG_ALL, bucket(action_output(1))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_INVALID_GROUP),
    ),
    Case(
        "group-mod unknown group type",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_ADD, 9, 50, bucket(action_output(1))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_BAD_TYPE),
    ),
    Case(
        "group-mod unknown command",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(9, ofp.OFPGT_ALL, 50, bucket(action_output(1))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_BAD_COMMAND),
    ),
    Case(
        "group loop",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_MODIFY, ofp.OFPGT_INDIRECT, 10, bucket(action_group(11))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_LOOP),
    ),
    Case(
        "group pointing at itself",
        ofp.OFPT_GROUP_MOD,
        group_mod_body(OFPGC_MODIFY, ofp.OFPGT_INDIRECT, 10, bucket(action_group(10))),
        (GROUP_MOD_FAILED, ofp.OFPGMFC_LOOP),
    ),
    Case(
        "meter-mod modify unknown meter",
        ofp.OFPT_METER_MOD,
        meter_mod_body(OFPMC_MODIFY, ofp.OFPMF_KBPS, 99, band_drop(100)),
        (METER_MOD_FAILED, ofp.OFPMMFC_UNKNOWN_METER),
    ),
    Case(
        "meter-mod add existing meter",
        ofp.OFPT_METER_MOD,
        meter_mod_body(OFPMC_ADD, ofp.OFPMF_KBPS, 1, band_drop(100)),
        (METER_MOD_FAILED, ofp.OFPMMFC_METER_EXISTS),
    ),
    Case(
        "meter-mod add meter 0",
        ofp.OFPT_METER_MOD,
        meter_mod_body(OFPMC_ADD, ofp.OFPMF_KBPS, 0, band_drop(100)),
        (METER_MOD_FAILED, ofp.OFPMMFC_INVALID_METER),
    ),
    Case(
        "meter-mod unknown band type",
        ofp.OFPT_METER_MOD,
        meter_mod_body(OFPMC_ADD, ofp.OFPMF_KBPS, 50, struct.pack("!HHII4x", 7, 16, 100, 0)),
        (METER_MOD_FAILED, ofp.OFPMMFC_BAD_BAND),
    ),
    Case(
        "meter-mod unknown command",
        ofp.OFPT_METER_MOD,
        meter_mod_body(9, ofp.OFPMF_KBPS, 50, band_drop(100)),
        (METER_MOD_FAILED, ofp.OFPMMFC_BAD_COMMAND),
    ),
    Case(
        "port-mod unknown port",
        ofp.OFPT_PORT_MOD,
        struct.pack("!I4x6s2xIII4x", 99, b"\0" * 6, 0, ofp.OFPPC_PORT_DOWN, 0),
        (ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_PORT),
    ),
    Case(
        "table-mod unknown table",
        ofp.OFPT_TABLE_MOD,
        struct.pack("!B3xI", 0xFE, 0),
        (ofp.OFPET_TABLE_MOD_FAILED, ofp.OFPTMFC_BAD_TABLE),
    ),
]


@dataclass
class Installed:
    """A connection that installed flows, groups and meters, and what the switch then held."""

    client: OfClient
    snapshot: tuple[list[bytes], list[bytes], list[bytes]]


def snapshot(client: OfClient) -> tuple[list[bytes], list[bytes], list[bytes]]:
    return client.flow_entries(), client.group_descs(), client.meter_configs()


def install_state(client: OfClient) -> None:
    mods: list[tuple[int, bytes]] = [
        (ofp.OFPT_METER_MOD, meter_mod_body(OFPMC_ADD, ofp.OFPMF_KBPS, 1, band_drop(1000, 0))),
        (
            ofp.OFPT_METER_MOD,
            meter_mod_body(OFPMC_ADD, ofp.OFPMF_PKTPS | ofp.OFPMF_BURST, 2, band_drop(500, 50)),
        ),
        (
            ofp.OFPT_GROUP_MOD,
            group_mod_body(
                OFPGC_ADD, ofp.OFPGT_ALL, 1, bucket(action_output(1)), bucket(action_output(2))
            ),
        ),
        (
            ofp.OFPT_GROUP_MOD,
            group_mod_body(
                OFPGC_ADD,
                ofp.OFPGT_FF,
                2,
                bucket(action_output(3), watch_port=3),
                bucket(action_output(4), watch_port=4),
            ),
        ),
        (
            ofp.OFPT_GROUP_MOD,
            group_mod_body(OFPGC_ADD, ofp.OFPGT_INDIRECT, 10, bucket(action_output(1))),
        ),
        (
            ofp.OFPT_GROUP_MOD,
            group_mod_body(OFPGC_ADD, ofp.OFPGT_INDIRECT, 11, bucket(action_group(10))),
        ),
        (
            ofp.OFPT_FLOW_MOD,
            flow_mod_body(
                priority=10, match_bytes=match(in_port(1)), instructions=[apply_output(2)]
            ),
        ),
        (
            ofp.OFPT_FLOW_MOD,
            flow_mod_body(
                priority=20,
                cookie=0xC0FFEE,
                match_bytes=match(ETH_IP, oxm(ofp.OFPXMT_OFB_IPV4_DST, bytes([10, 0, 0, 1]))),
                instructions=[instruction_apply(action_group(1))],
            ),
        ),
        (
            ofp.OFPT_FLOW_MOD,
            flow_mod_body(
                priority=30,
                idle_timeout=3000,
                match_bytes=match(ETH_IPV6),
                instructions=[instruction_meter(1), instruction_goto(1)],
            ),
        ),
        (
            ofp.OFPT_FLOW_MOD,
            flow_mod_body(
                table_id=1,
                priority=5,
                match_bytes=match(in_port(2)),
                instructions=[instruction_apply(action_group(11))],
            ),
        ),
    ]
    for msg_type, body in mods:
        xid = client.send(msg_type, body)
        before = client.barrier()
        assert not [m for m in before if m.xid == xid], f"setup message refused: {before}"


@pytest.fixture(scope="module")
def switch() -> Iterator[HairpinDaemon]:
    with running_hairpind() as daemon:
        yield daemon
        daemon.assert_alive()


@pytest.fixture(scope="module")
def installed(switch: HairpinDaemon) -> Iterator[Installed]:
    with connected_client(switch.port) as client:
        install_state(client)
        state = snapshot(client)
        assert [len(part) for part in state] == [4, 4, 2]
        yield Installed(client, state)


def assert_error(client: OfClient, raw: bytes, expected: tuple[int, int]) -> None:
    """Sends `raw` then a barrier; checks the single error that answers `raw` before it."""
    (xid,) = struct.unpack_from("!I", raw, 4)
    client.send_raw(raw)
    before = client.barrier()
    err_type, code, data = error_of(before, xid)
    assert (err_type, code) == expected, f"expected (type, code) {expected}, got {(err_type, code)}"
    assert len(data) >= min(64, len(raw)), f"error data has only {len(data)} bytes"
    assert raw.startswith(data[: len(raw)]), "error data is not the request"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_message_gets_its_error(installed: Installed, case: Case) -> None:
    client = installed.client
    raw = case.encode(client.xid())
    assert_error(client, raw, case.error)
    client.echo()
    assert snapshot(client) == installed.snapshot


def test_slave_cannot_modify(installed: Installed) -> None:
    client = installed.client
    role = client.request(ofp.OFPT_ROLE_REQUEST, struct.pack("!I4xQ", ofp.OFPCR_ROLE_SLAVE, 1))[-1]
    assert role.msg_type == ofp.OFPT_ROLE_REPLY, role
    try:
        modifications = [
            (ofp.OFPT_FLOW_MOD, flow_add(apply_output())),
            (
                ofp.OFPT_GROUP_MOD,
                group_mod_body(OFPGC_ADD, ofp.OFPGT_ALL, 60, bucket(action_output(1))),
            ),
            (ofp.OFPT_METER_MOD, meter_mod_body(OFPMC_ADD, ofp.OFPMF_KBPS, 60, band_drop(9))),
        ]
        for msg_type, body in modifications:
            raw = message(msg_type, body, client.xid())
            assert_error(client, raw, (BAD_REQUEST, ofp.OFPBRC_IS_SLAVE))
    finally:
        client.request(ofp.OFPT_ROLE_REQUEST, struct.pack("!I4xQ", ofp.OFPCR_ROLE_EQUAL, 0))
    client.echo()
    assert snapshot(client) == installed.snapshot


def test_header_length_below_eight_closes_the_connection(switch: HairpinDaemon) -> None:
    with connected_client(switch.port) as client:
        client.send_raw(HEADER.pack(OFP_VERSION, ofp.OFPT_ECHO_REQUEST, 4, 0x77))
        before_close = client.recv_closed(timeout=3)
        errors = [m.error()[:2] for m in before_close if m.msg_type == OFPT_ERROR]
        assert errors in ([], [(BAD_REQUEST, ofp.OFPBRC_BAD_LEN)]), before_close
    with connected_client(switch.port) as other:
        other.echo()


def test_peer_without_openflow13_gets_hello_failed(switch: HairpinDaemon) -> None:
    with OfClient(switch.port) as client:
        client.send_raw(message(OFPT_HELLO, b"", 0x33, version=1))
        received = client.recv_closed(timeout=3)
        errors = [m for m in received if m.msg_type == OFPT_ERROR]
        assert len(errors) == 1, received
        assert errors[0].error()[:2] == (ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE)


def resident_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))


def test_a_peer_that_never_reads_cannot_grow_the_switch(switch: HairpinDaemon) -> None:
    """A 16-byte TABLE_FEATURES request is answered with about 400 KB (254 tables): a peer
    that sends hundreds and reads nothing would have the switch queue them all. The switch
    stops handling its requests at its backlog limit; once the peer reads, every request is
    answered, in order."""
    requests = 500
    with connected_client(switch.port) as client:
        before = resident_kib(switch.process.pid)
        body = struct.pack("!HH4x", ofp.OFPMP_TABLE_FEATURES, 0)
        xids = [client.xid() for _ in range(requests)]
        client.send_raw(b"".join(message(OFPT_MULTIPART_REQUEST, body, x) for x in xids))
        time.sleep(1.0)
        grown = resident_kib(switch.process.pid) - before
        assert grown < 40 * 1024, f"hairpind grew by {grown} KiB for a peer that reads nothing"
        answered = []
        while len(answered) < requests:
            reply = client.recv()
            assert reply.msg_type == OFPT_MULTIPART_REPLY, reply
            (flags,) = struct.unpack_from("!H", reply.body, 2)
            if not flags & ofp.OFPMPF_REPLY_MORE:
                answered.append(reply.xid)
        assert answered == xids
        client.echo()


def test_state_survived_everything(installed: Installed, switch: HairpinDaemon) -> None:
    installed.client.echo()
    assert snapshot(installed.client) == installed.snapshot
    switch.assert_alive()
