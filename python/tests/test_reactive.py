"""Reactive control through hairpind, as a controller sees it: a packet-out on an idle switch
goes out, a packet-out naming a buffer sends the buffered packet and frees the buffer, and a
burst of packet-ins reaches the controller intact and in order, while the controller answers
each with a flow-mod and a packet-out (docs/bench/reactive.md measures the same paths)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hairpin.testing.daemon import (
    OFP_NO_BUFFER,
    OFPP_CONTROLLER,
    OFPT_ERROR,
    OFPT_FLOW_MOD,
    OFPT_PACKET_IN,
    OFPT_PACKET_OUT,
    OfClient,
    PacketIn,
    action_output,
    flow_mod_body,
    instruction_apply,
    match,
    message,
    oxm,
    packet_out_body,
)
from hairpin.testing.topology import SWITCH_OF_PORT, HairpinStar, hairpin_star

SO_RCVBUFFORCE = 33
# An EtherType for local experiments (IEEE 802): the hosts' kernels ignore these frames.
ETH_TEST = 0x88B5
OFPR_NO_MATCH = 0
OFPET_BAD_REQUEST = 1
OFPBRC_BUFFER_EMPTY = 7
OXM_ETH_SRC = 4
OXM_ETH_TYPE = 5
OXM_IN_PORT = 0


@pytest.fixture(params=[(), ("--busy-poll",)], ids=["sleeping", "busy-poll"])
def star(root: None, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[HairpinStar]:
    """A switch whose datapath thread sleeps when idle, or one that polls and then takes the
    controllers' input from the agent while it serves them."""
    with hairpin_star(tmp_path, hosts=2, controller_port=None, extra_args=request.param) as switch:
        yield switch


def controller(star: HairpinStar) -> OfClient:
    """A controller connected to hairpind's listener inside the switch namespace."""
    sock = star.switch.make_socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", SWITCH_OF_PORT))
    client = OfClient(sock=sock)
    client.handshake()
    return client


def wire(star: HairpinStar, host: int) -> socket.socket:
    """A raw socket on host ``host``'s eth0 (1-based) that sends frames and receives the test's."""
    sock = star.hosts[host - 1].ns.make_socket(
        socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_TEST)
    )
    sock.bind(("eth0", ETH_TEST))
    # Room for a burst of a few hundred frames (root may exceed rmem_max).
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    sock.settimeout(5)
    return sock


def frame(seq: int, length: int = 60) -> bytes:
    """A test frame from a source MAC of its own (02:00:00:00:hi:lo) carrying ``seq``."""
    head = b"\x02\x00\x00\x00\xff\xfe" + bytes([2, 0, 0, 0, seq >> 8, seq & 0xFF])
    head += struct.pack("!HI", ETH_TEST, seq)
    return head + bytes((seq + i) & 0xFF for i in range(length - len(head)))


def receive(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` frames from ``sock`` (failing after its timeout)."""
    return [sock.recv(65536) for _ in range(count)]


def send_flow_mod(client: OfClient, match_bytes: bytes, *actions: bytes, priority: int = 0) -> None:
    body = flow_mod_body(
        priority=priority, match_bytes=match_bytes, instructions=[instruction_apply(*actions)]
    )
    _, before = client.send_and_barrier(OFPT_FLOW_MOD, body)
    assert not [m for m in before if m.msg_type == OFPT_ERROR], before


def packet_ins(client: OfClient, count: int) -> list[PacketIn]:
    """The next ``count`` messages, each of which must be a packet-in."""
    messages = [client.recv() for _ in range(count)]
    assert all(m.msg_type == OFPT_PACKET_IN for m in messages), messages
    return [PacketIn.parse(m) for m in messages]


def test_packet_out_on_an_idle_switch_goes_out(star: HairpinStar) -> None:
    client = controller(star)
    receiver = wire(star, 2)
    # Long enough for every datapath thread to go to sleep in poll(2).
    time.sleep(0.5)
    sent = frame(1)
    body = packet_out_body(OFPP_CONTROLLER, [action_output(2)], sent)
    client.send(OFPT_PACKET_OUT, body)
    assert receive(receiver, 1) == [sent]
    assert not client.barrier(), "no error and no other message"


def test_packet_out_naming_a_buffer_sends_that_packet_and_frees_it(star: HairpinStar) -> None:
    client = controller(star)
    sender, receiver = wire(star, 1), wire(star, 2)
    send_flow_mod(client, match(), action_output(OFPP_CONTROLLER, max_len=64))
    sent = frame(7, length=300)
    sender.send(sent)
    (pin,) = packet_ins(client, 1)
    assert pin.buffer_id != OFP_NO_BUFFER, "a max_len below the frame's length buffers it"
    assert (pin.reason, pin.total_len, pin.data) == (OFPR_NO_MATCH, 300, sent[:64])

    out = packet_out_body(1, [action_output(2)], buffer_id=pin.buffer_id)
    client.send(OFPT_PACKET_OUT, out)
    assert receive(receiver, 1) == [sent], "the whole buffered frame goes out"
    assert not client.barrier()

    # The buffer is spent: naming it again is the spec's error, and nothing goes out.
    xid = client.send(OFPT_PACKET_OUT, out)
    err = client.until_xid(xid)[0]
    assert err.error()[:2] == (OFPET_BAD_REQUEST, OFPBRC_BUFFER_EMPTY)
    receiver.settimeout(0.5)
    with pytest.raises(TimeoutError):
        receiver.recv(65536)


def answer(pin: PacketIn, xid: int) -> bytes:
    """A reactive controller's answer to a packet-in: a flow for the frame's source on port
    1, and the frame itself, both to port 2."""
    flow = match(
        oxm(OXM_IN_PORT, struct.pack("!I", 1)),
        oxm(OXM_ETH_SRC, pin.data[6:12]),
        oxm(OXM_ETH_TYPE, struct.pack("!H", ETH_TEST)),
    )
    fm = flow_mod_body(
        priority=10, match_bytes=flow, instructions=[instruction_apply(action_output(2))]
    )
    out = packet_out_body(1, [action_output(2)], pin.data)
    return message(OFPT_FLOW_MOD, fm, xid) + message(OFPT_PACKET_OUT, out, xid + 1)


def test_a_burst_of_packet_ins_reaches_the_controller_intact(star: HairpinStar) -> None:
    client = controller(star)
    sender, receiver = wire(star, 1), wire(star, 2)
    send_flow_mod(client, match(), action_output(OFPP_CONTROLLER))
    sent = [frame(seq, length=60 + seq % 200) for seq in range(300)]
    # The controller reads nothing until every frame is in: the packet-ins queue up.
    for f in sent:
        sender.send(f)
    pins = packet_ins(client, len(sent))
    assert [p.data for p in pins] == sent, "every packet-in whole and in order"
    assert all(p.buffer_id == OFP_NO_BUFFER and p.reason == OFPR_NO_MATCH for p in pins)
    client.send_raw(b"".join(answer(pin, 2 * seq) for seq, pin in enumerate(pins)))
    assert not client.barrier(), "no error, and no packet-in while the flows went in"
    assert sorted(receive(receiver, len(sent))) == sorted(sent)

    # The flows took effect: the same frames now cross without the controller.
    for f in sent:
        sender.send(f)
    assert sorted(receive(receiver, len(sent))) == sorted(sent)
    assert not client.barrier(), "no packet-in for flows already set up"
    assert client.flow_count() == len(sent) + 1


def test_packet_ins_answered_while_new_flows_keep_arriving(star: HairpinStar) -> None:
    """A learning controller's life: every new flow's first frame is a packet-in, answered at
    once by a flow-mod and a packet-out while the next new flows arrive. (A switch whose
    datapath waited for the agent's lock inside a batch hung here: the answers publish
    changes, which wait for that batch to end.)"""
    client = controller(star)
    sender, receiver = wire(star, 1), wire(star, 2)
    send_flow_mod(client, match(), action_output(OFPP_CONTROLLER))
    sent = [frame(seq) for seq in range(400)]

    def send_all() -> None:
        for f in sent:
            sender.send(f)
            time.sleep(0.0005)

    traffic = threading.Thread(target=send_all)
    traffic.start()
    try:
        for seq in range(len(sent)):
            (pin,) = packet_ins(client, 1)
            client.send_raw(answer(pin, 2 * seq))
    finally:
        traffic.join()
    assert not client.barrier(), "no error, and every new flow sent to the controller once"
    assert sorted(receive(receiver, len(sent))) == sorted(sent)
    assert client.flow_count() == len(sent) + 1
    # Long after the last packet-in, the agent's own task answers again.
    time.sleep(0.1)
    assert client.flow_count() == len(sent) + 1


def udp_frame(dst_port: int) -> bytes:
    """A UDP/IPv4 frame from host 1 (10.0.0.1) to host 2 (10.0.0.2) for ``dst_port``."""
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    )
    total = sum(struct.unpack("!10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    udp = struct.pack("!HHHH", 4000, dst_port, 8, 0)
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack("!H", 0x0800)
    return (eth + header + udp).ljust(60, b"\0")


def test_masked_transport_ports_match_through_the_switch(star: HairpinStar) -> None:
    """UDP to destination ports 0x8000-0x80ff goes to host 2; the rest of UDP is dropped."""
    star.ofctl("add-flow", "priority=10,udp,tp_dst=0x8000/0xff00,actions=output:2")
    shown = [line.strip() for line in star.ofctl("dump-flows", "--no-stats").splitlines()]
    assert shown == ["priority=10,udp,tp_dst=0x8000/0xff00 actions=output:2"]
    sender = star.hosts[0].ns.make_socket(socket.AF_PACKET, socket.SOCK_RAW)
    sender.bind(("eth0", 0))
    receiver = star.hosts[1].ns.make_socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    receiver.bind(("eth0", 0x0800))
    receiver.settimeout(0.5)
    for port in (0x8000, 0x80FF, 0x7FFF, 0x8100, 0x8042, 0x0080, 0xC000):
        sender.send(udp_frame(port))
    arrived = []
    while True:
        try:
            data, address = receiver.recvfrom(65536)
        except TimeoutError:
            break
        if address[2] != socket.PACKET_OUTGOING and data[23] == 17:
            arrived.append(struct.unpack_from("!H", data, 36)[0])
    assert arrived == [0x8000, 0x80FF, 0x8042]
