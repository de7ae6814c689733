"""The HARMLESS deployment file: the port map it implies, and an error naming file, line and
field for each way it can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from hairpin.harmless import yamledit
from hairpin.harmless.config import ConfigError, LogicalPort, load
from hairpin.harmless.inventory import build_inventory, dialect_name
from hairpin.harmless.state import StateDir, StateError

GOOD = """\
name: lab
devices:
  sw1:
    platform: hairpin_ovs
    hostname: unix:/run/legacy/db.sock
    password_env: SW1_PASSWORD
    trunks:
      - port: t1
        interface: eth1
        access_ports:
          - p1
          - p2
          - {port: p3, vlan: 150, of_port: 2}
switch:
  datapath_id: "0x2a"
  controllers: [tcp:10.0.0.1:6653]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "harmless.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(path, {"SW1_PASSWORD": "x"} if environ is None else environ)
    return caught.value.problems


def test_port_map_follows_the_file(tmp_path: Path) -> None:
    deployment = load(write(tmp_path, GOOD), {"SW1_PASSWORD": "secret"})
    assert [(p.port, p.vlan, p.of_port, p.name, p.trunk) for p in deployment.ports] == [
        ("p1", 101, 1, "p1", "eth1"),
        ("p2", 102, 3, "p2", "eth1"),  # 2 is taken by p3's explicit of_port
        ("p3", 150, 2, "p3", "eth1"),
    ]
    assert [p.line for p in deployment.ports] == [11, 12, 13]
    assert deployment.datapath_id == 0x2A
    assert deployment.credentials["sw1"] == (None, "secret")
    assert deployment.state_dir == Path("/var/lib/hairpin/harmless/lab")


def test_two_devices_with_the_same_port_names(tmp_path: Path) -> None:
    text = GOOD.replace(
        "switch:",
        """  sw2:
    platform: eos
    hostname: 192.0.2.2
    vlan_base: 200
    trunks:
      - {port: Ethernet49, interface: eth2, access_ports: [p1, Ethernet2]}
switch:""",
    )
    deployment = load(write(tmp_path, text), {"SW1_PASSWORD": "x"})
    names = [(p.device, p.name, p.vlan) for p in deployment.ports]
    assert names == [
        ("sw1", "sw1:p1", 101),
        ("sw1", "p2", 102),
        ("sw1", "p3", 150),
        ("sw2", "sw2:p1", 201),
        ("sw2", "Ethernet2", 202),
    ]


TRUNK = "devices.sw1.trunks[0]"
PORTS = f"{TRUNK}.access_ports"
CONTROLLERS = "  controllers: [tcp:10.0.0.1:6653]\n"

# (text replaced, replacement, line, field, message)
MISTAKES = [
    (
        "interface: eth1\n",
        "interface: eth1\n        colour: red\n",
        10,
        f"{TRUNK}.colour",
        "unknown field",
    ),
    (
        "vlan: 150",
        "vlan: 5000",
        13,
        f"{PORTS}[2].vlan",
        "Input should be less than or equal to 4094",
    ),
    ("vlan: 150", "vlan: '150'", 13, f"{PORTS}[2].vlan", "Input should be a valid integer"),
    ("vlan: 150", "vlan: 101", 13, f"{PORTS}[2]", f"VLAN 101 is also {PORTS}[0]"),
    ("{port: p3,", "{port: p1,", 13, f"{PORTS}[2]", f"port p1 is also {PORTS}[0]"),
    (
        "- port: t1",
        "- port: p2",
        8,
        f"{TRUNK}.port",
        f"trunk port p2 is also access port {PORTS}[1]",
    ),
    (
        "interface: eth1",
        "interface: eth1/x",
        9,
        f"{TRUNK}.interface",
        "Value error, `eth1/x` is not a Linux interface name",
    ),
    ('"0x2a"', '"fish"', 15, "switch.datapath_id", "Value error, `fish` is not a datapath id"),
    (
        "    platform: hairpin_ovs\n",
        "",
        3,
        "devices.sw1",
        "`platform` is needed without an inventory",
    ),
    (
        "          - p1\n",
        "          - 7\n",
        11,
        f"{PORTS}[0]",
        "expected a mapping of settings or a port name",
    ),
    ("switch:\n", "switches:\n", 14, "switches", "unknown field"),
    (
        CONTROLLERS,
        CONTROLLERS + "  fail_mode: loud\n",
        17,
        "switch.fail_mode",
        "Input should be 'secure' or 'standalone'",
    ),
    # Values hairpind would refuse are refused here, with this file's line.
    (
        "{port: p3, vlan: 150, of_port: 2}",
        "{port: p3, vlan: 150, of_port: 2, speed_mbps: 5000000000}",
        13,
        f"{PORTS}[2].speed_mbps",
        "Input should be less than or equal to 4294967295",
    ),
    (
        "interface: eth1\n",
        'interface: "eth1\\n"\n',
        9,
        f"{TRUNK}.interface",
        "Value error, `eth1\n` is not a Linux interface name",
    ),
    (
        "{port: p3, vlan: 150, of_port: 2}",
        '{port: p3, vlan: 150, of_port: 2, name: "Ethernét1/0/123"}',
        13,
        f"{PORTS}[2]",
        "OpenFlow port name 'Ethernét1/0/123' is not 15 bytes or fewer",
    ),
    (
        "{port: p3, vlan: 150, of_port: 2}",
        '{port: p3, vlan: 150, of_port: 2, name: "E\\x01x"}',
        13,
        f"{PORTS}[2]",
        "OpenFlow port name 'E\\x01x' is not 15 bytes or fewer without control characters",
    ),
]


@pytest.mark.parametrize(("old", "new", "line", "field", "message"), MISTAKES)
def test_each_mistake_names_file_line_and_field(
    tmp_path: Path, old: str, new: str, line: int, field: str, message: str
) -> None:
    assert old in GOOD
    found = problems(tmp_path, GOOD.replace(old, new, 1))
    expected = f"{tmp_path / 'harmless.yaml'}:{line}: field `{field}`: {message}"
    assert any(p.startswith(expected) for p in found), found


def test_missing_environment_variable(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD, environ={})
    path = tmp_path / "harmless.yaml"
    assert found == [
        f"{path}:6: field `devices.sw1.password_env`: environment variable SW1_PASSWORD unset"
    ]


def test_not_yaml_and_not_a_file(tmp_path: Path) -> None:
    path = tmp_path / "harmless.yaml"
    found = problems(tmp_path, GOOD.replace("  sw1:\n", "  sw1: [\n"))
    assert found[0].startswith(f"{path}:") and "not YAML" in found[0], found
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "absent.yaml")
    path.write_bytes(GOOD.replace("lab", "l\xffb").encode("latin-1"))
    with pytest.raises(ConfigError) as caught:
        load(path, {"SW1_PASSWORD": "x"})
    assert caught.value.problems == [f"{path}:1: not UTF-8"]


def test_nornir_inventory_supplies_connections(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text(
        """\
sw1:
  hostname: 192.0.2.1
  platform: eos
  groups: [arista]
  connection_options:
    napalm:
      extras:
        optional_args: {transport: https}
"""
    )
    (tmp_path / "groups.yaml").write_text("arista:\n  username: ops\n")
    text = GOOD.replace("    platform: hairpin_ovs\n    hostname: unix:/run/legacy/db.sock\n", "")
    text = text.replace(
        "devices:", "inventory: {host_file: hosts.yaml, group_file: groups.yaml}\ndevices:"
    )
    text = text.replace(
        "    password_env: SW1_PASSWORD\n",
        "    password_env: SW1_PASSWORD\n    optional_args: {port: 8443}\n",
    )
    deployment = load(write(tmp_path, text), {"SW1_PASSWORD": "pw"})
    inventory = build_inventory(deployment)
    params = inventory.hosts["sw1"].get_connection_parameters("napalm")
    assert (params.hostname, params.platform, params.username, params.password) == (
        "192.0.2.1",
        "eos",
        "ops",
        "pw",
    )
    assert params.extras == {"optional_args": {"transport": "https", "port": 8443}}
    assert dialect_name(deployment, "sw1", inventory) == "eos"

    (tmp_path / "hosts.yaml").write_text("other:\n  hostname: 192.0.2.9\n")
    with pytest.raises(ConfigError, match=r"hosts.yaml: no host sw1"):
        build_inventory(load(tmp_path / "harmless.yaml", {"SW1_PASSWORD": "pw"}))
    hosts = tmp_path / "hosts.yaml"
    for broken in ("sw1: [unclosed\n", "- sw1\n", "sw1: 5\n"):
        hosts.write_text(broken)
        with pytest.raises(ConfigError, match="inventory of"):
            build_inventory(load(tmp_path / "harmless.yaml", {"SW1_PASSWORD": "pw"}))


def test_port_changes_edit_the_file_and_keep_the_map(tmp_path: Path) -> None:
    text = GOOD.replace("          - p1\n", "          - p1  # the printer\n")
    path = write(tmp_path, text)
    deployment = load(path, {"SW1_PASSWORD": "x"})
    p1, p2, p3 = deployment.ports
    remaining = [p1, p3]
    yamledit.remove_port(path, p2, remaining)
    after = load(path, {"SW1_PASSWORD": "x"})
    assert [(p.port, p.vlan, p.of_port) for p in after.ports] == [("p1", 101, 1), ("p3", 150, 2)]
    assert "# the printer" in path.read_text()

    added = LogicalPort("sw1", "p7", 107, 9, "printer2", "eth1", None)
    yamledit.add_port(path, added, deployment.trunks[0])
    again = load(path, {"SW1_PASSWORD": "x"})
    assert [(p.port, p.vlan, p.of_port, p.name) for p in again.ports] == [
        ("p1", 101, 1, "p1"),
        ("p3", 150, 2, "p3"),
        ("p7", 107, 9, "printer2"),
    ]


def test_a_corrupt_state_file_is_reported_not_a_traceback(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "lab")
    state.path.mkdir()
    for corrupt in ('{"name": "lab", "config_path": "x"', '{"name": "lab"}', "[1, 2]"):
        state.state_file.write_text(corrupt)
        with pytest.raises(StateError, match="corrupt state"):
            state.load()
