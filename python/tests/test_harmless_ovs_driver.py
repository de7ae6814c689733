"""The NAPALM driver of ours for an Open vSwitch legacy switch, against a real private Open
vSwitch: NAPALM finds it, its configuration text round-trips exactly, merge, replace, compare,
commit, discard and rollback do what NAPALM's contract says, and the getters report the
switch's own state."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import napalm
import pytest
from napalm.base.exceptions import ConnectionException, MergeConfigException

from hairpin.testing.legacy import LegacySwitch, legacy_switch
from hairpin.testing.netns import namespace, unique_prefix


@pytest.fixture
def legacy(root: None) -> Iterator[LegacySwitch]:
    prefix = unique_prefix()
    with ExitStack() as stack:
        server = stack.enter_context(namespace(f"{prefix}-srv"))
        addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
        yield stack.enter_context(legacy_switch(f"{prefix}-a", 3, server, "tr1", addresses))


def driver(legacy: LegacySwitch) -> Any:
    device = napalm.get_network_driver("hairpin_ovs")(legacy.db, "", "", timeout=10)
    device.open()
    return device


def column(legacy: LegacySwitch, port: str, name: str) -> str:
    return legacy.ovs.vsctl("get", "Port", port, name).strip()


def test_configuration_round_trips_and_candidates_behave(legacy: LegacySwitch) -> None:
    device = driver(legacy)
    running = device.get_config()["running"]
    assert running == (
        "# hairpin_ovs configuration of bridge br0\n"
        "bridge br0 fail_mode=standalone\n"
        "port br0\nport p1 tag=1\nport p2 tag=1\nport p3 tag=1\nport t1 tag=1\n"
    )
    before = legacy.dump()

    # Merge: only the columns given change; an empty value clears one.
    device.load_merge_candidate(
        config="port p1 tag=101 vlan_mode=access\nport t1 tag= trunks=101-102"
    )
    diff = device.compare_config()
    assert "-port p1 tag=1\n+port p1 tag=101 vlan_mode=access" in diff
    assert "+port t1 trunks=101,102" in diff
    device.discard_config()
    assert device.compare_config() == ""
    assert legacy.dump() == before

    device.load_merge_candidate(
        config="port p1 tag=101 vlan_mode=access\nport t1 tag= trunks=101-102"
    )
    device.commit_config()
    assert (column(legacy, "p1", "tag"), column(legacy, "p1", "vlan_mode")) == ("101", "access")
    assert (column(legacy, "t1", "tag"), column(legacy, "t1", "trunks")) == ("[]", "[101, 102]")
    assert device.get_vlans() == {
        1: {"name": "VLAN0001", "interfaces": ["p2", "p3"]},
        101: {"name": "VLAN0101", "interfaces": ["p1", "t1"]},
        102: {"name": "VLAN0102", "interfaces": ["t1"]},
    }

    # Rollback undoes the last commit exactly.
    device.rollback()
    assert legacy.dump() == before

    # Replace: the text is the whole configuration; unlisted ports lose their columns.
    device.load_replace_candidate(config="bridge br0 fail_mode=standalone\nport p2 tag=7\n")
    device.commit_config()
    assert [column(legacy, p, "tag") for p in ("p1", "p2", "p3", "t1")] == ["[]", "7", "[]", "[]"]
    device.load_replace_candidate(config=running)
    device.commit_config()
    assert device.get_config()["running"] == running
    assert legacy.dump() == before


def test_bad_text_is_refused_with_its_line(legacy: LegacySwitch) -> None:
    device = driver(legacy)
    before = legacy.dump()
    for text, message in [
        ("port p2 tag=1\nport p1 tag=5000", "line 2: port p1: `5000` is not a VLAN id"),
        ("port p1 tag=1\n\nport p1 tag=2", "line 3: port p1 again \\(first on line 1\\)"),
        ("port p9 tag=5", "line 1: bridge br0 has no port p9"),
        ("# x\nvlan 5", "line 2: `vlan` is neither `bridge` nor `port`"),
        ("port p1 colour=red", "line 1: port p1: column `colour` is not one of"),
        ("bridge br7", "the text is for bridge br7, the device is bridge br0"),
        ("port p1 vlan_mode=sideways", "line 1: port p1: vlan_mode `sideways` is not one of"),
    ]:
        with pytest.raises(MergeConfigException, match=message):
            device.load_merge_candidate(config=text)
    assert device.compare_config() == ""
    assert legacy.dump() == before


def test_getters_report_the_switch(legacy: LegacySwitch) -> None:
    device = driver(legacy)
    facts = device.get_facts()
    assert facts["vendor"] == "Open vSwitch"
    assert facts["hostname"] == "br0"
    assert facts["interface_list"] == ["br0", "p1", "p2", "p3", "t1"]
    assert facts["os_version"][0].isdigit()

    interfaces = device.get_interfaces()
    assert interfaces["p2"]["is_up"] and interfaces["p2"]["is_enabled"]
    legacy.set_link("p2", False)
    assert device.get_interfaces()["p2"]["is_up"] is False
    legacy.set_link("p2", True)

    a, b = legacy.hosts[0], legacy.hosts[1]
    assert a.ns.ping(b.address, count=1)
    table = device.get_mac_address_table()
    macs = {entry["interface"]: entry for entry in table}
    assert {"p1", "p2"} <= set(macs), table
    assert macs["p1"]["vlan"] == 1
    address = a.ns.run("cat", "/sys/class/net/eth0/address").stdout.strip().upper()
    assert macs["p1"]["mac"] == address


def test_unreachable_switch_and_ambiguous_bridge(legacy: LegacySwitch) -> None:
    driver_class = napalm.get_network_driver("hairpin_ovs")
    with pytest.raises(
        ConnectionException, match=r"/nonexistent\.sock: ovs-vsctl: .*database connection failed"
    ):
        driver_class("/nonexistent.sock", "", "").open()
    legacy.ovs.vsctl("add-br", "br1", "--", "set", "bridge", "br1", "datapath_type=netdev")
    with pytest.raises(ConnectionException, match=r"2 bridges \(br0, br1\); say which"):
        driver_class(legacy.db, "", "").open()
    chosen = driver_class(legacy.db, "", "", optional_args={"bridge": "br1"})
    chosen.open()
    assert chosen.get_config()["running"].splitlines()[1] == "bridge br1"
