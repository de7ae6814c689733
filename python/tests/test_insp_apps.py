"""The InSP apps end to end: hosts in namespaces, hairpind between them, os-ken apps driving it.

The InSP ARP responder must keep answering with its controller gone (the reply is generated in
the switch), the classic one must stop; the echo responder's replies must carry checksums
that verify by an independent RFC 1071 sum.
"""

from __future__ import annotations

import itertools
import os
import statistics
import struct
import subprocess
from pathlib import Path

import pytest

from hairpin.apps.icmp_echo import ANNOUNCE_TEMPLATE_ID, ANNOUNCE_TIMER_ID
from hairpin.templates import template_id
from hairpin.testing.apps import (
    arp_probe,
    dump_templates,
    list_templates,
    list_timers,
    mac_of,
    osken_app,
)
from hairpin.testing.netns import Host
from hairpin.testing.topology import HairpinStar, hairpin_star, wait_until

pytestmark = pytest.mark.usefixtures("root")


def assert_answered_for(reply: dict[str, object], asker: Host, target: Host) -> None:
    assert reply["reaction_ns"] is not None, "no ARP reply"
    assert reply["sha"] == mac_of(target) and reply["spa"] == target.address, reply
    assert reply["eth_dst"] == mac_of(asker) == reply["tha"], reply
    assert reply["tpa"] == asker.address, reply


def learn_h2(switch: HairpinStar) -> None:
    """h1 pings h2: h2's address is unknown, so the request reaches the controller, which
    floods it; h2's reply teaches the binding."""
    h1, h2 = switch.hosts[0], switch.hosts[1]
    assert h1.ns.ping(h2.address, count=2), switch.log()


def test_insp_arp_responder_answers_from_the_switch(tmp_path: Path) -> None:
    log = tmp_path / "osken.log"
    with hairpin_star(tmp_path, hosts=3) as switch:
        h1, h2, h3 = switch.hosts
        with osken_app(switch, "hairpin.apps.arp_insp", log):
            learn_h2(switch)
            h2_template = template_id(h2.address)

            def installed() -> bool:
                entry = dump_templates(switch).get(h2_template)
                return entry is not None and entry["flows"] == 1

            assert wait_until(installed, 10.0), f"{dump_templates(switch)}\n{log.read_text()}"
            assert f"learned {h2.address} is at {mac_of(h2)}" in log.read_text()
        # Controller gone, h2 silent on ARP: only the switch can answer.
        h2.ns.run("ip", "link", "set", "eth0", "arp", "off")
        (reply,) = arp_probe(h3, h2.address)
        assert_answered_for(reply, h3, h2)
        listing = dump_templates(switch)[h2_template]
        assert listing["generated"] >= 1 and listing["len"] == 60, listing
        assert listing["copy_ops"] == 3 and listing["checksum_ops"] == 0, listing
        assert listing["memory"] > 60, listing
        # The management socket tells the same.
        by_socket = {t["pkttmp_id"]: t for t in list_templates(switch)}
        assert by_socket[h2_template] == listing, by_socket

        # A new controller finds the templates in place, and re-pushing them is accepted.
        with osken_app(switch, "hairpin.apps.arp_insp", log):
            (reply,) = arp_probe(h1, h2.address)
            assert_answered_for(reply, h1, h2)
            h2.ns.run("ip", "link", "set", "eth0", "arp", "on")
            assert h3.ns.ping(h2.address, count=2)
            assert dump_templates(switch)[h2_template]["flows"] == 1
        assert "refused" not in log.read_text(), log.read_text()
        switch.assert_alive()


def test_classic_arp_responder_answers_from_the_controller(tmp_path: Path) -> None:
    log = tmp_path / "osken.log"
    with hairpin_star(tmp_path, hosts=3) as switch:
        _, h2, h3 = switch.hosts
        with osken_app(switch, "hairpin.apps.arp_classic", log):
            learn_h2(switch)
            h2.ns.run("ip", "link", "set", "eth0", "arp", "off")
            (reply,) = arp_probe(h3, h2.address)
            assert_answered_for(reply, h3, h2)
            assert dump_templates(switch) == {}
        (reply,) = arp_probe(h3, h2.address)
        assert reply["reaction_ns"] is None, f"answered without a controller: {reply}"


def ones_complement_sum(data: bytes) -> int:
    """RFC 1071, written out here: 0xffff over bytes whose checksum field is right."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def test_icmp_echo_responder_replies_with_valid_checksums(tmp_path: Path) -> None:
    from scapy.all import ICMP, IP, rdpcap  # scapy is heavy; only this test needs it

    log = tmp_path / "osken.log"
    pcap = tmp_path / "h1.pcap"
    address = "10.0.0.254"
    with hairpin_star(tmp_path, hosts=1) as switch:
        (h1,) = switch.hosts
        with osken_app(switch, "hairpin.apps.icmp_echo", log):
            assert wait_until(lambda: len(dump_templates(switch)) == 2, 10.0), log.read_text()
            capture = h1.ns.popen(
                "tcpdump",
                "-i",
                "eth0",
                "-n",
                "-U",
                "-c",
                "6",
                "-w",
                str(pcap),
                "icmp",
                stderr=subprocess.PIPE,
            )
            try:
                assert wait_until(lambda: pcap.exists() and pcap.stat().st_size > 0, 5.0)
                result = h1.ns.run("ping", "-c", "3", "-i", "0.2", "-W", "1", address, check=False)
                capture.wait(5)  # it stops by itself after three requests and three replies
            finally:
                capture.terminate()
                capture.wait(5)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "BAD CHECKSUM" not in result.stdout and "wrong data" not in result.stdout
    packets = [bytes(p) for p in rdpcap(str(pcap))]
    assert capture.returncode == 0, capture.stderr.read() if capture.stderr else ""
    requests = [p for p in packets if IP(p[14:]).haslayer(ICMP) and p[34] == 8]
    replies = [p for p in packets if IP(p[14:]).haslayer(ICMP) and p[34] == 0]
    assert len(replies) == len(requests) == 3, packets
    for request, reply in zip(requests, replies, strict=True):
        ip_len = struct.unpack_from("!H", reply, 16)[0]
        assert ones_complement_sum(reply[14:34]) == 0xFFFF, "IPv4 header checksum"
        assert ones_complement_sum(reply[34 : 14 + ip_len]) == 0xFFFF, "ICMP checksum"
        assert reply[38 : 14 + ip_len] == request[38 : 14 + ip_len], "id, seq and data"
        assert reply[26:30] == request[30:34] and reply[30:34] == request[26:30]


def test_timer_trigger_announces_the_address_every_period(tmp_path: Path) -> None:
    """A TIMER_MOD sends a gratuitous ARP every 50 ms out of every port, with no triggering
    packet and no controller in the loop; a period under the switch's bound is refused."""
    from scapy.all import rdpcap  # scapy is heavy; only these tests need it

    log = tmp_path / "osken.log"
    address, mac = "10.0.0.254", "02:00:00:00:00:fe"
    frames = 11
    with hairpin_star(tmp_path, hosts=2) as switch:
        pcaps = [tmp_path / f"h{i}.pcap" for i in (1, 2)]
        env = {**os.environ, "HAIRPIN_ECHO_ANNOUNCE_MS": "50"}
        with osken_app(switch, "hairpin.apps.icmp_echo", log, env=env):
            captures = [
                host.ns.popen(
                    "tcpdump",
                    "-i",
                    "eth0",
                    "-n",
                    "-U",
                    "-c",
                    str(frames),
                    "--time-stamp-precision=nano",
                    "-w",
                    str(pcap),
                    "arp",
                    stderr=subprocess.DEVNULL,
                )
                for host, pcap in zip(switch.hosts, pcaps, strict=True)
            ]
            try:
                for capture in captures:
                    capture.wait(10)  # it stops by itself after `frames` ARP frames
            finally:
                for capture in captures:
                    capture.terminate()
                    capture.wait(5)
            (timer,) = list_timers(switch)
        assert [c.returncode for c in captures] == [0, 0], log.read_text()
        assert timer["timer_id"] == ANNOUNCE_TIMER_ID, timer
        assert timer["pkttmp_id"] == ANNOUNCE_TEMPLATE_ID and timer["period_us"] == 50_000
        assert timer["sent"] >= frames, timer

        for pcap in pcaps:
            packets = rdpcap(str(pcap))
            assert len(packets) == frames
            for p in packets:
                raw = bytes(p)
                assert raw[0:6] == b"\xff" * 6 and raw[6:12].hex(":") == mac
                assert struct.unpack_from("!H", raw, 20)[0] == 1, "an ARP request"
                assert raw[22:28].hex(":") == mac
                assert raw[28:32] == raw[38:42] == bytes(map(int, address.split(".")))
            stamps = [float(p.time) for p in packets]
            gaps = [b - a for a, b in itertools.pairwise(stamps)]
            # Loose bounds (the machine is shared): one packet per period, never a burst.
            assert 0.035 <= statistics.median(gaps) <= 0.075, gaps
            assert min(gaps) >= 0.025, gaps

        # The switch bounds the rate: 0.5 ms is refused, the installed timer stays as it was.
        env = {**os.environ, "HAIRPIN_ECHO_ANNOUNCE_MS": "0.5"}
        with osken_app(switch, "hairpin.apps.icmp_echo", log, env=env):
            assert wait_until(lambda: "TIMER_RATE_EXCEEDED" in log.read_text(), 10.0), (
                log.read_text()
            )
            (timer,) = list_timers(switch)
        assert timer["period_us"] == 50_000, timer
        switch.assert_alive()
