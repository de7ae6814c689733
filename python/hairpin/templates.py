"""Packet templates for the InSP apps (seed 001 Figs. 5 and 6): the template bytes with the
copy and checksum operations that complete them from the triggering packet.

Offsets assume an untagged Ethernet frame carrying IPv4 without options; the apps' flow
entries match only such triggers (a VLAN tag moves every offset, OpenFlow 1.3 cannot match
the IHL, see docs/insp.md).
"""

from __future__ import annotations

import ipaddress
import struct

from hairpin.insp import ChecksumKind, ChecksumOp, CopyOp, OFPPktTmpMod

ETH_TYPE_IPV4 = 0x0800
ETH_TYPE_ARP = 0x0806
IPPROTO_ICMP = 1
ICMP_ECHO_REPLY = 0
ICMP_ECHO_REQUEST = 8
ICMP_TIME_EXCEEDED = 11
# The Ethernet minimum without the FCS; templates are padded to it (seed 001 section 5).
MIN_FRAME = 60

# Offsets in an untagged Ethernet / IPv4 (IHL 5) or Ethernet / ARP frame.
ETH_DST, ETH_SRC = 0, 6
ARP_SHA, ARP_SPA, ARP_THA, ARP_TPA = 22, 28, 32, 38
IP_HEADER, IP_CHECKSUM, IP_SRC, IP_DST = 14, 24, 26, 30
ICMP_HEADER, ICMP_CHECKSUM, ICMP_REST = 34, 36, 38


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def ip_bytes(address: str) -> bytes:
    return ipaddress.IPv4Address(address).packed


def template_id(address: str) -> int:
    """Templates for an address are numbered by it, so a restarted app finds its own ids."""
    return int(ipaddress.IPv4Address(address))


def _pad(frame: bytes) -> bytes:
    return frame + b"\0" * max(0, MIN_FRAME - len(frame))


def _ipv4_header(src: bytes, total_len: int, proto: int, ttl: int = 64) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, total_len, 0, 0, ttl, proto, 0, src, b"\0" * 4)


def arp_reply(datapath: object, mac: str, address: str) -> OFPPktTmpMod:
    """The ARP reply `address is at mac` to whoever asks (Fig. 5): the requester's MAC and IP
    are copied into the Ethernet destination and the ARP target fields."""
    frame = (
        b"\0" * 6
        + mac_bytes(mac)
        + struct.pack("!HHHBBH", ETH_TYPE_ARP, 1, ETH_TYPE_IPV4, 6, 4, 2)
        + mac_bytes(mac)
        + ip_bytes(address)
        + b"\0" * 10
    )
    copies = [CopyOp(ETH_SRC, ETH_DST, 6), CopyOp(ARP_SHA, ARP_THA, 6), CopyOp(ARP_SPA, ARP_TPA, 4)]
    return OFPPktTmpMod(
        datapath, pkttmp_id=template_id(address), template=_pad(frame), copy_ops=copies
    )


def gratuitous_arp(datapath: object, pkttmp_id: int, mac: str, address: str) -> OFPPktTmpMod:
    """A gratuitous ARP request announcing `address is at mac` (RFC 5227 ARP announcement:
    sender and target address both `address`), for a timer to send; no copy operations."""
    frame = (
        b"\xff" * 6
        + mac_bytes(mac)
        + struct.pack("!HHHBBH", ETH_TYPE_ARP, 1, ETH_TYPE_IPV4, 6, 4, 1)
        + mac_bytes(mac)
        + ip_bytes(address)
        + b"\0" * 6
        + ip_bytes(address)
    )
    return OFPPktTmpMod(datapath, pkttmp_id=pkttmp_id, template=_pad(frame))


def time_exceeded(datapath: object, pkttmp_id: int, mac: str, address: str) -> OFPPktTmpMod:
    """ICMP Time Exceeded (TTL exceeded in transit) from `address` (Fig. 6): it goes to the
    trigger's sender, the next hop back being the trigger's Ethernet source, and quotes the
    trigger's IPv4 header and first 8 data bytes (RFC 792); both checksums computed."""
    quoted = 20 + 8
    icmp_len = 8 + quoted
    frame = (
        b"\0" * 6
        + mac_bytes(mac)
        + struct.pack("!H", ETH_TYPE_IPV4)
        + _ipv4_header(ip_bytes(address), 20 + icmp_len, IPPROTO_ICMP)
        + struct.pack("!BBH4x", ICMP_TIME_EXCEEDED, 0, 0)
        + b"\0" * quoted
    )
    copies = [
        CopyOp(ETH_SRC, ETH_DST, 6),
        CopyOp(IP_SRC, IP_DST, 4),
        CopyOp(IP_HEADER, ICMP_REST + 4, quoted),
    ]
    sums = [
        ChecksumOp(ChecksumKind.IPV4_HEADER, IP_HEADER, IP_CHECKSUM, 20),
        ChecksumOp(ChecksumKind.ICMPV4, ICMP_HEADER, ICMP_CHECKSUM),
    ]
    return OFPPktTmpMod(
        datapath, pkttmp_id=pkttmp_id, template=_pad(frame), copy_ops=copies, checksum_ops=sums
    )


def echo_reply(
    datapath: object, pkttmp_id: int, mac: str, address: str, payload: int
) -> OFPPktTmpMod:
    """An ICMP echo reply from `address` to a request with `payload` data bytes: identifier,
    sequence number and data are copied from the request, both checksums computed."""
    icmp_len = 8 + payload
    frame = (
        b"\0" * 6
        + mac_bytes(mac)
        + struct.pack("!H", ETH_TYPE_IPV4)
        + _ipv4_header(ip_bytes(address), 20 + icmp_len, IPPROTO_ICMP)
        + struct.pack("!BBH", ICMP_ECHO_REPLY, 0, 0)
        + b"\0" * (4 + payload)
    )
    copies = [
        CopyOp(ETH_SRC, ETH_DST, 6),
        CopyOp(IP_SRC, IP_DST, 4),
        CopyOp(ICMP_REST, ICMP_REST, 4 + payload),
    ]
    sums = [
        ChecksumOp(ChecksumKind.IPV4_HEADER, IP_HEADER, IP_CHECKSUM, 20),
        ChecksumOp(ChecksumKind.ICMPV4, ICMP_HEADER, ICMP_CHECKSUM),  # length 0: to the end
    ]
    return OFPPktTmpMod(
        datapath,
        pkttmp_id=pkttmp_id,
        template=_pad(frame),
        copy_ops=copies,
        checksum_ops=sums,
    )
