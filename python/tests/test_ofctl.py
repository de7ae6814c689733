"""`ovs-ofctl -O OpenFlow13` drives a running hairpind (no ports) through every command an
operator uses, and what it reads back is what it wrote.

The expected dump lines are what Open vSwitch 3.1 (netdev bridge) prints for the same input:
the reference a correct switch must reproduce byte for byte once statistics are stripped.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hairpin.testing.daemon import HairpinDaemon, running_hairpind

# (line given to add-flows, line dump-flows --no-stats prints for it)
FLOWS: list[tuple[str, str]] = [
    ("table=0,priority=0,actions=CONTROLLER:65535", "priority=0 actions=CONTROLLER:65535"),
    ("table=0,priority=10,in_port=1,actions=output:2", "priority=10,in_port=1 actions=output:2"),
    (
        "table=0,priority=11,in_port=2,actions=goto_table:1",
        "priority=11,in_port=2 actions=goto_table:1",
    ),
    (
        "table=0,priority=12,dl_dst=00:00:00:00:00:01,actions=output:1",
        "priority=12,dl_dst=00:00:00:00:00:01 actions=output:1",
    ),
    (
        "table=0,priority=13,dl_src=00:00:00:00:00:02,"
        "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=FLOOD",
        "priority=13,dl_src=00:00:00:00:00:02,"
        "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00 actions=FLOOD",
    ),
    ("table=0,priority=14,dl_type=0x88cc,actions=drop", "priority=14,dl_type=0x88cc actions=drop"),
    (
        "table=0,priority=15,dl_vlan=10,actions=pop_vlan,output:3",
        "priority=15,dl_vlan=10 actions=pop_vlan,output:3",
    ),
    (
        "table=0,priority=16,vlan_tci=0x1000/0x1000,actions=drop",
        "priority=16,vlan_tci=0x1000/0x1000 actions=drop",
    ),
    (
        "table=0,priority=17,dl_vlan=20,dl_vlan_pcp=5,actions=set_field:4126->vlan_vid,output:4",
        "priority=17,dl_vlan=20,dl_vlan_pcp=5 actions=set_field:4126->vlan_vid,output:4",
    ),
    (
        "table=0,priority=18,vlan_tci=0x0000,"
        "actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:5",
        "priority=18,vlan_tci=0x0000/0x1fff "
        "actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:5",
    ),
    (
        "table=0,priority=20,ip,nw_src=10.0.0.0/8,actions=output:6",
        "priority=20,ip,nw_src=10.0.0.0/8 actions=output:6",
    ),
    (
        "table=0,priority=21,ip,nw_dst=192.168.1.1,actions=dec_ttl,output:7",
        "priority=21,ip,nw_dst=192.168.1.1 actions=dec_ttl,output:7",
    ),
    (
        "table=0,priority=22,ip,nw_src=10.1.0.0/255.255.0.255,actions=drop",
        "priority=22,ip,nw_src=10.1.0.0/255.255.0.255 actions=drop",
    ),
    (
        "table=0,priority=23,ip,nw_tos=32,actions=set_field:46->ip_dscp,output:1",
        "priority=23,ip,nw_tos=32 actions=set_field:46->ip_dscp,output:1",
    ),
    (
        "table=0,priority=24,ip,nw_ecn=2,actions=output:2",
        "priority=24,ip,nw_ecn=2 actions=output:2",
    ),
    (
        "table=0,priority=25,tcp,tp_dst=80,actions=set_field:8080->tcp_dst,output:3",
        "priority=25,tcp,tp_dst=80 actions=set_field:8080->tcp_dst,output:3",
    ),
    (
        "table=0,priority=26,tcp,tp_src=0x400/0xfc00,actions=output:4",
        "priority=26,tcp,tp_src=0x400/0xfc00 actions=output:4",
    ),
    (
        "table=0,priority=27,udp,tp_dst=53,actions=set_field:10.0.0.53->ip_dst,output:5",
        "priority=27,udp,tp_dst=53 actions=set_field:10.0.0.53->ip_dst,output:5",
    ),
    (
        "table=0,priority=28,sctp,tp_dst=3868,actions=output:6",
        "priority=28,sctp,tp_dst=3868 actions=output:6",
    ),
    (
        "table=0,priority=29,icmp,icmp_type=8,icmp_code=0,actions=CONTROLLER:128",
        "priority=29,icmp,icmp_type=8,icmp_code=0 actions=CONTROLLER:128",
    ),
    (
        "table=0,priority=30,arp,arp_op=1,arp_tpa=10.0.0.1,actions=LOCAL",
        "priority=30,arp,arp_tpa=10.0.0.1,arp_op=1 actions=LOCAL",
    ),
    (
        "table=0,priority=31,arp,arp_spa=10.0.0.0/24,arp_sha=00:00:00:00:00:05,actions=NORMAL",
        "priority=31,arp,arp_spa=10.0.0.0/24,arp_sha=00:00:00:00:00:05 actions=NORMAL",
    ),
    (
        "table=0,priority=32,arp,arp_tha=00:00:00:00:00:00,actions=IN_PORT",
        "priority=32,arp,arp_tha=00:00:00:00:00:00 actions=IN_PORT",
    ),
    (
        "table=0,priority=33,ipv6,ipv6_src=2001:db8::/32,actions=output:1",
        "priority=33,ipv6,ipv6_src=2001:db8::/32 actions=output:1",
    ),
    (
        "table=0,priority=34,ipv6,ipv6_dst=2001:db8::1,ipv6_label=0x12345,actions=output:2",
        "priority=34,ipv6,ipv6_dst=2001:db8::1,ipv6_label=0x12345 actions=output:2",
    ),
    (
        "table=0,priority=35,icmp6,icmp_type=135,nd_target=2001:db8::2,actions=output:3",
        "priority=35,icmp6,icmp_type=135,nd_target=2001:db8::2 actions=output:3",
    ),
    (
        "table=0,priority=36,icmp6,icmp_type=136,nd_tll=00:00:00:00:00:07,actions=output:4",
        "priority=36,icmp6,icmp_type=136,nd_tll=00:00:00:00:00:07 actions=output:4",
    ),
    (
        "table=0,priority=37,icmp6,icmp_type=135,nd_sll=00:00:00:00:00:08,actions=output:5",
        "priority=37,icmp6,icmp_type=135,nd_sll=00:00:00:00:00:08 actions=output:5",
    ),
    (
        "table=0,priority=38,mpls,mpls_label=100,mpls_tc=3,mpls_bos=1,"
        "actions=pop_mpls:0x0800,output:6",
        "priority=38,mpls,mpls_label=100,mpls_tc=3,mpls_bos=1 actions=pop_mpls:0x0800,output:6",
    ),
    (
        "table=0,priority=39,ip,actions=push_mpls:0x8847,set_field:200->mpls_label,output:7",
        "priority=39,ip actions=push_mpls:0x8847,set_field:200->mpls_label,output:7",
    ),
    (
        "table=0,priority=40,metadata=0x5/0xff,actions=output:1",
        "priority=40,metadata=0x5/0xff actions=output:1",
    ),
    (
        "table=0,priority=41,tun_id=0x64,actions=output:2",
        "priority=41,tun_id=0x64 actions=output:2",
    ),
    (
        "table=0,priority=42,in_port=3,actions=write_metadata:0xab/0xff,goto_table:2",
        "priority=42,in_port=3 actions=write_metadata:0xab/0xff,goto_table:2",
    ),
    (
        "table=0,priority=43,in_port=4,actions=meter:1,output:1",
        "priority=43,in_port=4 actions=meter:1,output:1",
    ),
    ("table=0,priority=44,in_port=5,actions=group:1", "priority=44,in_port=5 actions=group:1"),
    (
        "table=0,priority=45,in_port=6,actions=write_actions(output:3),goto_table:3",
        "priority=45,in_port=6 actions=write_actions(output:3),goto_table:3",
    ),
    (
        "table=0,priority=46,in_port=7,actions=clear_actions,goto_table:4",
        "priority=46,in_port=7 actions=clear_actions,goto_table:4",
    ),
    ("table=0,priority=47,in_port=8,actions=group:2", "priority=47,in_port=8 actions=group:2"),
    (
        "table=0,priority=48,in_port=9,actions=set_queue:1,output:1",
        "priority=48,in_port=9 actions=set_queue:1,output:1",
    ),
    (
        "table=0,priority=49,ip,nw_proto=47,actions=output:2",
        "priority=49,ip,nw_proto=47 actions=output:2",
    ),
    (
        "table=0,priority=50,udp,tp_dst=0x8000/0xff00,actions=output:5",
        "priority=50,udp,tp_dst=0x8000/0xff00 actions=output:5",
    ),
    (
        "table=0,priority=51,sctp,tp_src=0x1/0x1,actions=output:6",
        "priority=51,sctp,tp_src=0x1/0x1 actions=output:6",
    ),
    (
        "table=0,cookie=0x1234,priority=52,in_port=10,actions=output:1",
        "cookie=0x1234, priority=52,in_port=10 actions=output:1",
    ),
    (
        "table=0,priority=53,idle_timeout=60,hard_timeout=120,in_port=11,actions=output:1",
        "idle_timeout=60, hard_timeout=120, priority=53,in_port=11 actions=output:1",
    ),
    (
        "table=1,priority=100,ip,actions=set_field:00:00:00:00:00:10->eth_dst,output:1",
        "table=1, priority=100,ip actions=set_field:00:00:00:00:00:10->eth_dst,output:1",
    ),
    ("table=1,priority=0,actions=goto_table:2", "table=1, priority=0 actions=goto_table:2"),
    (
        "table=2,priority=5,tcp6,tp_dst=443,actions=output:3",
        "table=2, priority=5,tcp6,tp_dst=443 actions=output:3",
    ),
    ("table=2,priority=0,actions=drop", "table=2, priority=0 actions=drop"),
    (
        "table=3,priority=1,actions=write_actions(group:3)",
        "table=3, priority=1 actions=write_actions(group:3)",
    ),
    (
        "table=4,priority=1,udp,actions=mod_nw_ttl:5,output:4",
        "table=4, priority=1,udp actions=mod_nw_ttl:5,output:4",
    ),
    ("table=200,priority=1,actions=output:1", "table=200, priority=1 actions=output:1"),
]

# (add-group line, dump-groups line)
GROUPS: list[tuple[str, str]] = [
    (
        "group_id=1,type=all,bucket=output:1,bucket=output:2",
        "group_id=1,type=all,bucket=actions=output:1,bucket=actions=output:2",
    ),
    (
        "group_id=2,type=select,bucket=weight:50,output:3,bucket=weight:50,output:4",
        "group_id=2,type=select,bucket=weight:50,actions=output:3,bucket=weight:50,actions=output:4",
    ),
    (
        "group_id=3,type=indirect,bucket=output:5",
        "group_id=3,type=indirect,bucket=actions=output:5",
    ),
    (
        "group_id=4,type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2",
        "group_id=4,type=ff,bucket=watch_port:1,actions=output:1,"
        "bucket=watch_port:2,actions=output:2",
    ),
]

# (add-meter argument, dump-meters block)
METERS: list[tuple[str, str]] = [
    (
        "meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=100",
        "meter=1 kbps burst stats bands=\ntype=drop rate=1000 burst_size=100",
    ),
    (
        "meter=2,pktps,band=type=dscp_remark,rate=500,prec_level=1",
        "meter=2 pktps bands=\ntype=dscp_remark rate=500 prec_level=1",
    ),
]

N_BULK_FLOWS = 100_000


@pytest.fixture(scope="module")
def switch() -> Iterator[HairpinDaemon]:
    with running_hairpind() as daemon:
        yield daemon
        daemon.assert_alive()


def ofctl(
    switch: HairpinDaemon, command: str, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["ovs-ofctl", "-O", "OpenFlow13", command, switch.ofctl_target, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if check:
        assert result.returncode == 0, f"ovs-ofctl {command} {args}: {result.stderr}"
    return result


def ofctl_fails(switch: HairpinDaemon, error: str, command: str, *args: str) -> None:
    """The command fails and ovs-ofctl reports the switch's OFPT_ERROR named `error`."""
    result = ofctl(switch, command, *args, check=False)
    assert result.returncode != 0, f"{command} {args} succeeded: {result.stdout}"
    assert re.search(rf"OFPT_ERROR \(OF1\.3\) \(xid=0x[0-9a-f]+\): {error}\b", result.stderr), (
        f"{command} {args}: expected {error}, got: {result.stderr}"
    )


def flow_lines(switch: HairpinDaemon, *args: str) -> list[str]:
    """dump-flows output, one line per flow without statistics, sorted."""
    out = ofctl(switch, "dump-flows", "--no-stats", *args).stdout
    lines = [line.strip() for line in out.splitlines()]
    return sorted(line for line in lines if line and not line.startswith("OFPST_FLOW"))


def flow_lines_with_stats(switch: HairpinDaemon) -> list[str]:
    """Plain dump-flows output, one line per flow, sorted."""
    out = ofctl(switch, "dump-flows").stdout
    return sorted(line.strip() for line in out.splitlines() if line.startswith(" cookie="))


def group_lines(switch: HairpinDaemon) -> list[str]:
    out = ofctl(switch, "dump-groups").stdout
    return sorted(line.strip() for line in out.splitlines()[1:] if line.strip())


def meter_blocks(switch: HairpinDaemon) -> list[str]:
    out = ofctl(switch, "dump-meters").stdout
    body = "\n".join(out.splitlines()[1:])
    return sorted(block.strip() for block in body.split("\n\n") if block.strip())


def aggregate_flow_count(switch: HairpinDaemon) -> int:
    out = ofctl(switch, "dump-aggregate").stdout
    found = re.search(r"flow_count=(\d+)", out)
    assert found, out
    return int(found.group(1))


def reset(switch: HairpinDaemon) -> None:
    ofctl(switch, "del-flows")
    ofctl(switch, "del-groups")
    ofctl(switch, "del-meters")
    assert flow_lines(switch) == []
    assert group_lines(switch) == []
    assert meter_blocks(switch) == []


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_read_only_commands(switch: HairpinDaemon) -> None:
    show = ofctl(switch, "show").stdout
    assert "OFPT_FEATURES_REPLY (OF1.3)" in show
    assert "dpid:0000000000000001" in show
    assert re.search(r"n_tables:(\d+)", show), show
    assert "OFPT_GET_CONFIG_REPLY (OF1.3)" in show

    desc = ofctl(switch, "dump-desc").stdout
    for label in ("Manufacturer:", "Hardware:", "Software:", "Serial Num:", "DP Description:"):
        assert label in desc, desc

    tables = ofctl(switch, "dump-tables").stdout
    assert "OFPST_TABLE reply (OF1.3)" in tables
    assert "table 0:" in tables

    features = ofctl(switch, "dump-table-features").stdout
    assert re.search(r"^  table 0\b", features, re.MULTILINE), features
    assert re.search(r"max_entries=[1-9]", features), features
    assert re.search(r"instructions: .*\bgoto_table\b", features), features
    assert re.search(r"matching:\n +arbitrary mask: .*\beth_\{src,dst\}", features), features

    ports = ofctl(switch, "dump-ports").stdout
    assert "OFPST_PORT reply (OF1.3)" in ports
    ports_desc = ofctl(switch, "dump-ports-desc").stdout
    assert "OFPST_PORT_DESC reply (OF1.3)" in ports_desc

    group_features = ofctl(switch, "dump-group-features").stdout
    assert "OFPST_GROUP_FEATURES reply (OF1.3)" in group_features
    for group_type in ("all group", "select group", "indirect group", "fast failover group"):
        assert group_type in group_features, group_features

    meter_features = ofctl(switch, "meter-features").stdout
    assert "OFPST_METER_FEATURES reply (OF1.3)" in meter_features
    found = re.search(r"max_meter:(\d+) max_bands:(\d+)", meter_features)
    assert found and int(found.group(1)) > 0 and int(found.group(2)) > 0, meter_features
    assert "drop" in meter_features and "dscp_remark" in meter_features


def test_dump_flows_equals_what_was_added(switch: HairpinDaemon, tmp_path: Path) -> None:
    reset(switch)
    for add_meter, _ in METERS:
        ofctl(switch, "add-meter", add_meter)
    ofctl(switch, "add-groups", str(write_lines(tmp_path / "groups", [g for g, _ in GROUPS])))
    ofctl(switch, "add-flows", str(write_lines(tmp_path / "flows", [f for f, _ in FLOWS])))

    assert flow_lines(switch) == sorted(dumped for _, dumped in FLOWS)
    assert group_lines(switch) == sorted(dumped for _, dumped in GROUPS)
    assert meter_blocks(switch) == sorted(dumped for _, dumped in METERS)
    assert aggregate_flow_count(switch) == len(FLOWS)
    with_stats = flow_lines_with_stats(switch)
    assert len(with_stats) == len(FLOWS)
    for line in with_stats:
        assert re.search(r" duration=\d+\.\d+s, table=\d+, n_packets=0, n_bytes=0, ", line), line
    assert flow_lines(switch, "table=1") == sorted(d for f, d in FLOWS if f.startswith("table=1,"))


def test_add_mod_del_flows(switch: HairpinDaemon) -> None:
    reset(switch)
    ofctl(switch, "add-flow", "table=0,priority=5,ip,nw_dst=10.0.0.1,actions=output:1")
    ofctl(switch, "add-flow", "table=0,priority=6,ip,nw_dst=10.0.0.1,actions=output:1")
    ofctl(switch, "add-flow", "table=0,cookie=0x7,priority=7,tcp,actions=output:1")

    ofctl(switch, "mod-flows", "ip,nw_dst=10.0.0.1,actions=output:2")
    assert flow_lines(switch) == [
        "cookie=0x7, priority=7,tcp actions=output:1",
        "priority=5,ip,nw_dst=10.0.0.1 actions=output:2",
        "priority=6,ip,nw_dst=10.0.0.1 actions=output:2",
    ]
    ofctl(switch, "mod-flows", "--strict", "priority=6,ip,nw_dst=10.0.0.1,actions=output:3")
    assert "priority=6,ip,nw_dst=10.0.0.1 actions=output:3" in flow_lines(switch)
    assert "priority=5,ip,nw_dst=10.0.0.1 actions=output:2" in flow_lines(switch)

    ofctl(switch, "del-flows", "--strict", "priority=5,ip,nw_dst=10.0.0.1")
    assert aggregate_flow_count(switch) == 2
    ofctl(switch, "del-flows", "cookie=0x7/-1")
    assert flow_lines(switch) == ["priority=6,ip,nw_dst=10.0.0.1 actions=output:3"]
    ofctl(switch, "del-flows")
    assert aggregate_flow_count(switch) == 0


def test_add_flows_bulk(switch: HairpinDaemon, tmp_path: Path) -> None:
    reset(switch)
    flows = [
        f"table=0,priority=100,ip,nw_dst=10.{i >> 16}.{(i >> 8) & 255}.{i & 255},"
        f"actions=output:{i % 4 + 1}"
        for i in range(N_BULK_FLOWS)
    ]
    path = write_lines(tmp_path / "bulk", flows)
    started = time.monotonic()
    ofctl(switch, "add-flows", str(path))
    elapsed = time.monotonic() - started
    print(f"add-flows of {N_BULK_FLOWS} flows into hairpind: {elapsed:.2f} s")
    assert aggregate_flow_count(switch) == N_BULK_FLOWS
    assert flow_lines(switch, "ip,nw_dst=10.1.134.159") == [
        "priority=100,ip,nw_dst=10.1.134.159 actions=output:4"
    ]
    ofctl(switch, "del-flows")
    assert aggregate_flow_count(switch) == 0


def test_groups(switch: HairpinDaemon) -> None:
    reset(switch)
    for add, _ in GROUPS:
        ofctl(switch, "add-group", add)
    assert group_lines(switch) == sorted(dumped for _, dumped in GROUPS)
    ofctl(switch, "mod-group", "group_id=3,type=indirect,bucket=output:7")
    ofctl(switch, "del-groups", "group_id=1")
    assert group_lines(switch) == sorted(
        [GROUPS[1][1], "group_id=3,type=indirect,bucket=actions=output:7", GROUPS[3][1]]
    )
    ofctl(switch, "del-groups")
    assert group_lines(switch) == []


def test_meters(switch: HairpinDaemon) -> None:
    reset(switch)
    for add, _ in METERS:
        ofctl(switch, "add-meter", add)
    assert meter_blocks(switch) == sorted(dumped for _, dumped in METERS)
    ofctl(switch, "mod-meter", "meter=1,kbps,band=type=drop,rate=2000")
    ofctl(switch, "del-meters", "meter=2")
    assert meter_blocks(switch) == ["meter=1 kbps bands=\ntype=drop rate=2000"]
    ofctl(switch, "del-meters")
    assert meter_blocks(switch) == []


def test_errors_reported_by_ovs_ofctl(switch: HairpinDaemon) -> None:
    reset(switch)
    ofctl(switch, "add-group", "group_id=1,type=all,bucket=output:1")
    ofctl(switch, "add-meter", "meter=1,kbps,band=type=drop,rate=5")
    ofctl(switch, "add-flow", "table=0,priority=1,actions=output:1")
    before = (flow_lines(switch), group_lines(switch), meter_blocks(switch))

    # ovs-ofctl checks this one itself before sending; the raw-socket tests cover the switch.
    result = ofctl(switch, "add-flow", "table=3,priority=1,actions=goto_table:1", check=False)
    assert result.returncode != 0 and "OFPBIC_BAD_TABLE_ID" in result.stderr, result.stderr

    ofctl_fails(switch, "OFPFMFC_BAD_TABLE_ID", "add-flow", "table=254,priority=1,actions=drop")
    ofctl_fails(switch, "OFPBAC_BAD_OUT_GROUP", "add-flow", "priority=1,actions=group:77")
    ofctl_fails(switch, "OFPMMFC_UNKNOWN_METER", "add-flow", "priority=1,actions=meter:77,output:1")
    ofctl_fails(switch, "OFPGMFC_GROUP_EXISTS", "add-group", "group_id=1,type=all,bucket=output:2")
    ofctl_fails(
        switch, "OFPGMFC_UNKNOWN_GROUP", "mod-group", "group_id=99,type=all,bucket=output:1"
    )
    ofctl_fails(switch, "OFPMMFC_METER_EXISTS", "add-meter", "meter=1,kbps,band=type=drop,rate=9")
    ofctl_fails(switch, "OFPMMFC_UNKNOWN_METER", "mod-meter", "meter=99,kbps,band=type=drop,rate=9")

    assert (flow_lines(switch), group_lines(switch), meter_blocks(switch)) == before

    ofctl(switch, "add-group", "group_id=20,type=indirect,bucket=output:1")
    ofctl(switch, "add-group", "group_id=21,type=indirect,bucket=group:20")
    ofctl_fails(switch, "OFPGMFC_LOOP", "mod-group", "group_id=20,type=indirect,bucket=group:21")
    ofctl_fails(switch, "OFPGMFC_CHAINED_GROUP", "del-groups", "group_id=20")
    assert "group_id=20,type=indirect,bucket=actions=output:1" in group_lines(switch)
