"""Raw Ethernet frames in and out of a host namespace's interface, tags included (this kernel has
no 802.1Q module, so hosts cannot make VLAN interfaces; an AF_PACKET socket sends tagged frames
as they are, and receives them with the tag the kernel moved into PACKET_AUXDATA put back).

As a script, run inside a namespace:

- ``python -m hairpin.testing.frames send IFACE HEX...``: sends each frame;
- ``python -m hairpin.testing.frames capture IFACE SECONDS ETHERTYPE``: prints, one per line
  in hex, every frame received (not sent) within SECONDS whose innermost EtherType is
  ETHERTYPE (hex), as it was on the wire.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hairpin.testing.netns import Namespace

SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
ETH_P_ALL = 0x0003
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
AUXDATA = struct.Struct("=IIIHHHH")
TPIDS = (0x8100, 0x88A8)


def frame(
    dst: bytes, src: bytes, ethertype: int, payload: bytes, tags: tuple[int, ...] = ()
) -> bytes:
    """An Ethernet frame with 802.1Q tags (VIDs, outermost first), padded to 60 bytes."""
    head = dst + src + b"".join(struct.pack("!HH", 0x8100, vid) for vid in tags)
    data = head + struct.pack("!H", ethertype) + payload
    return data + b"\0" * max(0, 60 - len(data))


def tags_of(data: bytes) -> tuple[tuple[int, ...], int]:
    """The VIDs of a frame's tags, outermost first, and its innermost EtherType."""
    tags = []
    offset = 12
    while True:
        (ethertype,) = struct.unpack_from("!H", data, offset)
        if ethertype not in TPIDS:
            return tuple(tags), ethertype
        (tci,) = struct.unpack_from("!H", data, offset + 2)
        tags.append(tci & 0x0FFF)
        offset += 4


def mac_of(ns: Namespace, iface: str = "eth0") -> bytes:
    """An interface's MAC address."""
    text = ns.run("cat", f"/sys/class/net/{iface}/address").stdout.strip()
    return bytes.fromhex(text.replace(":", ""))


def send(ns: Namespace, frames: list[bytes], iface: str = "eth0") -> None:
    """Sends ``frames`` out of ``iface`` in ``ns``."""
    ns.run(
        sys.executable, "-m", "hairpin.testing.frames", "send", iface, *(f.hex() for f in frames)
    )


class Capture:
    """A capture running in a namespace (see :func:`capture`)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def frames(self) -> list[bytes]:
        """Waits for the capture to end; every frame it kept."""
        out, _ = self.process.communicate(timeout=60)
        return [bytes.fromhex(line) for line in out.decode().split()]


@contextmanager
def capture(
    ns: Namespace, ethertype: int, seconds: float, iface: str = "eth0"
) -> Iterator[Capture]:
    """Captures frames of ``ethertype`` arriving on ``iface`` in ``ns`` for ``seconds``, from
    the moment the block starts (the socket is open then)."""
    args = [sys.executable, "-m", "hairpin.testing.frames", "capture", iface, str(seconds)]
    process = ns.popen(*args, f"{ethertype:04x}", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        ready = process.stderr.readline()
        assert ready.strip() == b"ready", ready + process.stderr.read()
        yield Capture(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _restored(data: bytes, ancdata: list[tuple[int, int, bytes]]) -> bytes:
    for level, kind, raw in ancdata:
        if level != SOL_PACKET or kind != PACKET_AUXDATA or len(raw) < AUXDATA.size:
            continue
        status, _, _, _, _, tci, tpid = AUXDATA.unpack_from(raw)
        if status & TP_STATUS_VLAN_VALID:
            tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
            return data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


def _main(argv: list[str]) -> int:
    command, iface, *rest = argv
    if command == "send":
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind((iface, 0))
            for text in rest:
                s.send(bytes.fromhex(text))
        return 0
    seconds, ethertype = float(rest[0]), int(rest[1], 16)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as s:
        s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        s.bind((iface, 0))
        print("ready", file=sys.stderr, flush=True)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            s.settimeout(left)
            try:
                data, ancdata, _, address = s.recvmsg(65536, socket.CMSG_SPACE(AUXDATA.size))
            except TimeoutError:
                break
            if address[2] == PACKET_OUTGOING:
                continue
            data = _restored(data, ancdata)
            if tags_of(data)[1] == ethertype:
                print(data.hex(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
