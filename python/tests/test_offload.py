"""Hardware offload as controllers and operators see it.

- The characterisation tool (seed 004 section 5.1.1 as a command) run against hairpind with
  each HP profile prints seed 004 Table 2 exactly, and against Open vSwitch finds no limit.
- A full hardware table without software fallback answers TABLE_FULL, and table features
  report the profile's capacity.
- `hairpinctl dump-flows` shows where each rule lives and what hardware and software counted.
- The `model` backend on veth: traffic through a rule in "hardware" is not held to the slow
  path's rate, traffic through a rule the hardware cannot hold is (seed 004's cliff).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hairpin import characterise
from hairpin.testing.daemon import (
    OFPT_ERROR,
    OFPT_FLOW_MOD,
    REPO,
    action_output,
    connected_client,
    find_hairpind,
    flow_mod_body,
    instruction_apply,
    match,
    oxm,
    running_hairpind,
)
from hairpin.testing.netns import namespace, unique_prefix
from hairpin.testing.ovs import ovs_instance
from hairpin.testing.topology import hairpin_star, iperf3_tcp_bps, wait_until

OVS_OF_PORT = 16910


def hairpinctl(*args: str) -> str:
    binary = find_hairpind().parent / "hairpinctl"
    result = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"hairpinctl {args}: {result.stderr}"
    return result.stdout


@pytest.mark.parametrize("column", list(characterise.COLUMNS))
def test_characterisation_reproduces_table2(column: str) -> None:
    profile, table = characterise.COLUMNS[column]
    published = characterise.PUBLISHED[column]
    with (
        running_hairpind(extra_args=["--offload", f"{profile}:model"]) as daemon,
        connected_client(daemon.port) as client,
    ):
        prober = characterise.Prober(client)
        assert prober.placement, "hairpind with a profile answers the placement multipart"
        measured = []
        for (row, _), expected in zip(characterise.ROWS, published, strict=True):
            outcome = prober.fill(table, row, expected + characterise.CHUNK)
            measured.append(outcome.count)
            assert outcome.how != "no limit", f"row {row}: never stopped"
        daemon.assert_alive()
    assert tuple(measured) == published, f"{column}: measured {measured}"


def test_characterisation_finds_no_limit_in_open_vswitch(root: None) -> None:
    limit = 1500
    with (
        namespace(f"{unique_prefix()}-ovs") as ns,
        ovs_instance(ns) as ovs,
    ):
        ovs.add_bridge("br0", 0x2, [])
        ovs.vsctl("set-controller", "br0", f"ptcp:{OVS_OF_PORT}:127.0.0.1")
        listening = ["ss", "-Htln", f"sport = :{OVS_OF_PORT}"]
        assert wait_until(lambda: bool(ns.run(*listening).stdout.strip()), 10.0)
        result = ns.run(
            sys.executable,
            "-m",
            "hairpin.characterise",
            "--port",
            str(OVS_OF_PORT),
            "--limit",
            str(limit),
            "--label",
            "OVS",
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert "does not answer the flow placement multipart" in result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith("#") and "  " in line]
    rows = [line for line in rows if re.match(r"#\d", line)]
    assert len(rows) == 12, result.stdout
    for line in rows:
        assert line.split()[2] == str(limit) and line.endswith("no limit"), line


def test_full_table_answers_table_full_and_features_show_the_capacity() -> None:
    with running_hairpind(extra_args=["--offload", "hp-3500yl-of13"]) as daemon:
        features = subprocess.run(
            ["ovs-ofctl", "-O", "OpenFlow13", "dump-table-features", daemon.ofctl_target],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert re.search(r'table 0 \("hardware"\).*?max_entries=1526', features, re.S), features
        with connected_client(daemon.port) as client:
            action = instruction_apply(action_output(1))
            for n in range(1527):
                body = flow_mod_body(
                    priority=100,
                    match_bytes=characterise.rule_match(9, n),
                    instructions=[action],
                )
                client.send(OFPT_FLOW_MOD, body)
            errors = [m for m in client.barrier() if m.msg_type == OFPT_ERROR]
            assert [m.error()[:2] for m in errors] == [(5, 1)], "one TABLE_FULL, the last"
            assert client.flow_count() == 1526
            # The structure the table cannot hold at all: in_port (Table 2 row #1).
            _, replies = client.send_and_barrier(
                OFPT_FLOW_MOD,
                flow_mod_body(match_bytes=match(oxm(0, b"\0\0\0\1")), instructions=[action]),
            )
            assert [m.error()[:2] for m in replies if m.msg_type == OFPT_ERROR] == [(4, 6)]
            # Software tables (1 and on) take what table 0 refuses.
            _, replies = client.send_and_barrier(
                OFPT_FLOW_MOD,
                flow_mod_body(
                    table_id=1, match_bytes=match(oxm(0, b"\0\0\0\1")), instructions=[action]
                ),
            )
            assert not [m for m in replies if m.msg_type == OFPT_ERROR]


def test_dump_flows_shows_where_each_rule_lives(root: None, tmp_path: Path) -> None:
    offload = ["--offload", "hp-2920:model"]
    with hairpin_star(tmp_path, hosts=2, controller_port=None, extra_args=offload) as switch:
        # in_port rules fit the 2920's hardware; a rule on eth_src does not (Table 2 row #4).
        switch.ofctl("add-flow", "priority=10,in_port=1,actions=output:2")
        switch.ofctl("add-flow", "priority=10,in_port=2,actions=output:1")
        switch.ofctl("add-flow", "priority=5,dl_src=02:00:00:00:00:09,actions=drop")
        assert switch.hosts[0].ns.ping(switch.hosts[1].address, count=3)
        ctl = ["--target", "tcp:127.0.0.1:6653", "dump-flows"]
        binary = find_hairpind().parent / "hairpinctl"
        lines = switch.switch.run(str(binary), *ctl).stdout.splitlines()
        by_rule = {("in_port=1" in ln, "dl_src" in ln or "eth_src" in ln): ln for ln in lines}
        hw_rule = by_rule[(True, False)]
        sw_rule = by_rule[(False, True)]
        assert "location=hw" in hw_rule and "location=sw" in sw_rule, lines
        n_packets = int(re.search(r"n_packets=(\d+)", hw_rule).group(1))
        hw_packets = int(re.search(r"hw_packets=(\d+)", hw_rule).group(1))
        sw_packets = int(re.search(r"sw_packets=(\d+)", hw_rule).group(1))
        assert n_packets >= 3 and hw_packets + sw_packets == n_packets, hw_rule
        assert hw_packets >= 3, "the pings went through the hardware entry"
        show = switch.switch.run(
            str(binary), "--control", str(switch.control_path), "call", "offload/show"
        ).stdout
        state = json.loads(show)
        assert state["profile"] == "hp-2920" and state["tables"][0]["entries"] == 2, state
        assert state["fast_path"]["decided"] >= 6, state


def test_model_backend_holds_software_to_the_slow_path_rate(root: None, tmp_path: Path) -> None:
    offload = ["--offload", "hp-3500yl-of10:model"]
    with hairpin_star(tmp_path, hosts=2, controller_port=None, extra_args=offload) as switch:
        client, server = switch.hosts
        # ARP and the reverse direction in hardware throughout.
        switch.ofctl("add-flow", "priority=20,in_port=2,actions=output:1")
        switch.ofctl("add-flow", "priority=20,arp,in_port=1,actions=output:2")
        # Forward data: first a rule the 3500yl holds in hardware (in_port only, row #1)...
        switch.ofctl("add-flow", "priority=10,in_port=1,actions=output:2")
        fast = iperf3_tcp_bps(client, server, tmp_path, seconds=3)
        # ... then one it cannot (eth_src, row #4): software, 10000 packets/s at most.
        switch.ofctl("del-flows", "--strict", "priority=10,in_port=1")
        mac = client.ns.run("cat", "/sys/class/net/eth0/address").stdout.strip()
        switch.ofctl("add-flow", f"priority=10,in_port=1,dl_src={mac},actions=output:2")
        slow = iperf3_tcp_bps(client, server, tmp_path, seconds=3)
        switch.assert_alive()
    print(f"hardware rule: {fast / 1e6:.1f} Mbit/s, software rule: {slow / 1e6:.1f} Mbit/s")
    # 10000 packets/s of at most 1514 bytes is 121 Mbit/s.
    assert slow < 125e6, f"the slow path let {slow / 1e6:.1f} Mbit/s through"
    assert fast > slow, f"hardware {fast / 1e6:.1f} Mbit/s, software {slow / 1e6:.1f} Mbit/s"


def test_xdp_backend_forwards_in_the_kernel(root: None, tmp_path: Path) -> None:
    """`--offload xdp-veth:xdp`: rules in the fast path forward with XDP_REDIRECT, native mode
    on veth; what they decide is counted back into the flows; a rule the fast path cannot hold
    (an output to two ports) leaves its packets to hairpind."""
    offload = ["--offload", "xdp-veth:xdp"]
    with hairpin_star(tmp_path, hosts=3, controller_port=None, extra_args=offload) as switch:
        # Native XDP redirects into a veth only when the peer runs NAPI (GRO on), and frames
        # from a local TCP stack need their checksums done before they leave (tx off).
        for host in switch.hosts:
            host.ns.run("ethtool", "-K", "eth0", "tx", "off", "gro", "on")
        switch.ofctl("add-flow", "priority=10,in_port=1,actions=output:2")
        switch.ofctl("add-flow", "priority=10,in_port=2,actions=output:1")
        switch.ofctl("add-flow", "priority=10,in_port=3,actions=output:1,output:2")
        client, server, third = switch.hosts
        bps = iperf3_tcp_bps(client, server, tmp_path, seconds=2)
        assert third.ns.ping(client.address, count=2) is False  # replies go to 1 only
        binary = find_hairpind().parent / "hairpinctl"
        show = json.loads(
            switch.switch.run(
                str(binary), "--control", str(switch.control_path), "call", "offload/show"
            ).stdout
        )
        modes = {x["interface"]: x["mode"] for x in show["xdp"]}
        assert modes == {"p1": "native", "p2": "native", "p3": "native"}, show

        def counts() -> dict[str, tuple[int, int]]:
            lines = switch.switch.run(
                str(binary), "--target", "tcp:127.0.0.1:6653", "dump-flows"
            ).stdout
            out = {}
            for line in lines.splitlines():
                port = re.search(r"in_port=(\d)", line).group(1)
                n = int(re.search(r"n_packets=(\d+)", line).group(1))
                hw = int(re.search(r"hw_packets=(\d+)", line).group(1))
                out[port] = (n, hw)
            return out

        assert wait_until(lambda: counts()["1"][1] > 1000, 5.0), counts()
        by_port = counts()
        assert by_port["1"][0] == by_port["1"][1], "every packet of the transfer in the fast path"
        assert by_port["3"][0] >= 2 and by_port["3"][1] == 0, "two outputs: software's"
    print(f"TCP through the XDP fast path: {bps / 1e6:.0f} Mbit/s")


def test_a_bad_profile_stops_the_daemon_naming_file_line_and_field(tmp_path: Path) -> None:
    good = (REPO / "crates/offload/profiles/hp-2920.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(good.replace('"ipv4_dst",', '"ipv4_dts",'))
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "ipv4_dts" in text)
    result = subprocess.run(
        [str(find_hairpind()), "--offload", f"{bad}:model", "--listen", "ptcp:16930:127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 2, result
    expected = f"{bad}:{line}: field `table[0].structure[0].fields`: unknown match field `ipv4_dts`"
    assert expected in result.stderr, result.stderr
