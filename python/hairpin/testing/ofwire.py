"""OpenFlow messages counted on the wire: a capture of the control channel (tcpdump on the
controller's loopback) cut back into messages, independently of controller and switch.

The capture must start while the channel is idle, so that each direction's first segment
starts a message.
"""

from __future__ import annotations

import re
import signal
import struct
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hairpin.testing.netns import Namespace
from hairpin.testing.topology import wait_until

# OpenFlow 1.3 message types (spec 7.1) that the counts name; others count by number.
TYPE_NAMES = {
    0: "HELLO",
    1: "ERROR",
    2: "ECHO_REQUEST",
    3: "ECHO_REPLY",
    4: "EXPERIMENTER",
    10: "PACKET_IN",
    13: "PACKET_OUT",
    14: "FLOW_MOD",
    20: "BARRIER_REQUEST",
    21: "BARRIER_REPLY",
}


@contextmanager
def captured(ns: Namespace, port: int, pcap: Path) -> Iterator[Path]:
    """Captures TCP to and from ``port`` on ``ns``'s loopback into ``pcap`` while the block
    runs; raises when the kernel dropped any of it (the counts would be short)."""
    log = pcap.with_suffix(".log")
    with log.open("wb") as err:
        capture = ns.popen(
            "tcpdump", "-i", "lo", "-n", "--immediate-mode", "-s", "8192", "-B", "16384",
            "-U", "-w", str(pcap),
            "tcp", "port", str(port),
            stderr=err,
        )  # fmt: skip
    try:
        # tcpdump writes the file's header once it captures.
        if not wait_until(lambda: pcap.exists() and pcap.stat().st_size > 0, 10.0, 0.05):
            raise RuntimeError(f"tcpdump did not start: {log.read_text()}")
        yield pcap
    finally:
        capture.send_signal(signal.SIGINT)
        capture.wait(10)
    dropped = re.search(r"(\d+) packets? dropped by kernel", log.read_text())
    if dropped is None or dropped.group(1) != "0":
        raise RuntimeError(f"the capture lost packets: {log.read_text()}")


def count_messages(pcap: Path, controller_port: int) -> Counter[str]:
    """Messages by type in a capture of TCP to and from ``controller_port``, both directions
    together (the type says the direction); raises ValueError on a stream that does not cut
    into OpenFlow 1.3 messages."""
    from scapy.all import IP, TCP, rdpcap  # scapy is heavy; only capture readers need it

    streams: dict[tuple[object, ...], dict[int, bytes]] = defaultdict(dict)
    first_seq: dict[tuple[object, ...], int] = {}
    for frame in rdpcap(str(pcap)):
        if not frame.haslayer(TCP) or not frame.haslayer(IP):
            continue
        if len(frame) < frame.wirelen:
            raise ValueError(f"a frame of {frame.wirelen} bytes was cut to {len(frame)}")
        tcp = frame[TCP]
        payload = bytes(tcp.payload)
        if payload and controller_port in (tcp.sport, tcp.dport):
            key = (frame[IP].src, tcp.sport, frame[IP].dst, tcp.dport)
            # Offsets from the first segment (sequence numbers wrap at 2**32); a
            # retransmission lands on its offset again.
            offset = (tcp.seq - first_seq.setdefault(key, tcp.seq)) % 2**32
            streams[key][offset] = payload
    counts: Counter[str] = Counter()
    for key, segments in streams.items():
        data = b"".join(segments[at] for at in sorted(segments))
        offset = 0
        while offset < len(data):
            if len(data) - offset < 8:
                raise ValueError(f"{key}: {len(data) - offset} bytes left over")
            version, msg_type, length, _ = struct.unpack_from("!BBHI", data, offset)
            if version != 4 or length < 8:
                raise ValueError(f"{key}: no OpenFlow 1.3 header at byte {offset}")
            counts[TYPE_NAMES.get(msg_type, f"type {msg_type}")] += 1
            offset += length
    return counts
