"""Vendor devices: the configuration each dialect's templates render (checked against golden
files written and read by a person), and the manager's plan against NAPALM's own mock driver
speaking for an EOS switch (no vendor device exists on these machines)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from hairpin.harmless import dialects
from hairpin.harmless.config import load
from hairpin.harmless.manager import Manager, Refused

GOLDEN = Path(__file__).parent / "data" / "harmless" / "golden"

# Four access ports (VLANs 101-104) and a trunk, in each dialect's port names.
PORTS = {
    "eos": ["Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4", "Ethernet49"],
    "ios": [
        "GigabitEthernet1/0/1",
        "GigabitEthernet1/0/2",
        "GigabitEthernet1/0/3",
        "GigabitEthernet1/0/4",
        "TenGigabitEthernet1/1/1",
    ],
    "nxos": ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3", "Ethernet1/4", "Ethernet1/49"],
    "junos": ["ge-0/0/1", "ge-0/0/2", "ge-0/0/3", "ge-0/0/4", "xe-0/1/0"],
    "hairpin_ovs": ["p1", "p2", "p3", "p4", "t1"],
}
OVS_BACKUP = (
    "bridge br0 fail_mode=standalone\nport p1 tag=1\nport p2 tag=1\nport p3\n"
    "port p4 tag=1 vlan_mode=access\nport t1 tag=1\n"
)


@pytest.mark.parametrize("dialect", sorted(PORTS))
def test_templates_render_the_golden_configuration(dialect: str) -> None:
    ports = PORTS[dialect]
    access = [dialects.PortVlan(port, 101 + i) for i, port in enumerate(ports[:4])]
    takeover = dialects.takeover(dialect, access, {ports[4]: [101, 102, 103, 104]})
    assert takeover == (GOLDEN / f"{dialect}_takeover.txt").read_text()
    # Ports 3 and 4 leave: 3 had no access VLAN of its own, 4 was in VLAN 1.
    released = [dialects.ReleasedPort(ports[2], None), dialects.ReleasedPort(ports[3], 1)]
    release = dialects.release(dialect, released, [103, 104], {ports[4]: [101, 102]}, OVS_BACKUP)
    assert release == (GOLDEN / f"{dialect}_release.txt").read_text()


def test_vlan_lists_are_compressed_into_ranges() -> None:
    assert dialects.compress([104, 101, 102, 103, 110, 112, 111, 200]) == "101-104,110-112,200"
    assert dialects.compress([7]) == "7"
    assert dialects.compress([]) == ""


def mock_device(directory: Path, vlans: dict[str, list[str]], fail_on_open: bool = False) -> Path:
    """NAPALM mock driver data: an EOS leaf with Ethernet1-8 and an uplink Ethernet49."""
    directory.mkdir()
    names = [f"Ethernet{i}" for i in range(1, 9)] + ["Ethernet49"]
    interface = {
        "is_up": True,
        "is_enabled": True,
        "description": "",
        "last_flapped": -1.0,
        "speed": 1000.0,
        "mtu": 1500,
        "mac_address": "00:1c:73:00:00:01",
    }
    data = {
        "get_facts.1": {"hostname": "leaf1", "vendor": "Arista", "interface_list": names},
        "get_interfaces.1": {name: interface for name in names},
        "get_vlans.1": {
            vid: {"name": f"v{vid}", "interfaces": members} for vid, members in vlans.items()
        },
        "get_config.1": {"running": "! running-config of leaf1\n", "startup": "", "candidate": ""},
        "load_merge_candidate.1": {},
        "compare_config.1": {"diff": "+vlan 101\n+   name harmless-101"},
        "discard_config.1": {},
    }
    for name, value in data.items():
        (directory / name).write_text(json.dumps(value))
    return directory


def deployment_file(tmp_path: Path, mock: Path, fail_on_open: bool = False) -> Path:
    path = tmp_path / "harmless.yaml"
    path.write_text(
        f"""\
devices:
  leaf1:
    platform: mock
    dialect: eos
    hostname: 192.0.2.1
    optional_args: {{path: {mock}, fail_on_open: {str(fail_on_open).lower()}}}
    trunks:
      - port: Ethernet49
        interface: lo
        access_ports: [Ethernet1, Ethernet2, Ethernet3, Ethernet4]
switch:
  hairpind: /bin/true
  hairpinctl: /bin/true
  datapath_id: 1
state_dir: {tmp_path / "state"}
"""
    )
    return path


def test_plan_through_the_mock_driver_shows_the_eos_candidate(tmp_path: Path) -> None:
    access = [f"Ethernet{i}" for i in range(1, 9)]
    mock = mock_device(tmp_path / "mock", {"1": access, "10": ["Ethernet49"]})
    out = io.StringIO()
    Manager(load(deployment_file(tmp_path, mock)), out).plan()
    text = out.getvalue()
    assert (GOLDEN / "eos_takeover.txt").read_text().rstrip() in text
    assert "+vlan 101\n+   name harmless-101" in text
    assert "warning: trunk port leaf1:Ethernet49 carries VLANs 10 now" in text
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").rglob("*.cfg"))


def test_plan_through_the_mock_driver_refuses_vlan_in_use_and_unknown_port(
    tmp_path: Path,
) -> None:
    mock = mock_device(tmp_path / "mock", {"1": ["Ethernet1"], "102": ["Ethernet7"]})
    config = deployment_file(tmp_path, mock)
    config.write_text(config.read_text().replace("Ethernet4]", "Ethernet40]"))
    with pytest.raises(Refused) as refused:
        Manager(load(config), io.StringIO()).plan()
    problems = "\n".join(refused.value.problems)
    assert f"{config}:10: device leaf1 has no port Ethernet40" in problems
    assert (
        f"{config}:10: VLAN 102 (for leaf1:Ethernet2) is already used on device leaf1 "
        "on ports Ethernet7" in problems
    )


def test_unreachable_device_is_refused(tmp_path: Path) -> None:
    mock = mock_device(tmp_path / "mock", {})
    with pytest.raises(Refused, match=r"device leaf1 \(mock 192.0.2.1\) unreachable"):
        Manager(load(deployment_file(tmp_path, mock, fail_on_open=True)), io.StringIO()).plan()
