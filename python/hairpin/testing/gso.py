"""Writes one TCP/IPv4 GSO super-frame into a tap device, the way a virtio guest hands the
kernel a large segment to cut: ``python -m hairpin.testing.gso TAP PAYLOAD MSS`` (run in the
tap's namespace). A packet socket on the tap that asked for virtio-net headers
(PACKET_VNET_HDR, as hairpind's ports do) receives it whole, with the header saying how to
cut it into ceil(PAYLOAD / MSS) segments.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import struct

TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000
TUN_F_CSUM = 0x01
TUN_F_TSO4 = 0x02
VIRTIO_NET_HDR_F_NEEDS_CSUM = 1
VIRTIO_NET_HDR_GSO_TCPV4 = 1
ETH_LEN, IP_LEN, TCP_LEN = 14, 20, 20


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def super_frame(payload: int, mss: int) -> bytes:
    """The virtio-net header and a TCP/IPv4 frame 10.0.0.9:40000 -> 10.0.0.1:9 carrying
    ``payload`` zero bytes, to be cut into segments of ``mss``."""
    eth = bytes.fromhex("0200000000010200000000020800")
    ip = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x45, 0, IP_LEN + TCP_LEN + payload, 1, 0, 64, 6, 0,
            bytes([10, 0, 0, 9]), bytes([10, 0, 0, 1]),
        )
    )  # fmt: skip
    ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(ip)))
    tcp = struct.pack("!HHIIBBHHH", 40000, 9, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
    l4 = ETH_LEN + IP_LEN
    vnet = struct.pack(
        "<BBHHHH",
        VIRTIO_NET_HDR_F_NEEDS_CSUM,
        VIRTIO_NET_HDR_GSO_TCPV4,
        l4 + TCP_LEN,  # header length
        mss,
        l4,  # checksum start
        16,  # checksum offset in the TCP header
    )
    return vnet + eth + bytes(ip) + tcp + bytes(payload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tap")
    parser.add_argument("payload", type=int)
    parser.add_argument("mss", type=int)
    args = parser.parse_args(argv)
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", args.tap.encode(), flags))
        fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4)
        os.write(fd, super_frame(args.payload, args.mss))
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
