"""ARP request/reply exchanges from a host namespace, timed by the kernel.

``python -m hairpin.testing.probe IFACE TARGET... [--count N] [--interval S] [--timeout S]``
sends N ARP requests for each TARGET in turn out of IFACE through an AF_PACKET socket and
prints one JSON object per request: the reply's fields and the reaction time, from the moment
just before the request's ``send`` to the kernel's receive timestamp of the reply
(SO_TIMESTAMPNS), or ``null`` fields when no reply came within the timeout. Tests and the
InSP benchmark run it inside a host namespace.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import select
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass

ETH_P_ARP = 0x0806
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
BROADCAST = b"\xff" * 6


@dataclass
class ArpReply:
    """One exchange: what answered, and how fast (None fields: no answer in time)."""

    seq: int
    target: str = ""
    reaction_ns: int | None = None
    eth_src: str | None = None
    eth_dst: str | None = None
    sha: str | None = None
    spa: str | None = None
    tha: str | None = None
    tpa: str | None = None


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def _interface_addresses(iface: str) -> tuple[bytes, bytes]:
    """(MAC, IPv4) of `iface`, read from the kernel."""
    import fcntl

    siocgifhwaddr, siocgifaddr = 0x8927, 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("256s", iface.encode()[:15])
        mac = fcntl.ioctl(s.fileno(), siocgifhwaddr, request)[18:24]
        ip = fcntl.ioctl(s.fileno(), siocgifaddr, request)[20:24]
    return mac, ip


def arp_request(mac: bytes, ip: bytes, target: bytes) -> bytes:
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + ip + b"\0" * 6 + target
    frame = BROADCAST + mac + struct.pack("!H", ETH_P_ARP) + arp
    return frame + b"\0" * (60 - len(frame))


def _kernel_timestamp(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec
    return None


def exchange(
    iface: str, targets: list[str], count: int, interval: float, timeout: float
) -> list[ArpReply]:
    """Sends `count` requests for each of `targets` in turn, `interval` seconds apart; one
    result each."""
    mac, ip = _interface_addresses(iface)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((iface, ETH_P_ARP))
    jobs = [(target, seq) for target in targets for seq in range(count)]
    results = []
    try:
        for i, (target, seq) in enumerate(jobs):
            target_ip = ipaddress.IPv4Address(target).packed
            request = arp_request(mac, ip, target_ip)
            started = time.monotonic()
            sent_ns = time.time_ns()
            sock.send(request)
            reply = _await_reply(sock, seq, sent_ns, target_ip, mac, timeout)
            reply.target = target
            results.append(reply)
            pause = interval - (time.monotonic() - started)
            if pause > 0 and i + 1 < len(jobs):
                time.sleep(pause)
    finally:
        sock.close()
    return results


def _await_reply(
    sock: socket.socket, seq: int, sent_ns: int, target: bytes, mac: bytes, timeout: float
) -> ArpReply:
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], remaining)
        if not ready:
            break
        frame, ancillary, _, _ = sock.recvmsg(2048, 1024)
        is_reply = len(frame) >= 42 and struct.unpack_from("!H", frame, 20)[0] == 2
        if not is_reply or frame[28:32] != target or frame[0:6] != mac:
            continue
        received_ns = _kernel_timestamp(ancillary) or time.time_ns()
        return ArpReply(
            seq=seq,
            reaction_ns=received_ns - sent_ns,
            eth_dst=_mac(frame[0:6]),
            eth_src=_mac(frame[6:12]),
            sha=_mac(frame[22:28]),
            spa=str(ipaddress.IPv4Address(frame[28:32])),
            tha=_mac(frame[32:38]),
            tpa=str(ipaddress.IPv4Address(frame[38:42])),
        )
    return ArpReply(seq=seq)


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("iface")
    args.add_argument("targets", nargs="+", metavar="target")
    args.add_argument("--count", type=int, default=1)
    args.add_argument("--interval", type=float, default=0.2)
    args.add_argument("--timeout", type=float, default=1.0)
    ns = args.parse_args(argv)
    for reply in exchange(ns.iface, ns.targets, ns.count, ns.interval, ns.timeout):
        print(json.dumps(asdict(reply)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
