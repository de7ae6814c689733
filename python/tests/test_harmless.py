"""HARMLESS end to end: a legacy 802.1Q switch (a private Open vSwitch, standalone) hairpins its
access ports over a trunk into hairpind, where a controller programs them as OpenFlow ports.

Each test builds its own site (hosts, legacy switches, trunks; see hairpin.testing.harmless) and
tears it down on exit. Controllers nobody here wrote (Faucet) and our own apps drive it.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from hairpin.testing import frames
from hairpin.testing.daemon import OfClient
from hairpin.testing.harmless import CONTROLLER_PORT, LegacySite, legacy_site, run_hairpind
from hairpin.testing.netns import Host
from hairpin.testing.topology import Hairpind, background, iperf3_tcp_bps, wait_until

pytestmark = pytest.mark.usefixtures("root")

REPO = Path(__file__).resolve().parents[2]
OSKEN_MANAGER = Path(sys.executable).parent / "osken-manager"
FAUCET_VENV = Path(os.environ.get("HAIRPIN_FAUCET_VENV", REPO / ".venv-faucet"))
PORT_COUNTERS = re.compile(r"port\s+(\d+): rx pkts=(\d+).*?tx pkts=(\d+)", re.DOTALL)
OFPT_PORT_STATUS = 12
OFPPS_LINK_DOWN = 1
OFPPS_LIVE = 4
OFPPR_MODIFY = 2


def logs(*paths: Path) -> str:
    parts = []
    for path in paths:
        text = path.read_text(errors="replace") if path.exists() else "(missing)"
        parts.append(f"--- {path.name} ---\n{text[-6000:]}")
    return "\n".join(parts)


def answered_pings(pairs: Sequence[tuple[Host, Host]], count: int = 2) -> set[tuple[str, str]]:
    """Pings every pair at once; returns the (source, destination) addresses that got replies."""
    ping = ["ping", "-q", "-c", str(count), "-i", "0.2", "-W", "1"]
    running = {
        (src.address, dst.address): src.ns.popen(
            *ping, dst.address, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for src, dst in pairs
    }
    return {pair for pair, process in running.items() if process.wait(15) == 0}


def all_pairs(hosts: Sequence[Host]) -> list[tuple[Host, Host]]:
    return [(a, b) for a in hosts for b in hosts if a is not b]


def addresses(pairs: Sequence[tuple[Host, Host]]) -> set[tuple[str, str]]:
    return {(a.address, b.address) for a, b in pairs}


def port_packet_counts(daemon: Hairpind) -> dict[int, tuple[int, int]]:
    dump = daemon.ofctl("dump-ports")
    return {int(p): (int(rx), int(tx)) for p, rx, tx in PORT_COUNTERS.findall(dump)}


@contextmanager
def osken_app(
    site: LegacySite, daemon: Hairpind, app: str, log_path: Path, env: dict[str, str] | None = None
) -> Iterator[None]:
    args = [str(OSKEN_MANAGER), "--ofp-listen-host", "127.0.0.1"]
    args += ["--ofp-tcp-listen-port", str(CONTROLLER_PORT), app]
    with background(site.switch, args, log_path, env=env):
        connected = wait_until(daemon.controller_connected, 20.0)
        assert connected, "hairpind never connected\n" + logs(log_path, daemon.log_path)
        yield


def test_access_ports_become_openflow_ports_under_the_learning_switch(tmp_path: Path) -> None:
    with legacy_site(access=(4,), ordinary=2) as site:
        legacy = site.legacy[0]
        hosts = site.access_hosts
        # Before hairpind: the access hosts are in four VLANs and cannot reach each other;
        # the two ordinary hosts share VLAN 10 on the legacy switch.
        assert not answered_pings(all_pairs(hosts), count=1)
        assert len(answered_pings(all_pairs(legacy.ordinary), count=1)) == 2
        before = legacy.trunk_packets()

        log_path = tmp_path / "osken.log"
        with (
            run_hairpind(site, tmp_path) as daemon,
            osken_app(site, daemon, "hairpin.apps.learning_switch", log_path),
        ):
            # The controller sees four ports, named after the legacy ports.
            desc = daemon.ofctl("dump-ports-desc")
            named = re.findall(r"^\s*(\d+)\((\S+)\):", desc, re.MULTILINE)
            assert named == [("1", "ge1"), ("2", "ge2"), ("3", "ge3"), ("4", "ge4")], desc

            h1, h2 = hosts[0], hosts[1]
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 20.0), logs(log_path)
            pairs = all_pairs(hosts)
            answered = answered_pings(pairs)
            assert answered == addresses(pairs), f"lost: {addresses(pairs) - answered}"
            bps = iperf3_tcp_bps(hosts[0], hosts[3], tmp_path)
            print(f"iperf3 TCP through the legacy switch and hairpind: {bps / 1e6:.1f} Mbit/s")
            assert bps > 0

            # The traffic was hairpinned: through the legacy trunk both ways, at least an
            # iperf3 run's worth of frames (thousands) on top of the pings.
            after = legacy.trunk_packets()
            assert all(a - b > 1000 for a, b in zip(after, before, strict=True)), (before, after)
            # Each logical port counted its own traffic both ways.
            counts = port_packet_counts(daemon)
            assert sorted(counts) == [1, 2, 3, 4], counts
            assert all(rx > 0 and tx > 0 for rx, tx in counts.values()), counts
            # The learning switch learned per logical port, not per trunk.
            learned = [f for f in daemon.ofctl("dump-flows").splitlines() if "priority=10" in f]
            in_ports = {m.group(1) for f in learned if (m := re.search(r"in_port=(\d+)", f))}
            assert in_ports == {"1", "2", "3", "4"}, learned
            (trunk,) = daemon.trunks()
            assert trunk["counters"]["rx_unknown_vlan"] == 0, trunk
            # The ordinary hosts still reach each other through the legacy switch alone and
            # never reach an access host.
            assert len(answered_pings(all_pairs(legacy.ordinary), count=1)) == 2
            cross = [(o, h) for o in legacy.ordinary for h in hosts[:2]]
            assert not answered_pings(cross, count=1)
            daemon.assert_alive()


def test_only_the_pair_of_fig2_talks(tmp_path: Path) -> None:
    with legacy_site(access=(4,)) as site:
        hosts = site.access_hosts
        log_path = tmp_path / "osken.log"
        env = {**os.environ, "HAIRPIN_POLICY_PAIR": "1=10.0.0.1,3=10.0.0.3"}
        with (
            run_hairpind(site, tmp_path) as daemon,
            osken_app(site, daemon, "hairpin.apps.pair_policy", log_path, env),
        ):
            assert wait_until(lambda: len(daemon.ofctl("dump-flows").splitlines()) >= 5, 20.0)
            h1, h3 = hosts[0], hosts[2]
            assert wait_until(lambda: h1.ns.ping(h3.address, count=1), 20.0), logs(log_path)
            pairs = all_pairs(hosts)
            answered = answered_pings(pairs)
            allowed = {("10.0.0.1", "10.0.0.3"), ("10.0.0.3", "10.0.0.1")}
            assert answered == allowed, logs(log_path, daemon.log_path)
            # Everything else reached hairpind and its table-miss entry, which dropped it.
            miss = [f for f in daemon.ofctl("dump-flows").splitlines() if "priority=0" in f]
            assert miss and int(re.search(r"n_packets=(\d+)", miss[0]).group(1)) > 0, miss


def test_faucet_drives_the_same_site(tmp_path: Path) -> None:
    manager = FAUCET_VENV / "bin" / "osken-manager"
    assert manager.exists(), f"no Faucet venv at {FAUCET_VENV}: run scripts/setup.sh"
    config = tmp_path / "faucet.yaml"
    interfaces = "".join(
        f'      {n}:\n        name: "ge{n}"\n        native_vlan: office\n' for n in range(1, 5)
    )
    config.write_text(
        "vlans:\n  office:\n    vid: 100\n"
        'dps:\n  harmless:\n    dp_id: 0x1\n    hardware: "Open vSwitch"\n'
        f"    interfaces:\n{interfaces}"
    )
    faucet_log = tmp_path / "faucet.log"
    env = {
        **os.environ,
        "FAUCET_CONFIG": str(config),
        "FAUCET_LOG": str(faucet_log),
        "FAUCET_EXCEPTION_LOG": str(tmp_path / "faucet_exception.log"),
        "FAUCET_PROMETHEUS_ADDR": "127.0.0.1",
        "FAUCET_PROMETHEUS_PORT": "16802",
    }
    with legacy_site(access=(4,)) as site, run_hairpind(site, tmp_path) as daemon:
        args = [str(manager), "--ofp-listen-host", "127.0.0.1"]
        args += ["--ofp-tcp-listen-port", str(CONTROLLER_PORT), "faucet.faucet"]
        stdout_log = tmp_path / "faucet-stdout.log"
        with background(site.switch, args, stdout_log, env=env):
            diagnostics = (faucet_log, stdout_log, daemon.log_path)
            assert wait_until(daemon.controller_connected, 30.0), logs(*diagnostics)
            assert wait_until(lambda: bool(daemon.ofctl("dump-flows").strip()), 20.0)
            hosts = site.access_hosts
            h1, h2 = hosts[0], hosts[1]
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 30.0), logs(*diagnostics)
            pairs = all_pairs(hosts)
            answered = answered_pings(pairs)
            assert answered == addresses(pairs), f"lost: {addresses(pairs) - answered}"
            assert iperf3_tcp_bps(hosts[1], hosts[2], tmp_path) > 0
            daemon.assert_alive()


def test_two_legacy_switches_into_one_hairpind(tmp_path: Path) -> None:
    # Seed 000 Fig. 3: the same VLAN ids on two trunks are different ports; two datapath
    # threads share each trunk.
    with legacy_site(access=(2, 2)) as site:
        assert [p.vlan for p in site.access] == [101, 102, 101, 102]
        log_path = tmp_path / "osken.log"
        with (
            run_hairpind(site, tmp_path, extra_args=["--datapath-threads", "2"]) as daemon,
            osken_app(site, daemon, "hairpin.apps.learning_switch", log_path),
        ):
            hosts = site.access_hosts
            assert wait_until(lambda: hosts[0].ns.ping(hosts[2].address, count=1), 20.0)
            pairs = all_pairs(hosts)
            answered = answered_pings(pairs)
            assert answered == addresses(pairs), f"lost: {addresses(pairs) - answered}"
            assert [t["name"] for t in daemon.trunks()] == ["sw1", "sw2"]

            def both_trunks_counted() -> bool:
                return all(t["counters"]["rx_packets"] > 0 for t in daemon.trunks())

            # The datapath threads report their sockets' counts about once a second.
            assert wait_until(both_trunks_counted, 5.0), daemon.trunks()


def port_status(client: OfClient, timeout: float = 5.0) -> tuple[int, int, str, int, int]:
    """The next PORT_STATUS: (reason, port, name, state, curr_speed in kbps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, msg in enumerate(client.unsolicited):
            if msg.msg_type == OFPT_PORT_STATUS:
                del client.unsolicited[i]
                return decode_port_status(msg.body)
        client.sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            client.unsolicited.append(client.recv())
        except TimeoutError:
            break
    raise AssertionError("no PORT_STATUS")


def drain(client: OfClient, quiet: float = 0.5) -> None:
    """Reads and drops what the switch sends until it is quiet for ``quiet`` seconds."""
    client.unsolicited.clear()
    client.sock.settimeout(quiet)
    with contextlib.suppress(TimeoutError):
        while True:
            client.recv()


def decode_port_status(body: bytes) -> tuple[int, int, str, int, int]:
    # ofp_port_status: reason u8, pad[7], ofp_port (port_no u32, pad 4, hw_addr 6, pad 2,
    # name 16, config, state, curr, advertised, supported, peer, curr_speed, max_speed).
    reason = body[0]
    port_no, _, _, name, _, state, _, _, _, _, speed, _ = struct.unpack_from(
        "!I4s6s2x16sIIIIIIII", body, 8
    )
    return reason, port_no, name.rstrip(b"\0").decode(), state, speed


def test_legacy_link_changes_reach_the_controller(tmp_path: Path) -> None:
    with (
        legacy_site(access=(3,)) as site,
        run_hairpind(site, tmp_path, controller=False) as daemon,
        OfClient(daemon.unix_path) as client,
    ):
        client.handshake()
        # The legacy switch may still be bringing its trunk up when hairpind starts.
        live = wait_until(lambda: daemon.ofctl("dump-ports-desc").count("LIVE") == 3, 10.0)
        assert live, daemon.ofctl("dump-ports-desc")
        drain(client)
        # The legacy switch's watcher reports port 2 down at 100 Mbit/s.
        daemon.ctl("set-port-link", "2", "down", "--speed-mbps", "100")
        assert port_status(client) == (OFPPR_MODIFY, 2, "ge2", OFPPS_LINK_DOWN, 100_000)
        # The same report again changes nothing and announces nothing.
        daemon.ctl("set-port-link", "2", "down")
        # The trunk loses its carrier: every legacy port on it goes down (port 2 already was).
        site.legacy[0].ns.run("ip", "link", "set", "up0", "down")
        down = sorted(port_status(client) for _ in range(2))
        assert [(p, s) for _, p, _, s, _ in down] == [(1, OFPPS_LINK_DOWN), (3, OFPPS_LINK_DOWN)]
        # The trunk comes back: ports 1 and 3 are live; port 2 stays down for its own link.
        site.legacy[0].ns.run("ip", "link", "set", "up0", "up")
        up = sorted(port_status(client, timeout=10.0) for _ in range(2))
        assert [(p, s) for _, p, _, s, _ in up] == [(1, OFPPS_LIVE), (3, OFPPS_LIVE)]
        daemon.ctl("set-port-link", "2", "up", "--speed-mbps", "1000")
        assert port_status(client) == (OFPPR_MODIFY, 2, "ge2", OFPPS_LIVE, 1_000_000)
        with pytest.raises(AssertionError):
            port_status(client, timeout=0.5)
        speeds = re.findall(r"speed: (\d+) Mbps now", daemon.ofctl("dump-ports-desc"))
        assert "1000" in speeds, speeds


def test_unknown_vlans_and_untagged_frames_are_counted_and_dropped(tmp_path: Path) -> None:
    # Access hosts on VLANs 101, 102 with logical ports, 105 without one, and 106 that the
    # legacy trunk sends untagged (its native VLAN).
    with legacy_site(access=(2,), extra_vlans=(105, 106), native_vlan=106) as site:
        h1, h2, stray, untagged = site.access_hosts
        ports = site.hairpind_args(only=site.access[:2])
        log_path = tmp_path / "osken.log"
        with (
            run_hairpind(site, tmp_path, ports=ports) as daemon,
            osken_app(site, daemon, "hairpin.apps.learning_switch", log_path),
        ):
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 20.0), logs(log_path)
            assert not answered_pings([(stray, h1), (untagged, h1)])
            (trunk,) = daemon.trunks()
            counters = trunk["counters"]
            assert counters["rx_unknown_vlan"] > 0 and counters["rx_untagged"] > 0, trunk
            assert sorted(port_packet_counts(daemon)) == [1, 2]
        # With a native port, the untagged VLAN is a port like the others.
        native = site.access[3]
        ports = site.hairpind_args(only=[*site.access[:2], native], native=native)
        with (
            run_hairpind(site, tmp_path, ports=ports) as daemon,
            osken_app(site, daemon, "hairpin.apps.learning_switch", log_path),
        ):
            assert wait_until(lambda: untagged.ns.ping(h1.address, count=1), 20.0)
            assert answered_pings([(untagged, h2)]) == {(untagged.address, h2.address)}
            (trunk,) = daemon.trunks()
            assert trunk["counters"]["rx_untagged"] == 0, trunk
            assert trunk["ports"][-1]["vlan"] == "native", trunk


TEST_ETHERTYPE = 0x88B5


def test_flood_in_port_and_tags_through_the_trunk(tmp_path: Path) -> None:
    # The legacy access ports tunnel the hosts' own tags (QinQ), so tagged frames cross too.
    with (
        legacy_site(access=(3,), qinq=True) as site,
        run_hairpind(site, tmp_path, controller=False) as daemon,
    ):
        h1, h2, h3 = site.access_hosts
        mac1, mac2 = frames.mac_of(h1.ns), frames.mac_of(h2.ns)
        flows = [
            # FLOOD and ALL: one copy per logical port, each with its own VLAN on the trunk.
            f"in_port=1,dl_type={TEST_ETHERTYPE:#x},dl_dst=ff:ff:ff:ff:ff:ff,actions=FLOOD",
            f"in_port=2,dl_type={TEST_ETHERTYPE:#x},dl_dst=ff:ff:ff:ff:ff:ff,actions=ALL",
            # IN_PORT: back to the logical port it came from, not the trunk.
            f"in_port=3,dl_type={TEST_ETHERTYPE:#x},actions=IN_PORT",
            # A host's own tag arrives as the frame's tag, matched and kept.
            "in_port=1,dl_vlan=7,actions=output:2",
            # A controller's push_vlan leaves as an inner tag under the trunk's.
            f"in_port=2,dl_type={TEST_ETHERTYPE:#x},actions=push_vlan:0x8100,"
            "set_field:4138->vlan_vid,output:1",
        ]
        for flow in flows:
            daemon.ofctl("add-flow", flow)
        broadcast = b"\xff" * 6

        def deliveries(sender: Host, sent: bytes) -> list[list[bytes]]:
            with (
                frames.capture(h1.ns, TEST_ETHERTYPE, 2.0) as c1,
                frames.capture(h2.ns, TEST_ETHERTYPE, 2.0) as c2,
                frames.capture(h3.ns, TEST_ETHERTYPE, 2.0) as c3,
            ):
                frames.send(sender.ns, [sent])
                return [c1.frames(), c2.frames(), c3.frames()]

        flood = frames.frame(broadcast, mac1, TEST_ETHERTYPE, b"flood")
        assert deliveries(h1, flood) == [[], [flood], [flood]]
        everyone = frames.frame(broadcast, mac2, TEST_ETHERTYPE, b"all")
        assert deliveries(h2, everyone) == [[everyone], [], [everyone]]
        tagged = frames.frame(mac2, mac1, TEST_ETHERTYPE, b"inner", tags=(7,))
        assert deliveries(h1, tagged) == [[], [tagged], []]
        plain = frames.frame(mac1, mac2, TEST_ETHERTYPE, b"pushed")
        (got,) = deliveries(h2, plain)[0]
        assert frames.tags_of(got) == ((42,), TEST_ETHERTYPE), got.hex()
        # Last, as the legacy switch then learns h3's address on its trunk: a frame to an
        # address it does not know reaches h3 again only if it left on VLAN 103.
        back = frames.frame(b"\x02\0\0\0\0\x99", frames.mac_of(h3.ns), TEST_ETHERTYPE, b"back")
        assert deliveries(h3, back) == [[], [], [back]]
        daemon.assert_alive()


def test_strawman_exposes_the_raw_trunk(tmp_path: Path) -> None:
    # Seed 000 Fig. 2, the strawman: the controller sees the trunk as one port and maps VLANs
    # itself (match dl_vlan, rewrite it, send back out the port it came from).
    with legacy_site(access=(2,)) as site:
        trunk = site.legacy[0].trunk
        with run_hairpind(site, tmp_path, ports=["--port", f"1={trunk}"], controller=False) as d:
            desc = d.ofctl("dump-ports-desc")
            assert re.findall(r"^\s*(\d+)\((\S+)\):", desc, re.MULTILINE) == [("1", trunk)]
            d.ofctl("add-flow", "in_port=1,dl_vlan=101,actions=mod_vlan_vid:102,IN_PORT")
            d.ofctl("add-flow", "in_port=1,dl_vlan=102,actions=mod_vlan_vid:101,IN_PORT")
            h1, h2 = site.access_hosts
            assert wait_until(lambda: h1.ns.ping(h2.address, count=1), 10.0), d.log()
            assert answered_pings([(h1, h2), (h2, h1)]) == {
                (h1.address, h2.address),
                (h2.address, h1.address),
            }
