"""Several controllers at once: roles with generation ids (OpenFlow 1.3.5 section 6.3.5),
what a slave may not do, SET_ASYNC filtering of asynchronous messages per connection, and
barrier ordering.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from hairpin.testing.daemon import (
    OFPFC_ADD,
    OFPFC_DELETE,
    OFPFF_SEND_FLOW_REM,
    OFPGC_ADD,
    OFPGC_MODIFY,
    HairpinDaemon,
    OfClient,
    OfMessage,
    action_output,
    bucket,
    connected_client,
    error_of,
    flow_mod_body,
    group_mod_body,
    instruction_apply,
    match,
    message,
    oxm,
    running_hairpind,
)

MASTER = ofp.OFPCR_ROLE_MASTER
SLAVE = ofp.OFPCR_ROLE_SLAVE
EQUAL = ofp.OFPCR_ROLE_EQUAL
NOCHANGE = ofp.OFPCR_ROLE_NOCHANGE
ASYNC = struct.Struct("!IIIIII")


@pytest.fixture
def switch() -> Iterator[HairpinDaemon]:
    """A fresh switch per test: roles and generation ids are switch-wide state."""
    with running_hairpind() as daemon:
        yield daemon
        daemon.assert_alive()


def role_request(client: OfClient, role: int, generation_id: int) -> OfMessage:
    """The ROLE_REPLY or OFPT_ERROR answering one role request."""
    return client.request(ofp.OFPT_ROLE_REQUEST, struct.pack("!I4xQ", role, generation_id))[-1]


def assert_role(client: OfClient, role: int, generation_id: int, expected: tuple[int, int]) -> None:
    reply = role_request(client, role, generation_id)
    assert reply.msg_type == ofp.OFPT_ROLE_REPLY, f"role request refused: {reply}"
    got_role, got_generation = struct.unpack("!I4xQ", reply.body)
    assert (got_role, got_generation) == expected


def assert_role_error(client: OfClient, role: int, generation_id: int, code: int) -> None:
    reply = role_request(client, role, generation_id)
    assert reply.msg_type == ofp.OFPT_ERROR, f"expected an error, got {reply}"
    assert reply.error()[:2] == (ofp.OFPET_ROLE_REQUEST_FAILED, code)


def in_port_flow(
    port: int, cookie: int = 0, flags: int = 0, command: int = OFPFC_ADD, table_id: int = 0
) -> bytes:
    return flow_mod_body(
        table_id=table_id,
        command=command,
        priority=100,
        cookie=cookie,
        flags=flags,
        match_bytes=match(oxm(ofp.OFPXMT_OFB_IN_PORT, struct.pack("!I", port))),
        instructions=[instruction_apply(action_output(2))],
    )


def flow_mod_error(client: OfClient, body: bytes) -> tuple[int, int] | None:
    """Sends a flow-mod and a barrier; the (type, code) of its error, or None if accepted."""
    xid, before = client.send_and_barrier(ofp.OFPT_FLOW_MOD, body)
    client.unsolicited += [m for m in before if m.xid != xid]
    if not [m for m in before if m.xid == xid]:
        return None
    return error_of(before, xid)[:2]


def test_roles_and_generation_ids(switch: HairpinDaemon) -> None:
    with connected_client(switch.port) as a, connected_client(switch.port) as b:
        reply = role_request(a, NOCHANGE, 0)
        assert reply.msg_type == ofp.OFPT_ROLE_REPLY, reply
        assert struct.unpack("!I4xQ", reply.body)[0] == EQUAL, "connections start as EQUAL"
        assert_role(a, MASTER, 10, (MASTER, 10))
        assert_role(b, SLAVE, 10, (SLAVE, 10))
        assert_role_error(b, MASTER, 9, ofp.OFPRRFC_STALE)
        assert_role_error(b, SLAVE, 9, ofp.OFPRRFC_STALE)
        assert_role(a, NOCHANGE, 0, (MASTER, 10))

        assert flow_mod_error(b, in_port_flow(1)) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_IS_SLAVE)
        assert flow_mod_error(a, in_port_flow(1)) is None

        # A new master demotes the old one to slave.
        assert_role(b, MASTER, 11, (MASTER, 11))
        assert_role(a, NOCHANGE, 0, (SLAVE, 11))
        assert flow_mod_error(a, in_port_flow(2)) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_IS_SLAVE)
        assert flow_mod_error(b, in_port_flow(2)) is None

        # Generation ids compare modulo 2^64: 2^64 - 1 is older than 11 ...
        assert_role_error(a, MASTER, 2**64 - 1, ofp.OFPRRFC_STALE)
        # ... and 11 + 2^63 - 1 is newer.
        assert_role(a, MASTER, 11 + 2**63 - 1, (MASTER, 11 + 2**63 - 1))
        assert_role(b, NOCHANGE, 0, (SLAVE, 11 + 2**63 - 1))

        # EQUAL needs no generation id and may modify again.
        reply = role_request(b, EQUAL, 0)
        assert reply.msg_type == ofp.OFPT_ROLE_REPLY, reply
        assert struct.unpack("!I4xQ", reply.body)[0] == EQUAL
        assert flow_mod_error(b, in_port_flow(3)) is None

        assert_role_error(a, 7, 0, ofp.OFPRRFC_BAD_ROLE)
        assert a.flow_count() == 3 == b.flow_count()


def test_slave_cannot_send_packet_out_or_modify_groups(switch: HairpinDaemon) -> None:
    with connected_client(switch.port) as a, connected_client(switch.port) as b:
        assert_role(a, MASTER, 1, (MASTER, 1))
        assert_role(b, SLAVE, 1, (SLAVE, 1))
        packet = bytes(64)
        for msg_type, body in [
            (
                ofp.OFPT_PACKET_OUT,
                struct.pack("!IIH6x", ofp.OFP_NO_BUFFER, ofp.OFPP_CONTROLLER, 16)
                + action_output(1)
                + packet,
            ),
            (ofp.OFPT_GROUP_MOD, group_mod_body(OFPGC_ADD, ofp.OFPGT_ALL, 5, bucket())),
            (ofp.OFPT_TABLE_MOD, struct.pack("!B3xI", 0, 0)),
        ]:
            xid, before = b.send_and_barrier(msg_type, body)
            assert error_of(before, xid)[:2] == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_IS_SLAVE)
        assert a.group_descs() == []


def get_async(client: OfClient) -> tuple[int, ...]:
    reply = client.request(ofp.OFPT_GET_ASYNC_REQUEST)[-1]
    assert reply.msg_type == ofp.OFPT_GET_ASYNC_REPLY, reply
    return ASYNC.unpack(reply.body)


def set_async(client: OfClient, masks: tuple[int, ...]) -> None:
    xid, before = client.send_and_barrier(ofp.OFPT_SET_ASYNC, ASYNC.pack(*masks))
    assert not [m for m in before if m.xid == xid], before
    assert get_async(client) == masks


def flow_removed_cookies(messages: list[OfMessage]) -> list[tuple[int, int]]:
    """(cookie, reason) of every FLOW_REMOVED among `messages`."""
    removed = []
    for msg in messages:
        if msg.msg_type == ofp.OFPT_FLOW_REMOVED:
            cookie, _, reason = struct.unpack_from("!QHB", msg.body)
            removed.append((cookie, reason))
    return removed


def wait_flow_removed(client: OfClient, seconds: float) -> list[tuple[int, int]]:
    """FLOW_REMOVEDs that arrive within `seconds` (an echo round trip bounds each wait)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.echo()
        found = flow_removed_cookies(client.unsolicited)
        if found:
            return found
        time.sleep(0.05)
    return []


def test_set_async_filters_flow_removed(switch: HairpinDaemon) -> None:
    with (
        connected_client(switch.port) as master,
        connected_client(switch.port) as slave_opted_in,
        connected_client(switch.port) as slave_default,
        connected_client(switch.port) as equal,
    ):
        assert_role(master, MASTER, 1, (MASTER, 1))
        assert_role(slave_opted_in, SLAVE, 1, (SLAVE, 1))
        assert_role(slave_default, SLAVE, 1, (SLAVE, 1))

        # By default a slave gets no flow-removed and no packet-in (spec 6.3.5).
        _, packet_in, _, port_status, flow_removed_master, flow_removed = get_async(slave_default)
        assert (packet_in, flow_removed) == (0, 0)
        assert port_status == 0b111
        assert flow_removed_master & (1 << ofp.OFPRR_DELETE)

        on_delete = 1 << ofp.OFPRR_DELETE
        defaults = get_async(slave_opted_in)
        set_async(slave_opted_in, (*defaults[:4], on_delete, on_delete))
        set_async(master, (*get_async(master)[:4], 0, 0))

        assert flow_mod_error(master, in_port_flow(5, 0xF1, OFPFF_SEND_FLOW_REM)) is None
        delete = in_port_flow(5, command=OFPFC_DELETE, table_id=ofp.OFPTT_ALL)
        assert flow_mod_error(master, delete) is None
        assert master.flow_count() == 0

        expected = [(0xF1, ofp.OFPRR_DELETE)]
        assert wait_flow_removed(slave_opted_in, 5.0) == expected
        assert wait_flow_removed(equal, 5.0) == expected
        # Both others were sent theirs before these echo replies, if they were sent one.
        master.echo()
        slave_default.echo()
        assert flow_removed_cookies(master.unsolicited) == []
        assert flow_removed_cookies(slave_default.unsolicited) == []


def test_barrier_orders_replies_and_effects(switch: HairpinDaemon) -> None:
    n_flows = 2000
    with connected_client(switch.port) as a, connected_client(switch.port) as b:
        bad_flow = message(ofp.OFPT_FLOW_MOD, in_port_flow(1)[:30], a.xid())
        flows = b"".join(
            message(ofp.OFPT_FLOW_MOD, in_port_flow(port + 1), a.xid()) for port in range(n_flows)
        )
        bad_group = message(
            ofp.OFPT_GROUP_MOD, group_mod_body(OFPGC_MODIFY, ofp.OFPGT_ALL, 1), a.xid()
        )
        barrier_xid = a.xid()
        barrier = message(ofp.OFPT_BARRIER_REQUEST, b"", barrier_xid)
        a.send_raw(bad_flow + flows + bad_group + barrier)

        before: list[OfMessage] = []
        while True:
            msg = a.recv()
            if msg.msg_type == ofp.OFPT_BARRIER_REPLY:
                assert msg.xid == barrier_xid
                break
            before.append(msg)
        xids = [struct.unpack_from("!I", m, 4)[0] for m in (bad_flow, bad_group)]
        assert [(m.msg_type, m.xid) for m in before] == [(ofp.OFPT_ERROR, x) for x in xids]
        assert before[0].error()[:2] == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_LEN)
        assert before[1].error()[:2] == (ofp.OFPET_GROUP_MOD_FAILED, ofp.OFPGMFC_UNKNOWN_GROUP)

        # Everything before the barrier is in effect, as seen from another connection too.
        assert b.flow_count() == n_flows
        assert a.flow_count() == n_flows
