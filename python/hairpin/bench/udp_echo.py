"""UDP probes timed by the kernel, for control-latency measurements between two hosts.

``python -m hairpin.bench.udp_echo reflect --port P`` answers each datagram with the same
bytes and, when it ends (``--seconds`` or SIGTERM), prints one JSON line per datagram: its
sequence number, the kernel's receive timestamp and the kernel's transmit timestamp of the
answer, so ``T_refl = t_tx - t_rx``.

``python -m hairpin.bench.udp_echo send --to IP:P --rate R --seconds S`` sends sequence-numbered
datagrams at R per second and prints one JSON line per datagram: the kernel's transmit
timestamp and the kernel's receive timestamp of the answer (``null`` when none came), so
``RTT = t_rx - t_tx``. Software timestamps (SO_TIMESTAMPING) are taken where the kernel hands
the packet to the device and where it takes it from the device, so neither Python's own
delays nor the scheduler's count.
"""

from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator

SO_TIMESTAMPING = 37
SCM_TIMESTAMPING = SO_TIMESTAMPING
SOF_TIMESTAMPING_TX_SOFTWARE = 1 << 1
SOF_TIMESTAMPING_RX_SOFTWARE = 1 << 3
SOF_TIMESTAMPING_SOFTWARE = 1 << 4
SOF_TIMESTAMPING_OPT_ID = 1 << 7
SOF_TIMESTAMPING_OPT_TSONLY = 1 << 11
IP_RECVERR = 11
FLAGS = (
    SOF_TIMESTAMPING_TX_SOFTWARE
    | SOF_TIMESTAMPING_RX_SOFTWARE
    | SOF_TIMESTAMPING_SOFTWARE
    | SOF_TIMESTAMPING_OPT_ID
    | SOF_TIMESTAMPING_OPT_TSONLY
)
SEQ = struct.Struct("!Q")
PAYLOAD = 64


def timestamped_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, FLAGS)
    s.setsockopt(socket.SOL_IP, IP_RECVERR, 1)
    return s


def software_ns(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The software timestamp of a message's SCM_TIMESTAMPING, in nanoseconds."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPING and len(data) >= 16:
            sec, nsec = struct.unpack_from("qq", data)
            return sec * 1_000_000_000 + nsec
    return None


def tx_id(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The send counter (SOF_TIMESTAMPING_OPT_ID) of a transmit timestamp."""
    for level, kind, data in ancillary:
        if level == socket.SOL_IP and kind == IP_RECVERR and len(data) >= 16:
            return int(struct.unpack_from("=IBBBBII", data)[6])
    return None


def drain_tx(s: socket.socket, into: dict[int, int]) -> None:
    """Reads every pending transmit timestamp into ``into[send counter]``."""
    while True:
        try:
            _, ancillary, _, _ = s.recvmsg(0, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        ts, ident = software_ns(ancillary), tx_id(ancillary)
        if ts is not None and ident is not None:
            into[ident] = ts


def receive(s: socket.socket) -> Iterator[tuple[bytes, int | None, object]]:
    """Every datagram waiting on a non-blocking socket: (data, receive timestamp, peer)."""
    while True:
        try:
            data, ancillary, _, peer = s.recvmsg(2048, 1024)
        except BlockingIOError:
            return
        except ConnectionRefusedError:
            continue  # an ICMP error for an earlier datagram (IP_RECVERR)
        yield data, software_ns(ancillary), peer


def reflect(port: int, seconds: float) -> None:
    """Reflects until ``seconds`` pass or SIGTERM comes, then prints what it timed (all at
    the end: a reader that waits for the end must not stall it on a full pipe)."""
    s = timestamped_socket()
    s.bind(("0.0.0.0", port))
    print(json.dumps({"ready": True}), flush=True)
    deadline = time.monotonic() + seconds
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    sent = 0
    pending: dict[int, tuple[int, int]] = {}
    tx: dict[int, int] = {}
    timed: list[str] = []
    while time.monotonic() < deadline and not stopped:
        select.select([s], [], [], 0.2)
        for data, rx, peer in receive(s):
            s.sendto(data, peer)  # type: ignore[arg-type]
            if len(data) >= SEQ.size and rx is not None:
                pending[sent] = (SEQ.unpack_from(data)[0], rx)
            sent += 1
        drain_tx(s, tx)
        for ident in [i for i in pending if i in tx]:
            seq, rx_ns = pending.pop(ident)
            timed.append(json.dumps({"seq": seq, "rx": rx_ns, "tx": tx.pop(ident)}))
    print("\n".join(timed), flush=True)


def send(target: str, rate: float, seconds: float, wait: float) -> None:
    host, _, port = target.rpartition(":")
    s = timestamped_socket()
    s.connect((host, int(port)))
    count = int(rate * seconds)
    interval = 1.0 / rate
    tx: dict[int, int] = {}
    rx: dict[int, int] = {}

    def collect() -> None:
        for data, stamp, _ in receive(s):
            if len(data) >= SEQ.size and stamp is not None:
                rx[SEQ.unpack_from(data)[0]] = stamp
        drain_tx(s, tx)

    start = time.monotonic()
    for seq in range(count):
        s.send(SEQ.pack(seq) + bytes(PAYLOAD - SEQ.size))
        while (remaining := start + (seq + 1) * interval - time.monotonic()) > 0:
            select.select([s], [], [], remaining)
            collect()
    end = time.monotonic() + wait
    while time.monotonic() < end and len(rx) < count:
        select.select([s], [], [], 0.05)
        collect()
    collect()
    for seq in range(count):
        print(json.dumps({"seq": seq, "tx": tx.get(seq), "rx": rx.get(seq)}))
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="role", required=True)
    r = sub.add_parser("reflect")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--seconds", type=float, default=600)
    snd = sub.add_parser("send")
    snd.add_argument("--to", required=True, help="IP:PORT")
    snd.add_argument("--rate", type=float, default=100.0, help="datagrams per second")
    snd.add_argument("--seconds", type=float, default=50.0)
    snd.add_argument("--wait", type=float, default=1.0, help="for late answers, seconds")
    args = parser.parse_args()
    if args.role == "reflect":
        reflect(args.port, args.seconds)
    else:
        send(args.to, args.rate, args.seconds, args.wait)


if __name__ == "__main__":
    main()
