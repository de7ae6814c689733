"""The deployment file: one YAML document that says which legacy devices to take over, which of
their ports, over which trunks, and how to run ``hairpind``.

Loading keeps YAML line numbers (ruamel.yaml's round-trip loader), so every error, whether a
schema error from pydantic or a cross-field check of ours, names the file, the line and the
field, the way ``hairpind`` reports a bad TOML file. Paths in the file are relative to the file.

The result is a :class:`Deployment`: the validated settings plus the logical port map, with
each access port's VLAN (``vlan_base`` + its 1-based position on its device, unless given),
OpenFlow port number (1, 2, ... in file order, unless given) and name (the legacy port's name,
prefixed with the device's where two devices share a port name).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

# OpenFlow port names hold 15 characters and a NUL (OFP_MAX_PORT_NAME_LEN).
MAX_PORT_NAME = 15
MAX_OF_PORT = 0xFFFFFF00  # OFPP_MAX
DEFAULT_STATE_DIR = "/var/lib/hairpin/harmless"
IFNAME = re.compile(r"[A-Za-z0-9_.\-]{1,15}")
TRUNK_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,32}")
# hairpind's port speeds are 32-bit Mb/s.
MAX_SPEED_MBPS = 2**32 - 1

Location = tuple[str | int, ...]


class ConfigError(Exception):
    """A deployment file that cannot be used; one line per problem, each naming file, line and
    field."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AccessPortSpec(_Model):
    """One legacy access port to take over; a bare string is ``{port: STRING}``."""

    port: str = Field(min_length=1)
    vlan: int | None = Field(default=None, ge=1, le=4094)
    of_port: int | None = Field(default=None, ge=1, le=MAX_OF_PORT)
    name: str | None = Field(default=None, min_length=1, max_length=MAX_PORT_NAME)
    speed_mbps: int | None = Field(default=None, ge=1, le=MAX_SPEED_MBPS)


def _port_entry(value: Any) -> Any:
    """A bare port name stands for ``{port: NAME}``."""
    return {"port": value} if isinstance(value, str) else value


class TrunkSpec(_Model):
    """A legacy trunk port, the server interface cabled to it, and the ports it carries."""

    port: str = Field(min_length=1)
    interface: str
    name: str | None = None
    access_ports: list[Annotated[AccessPortSpec, BeforeValidator(_port_entry)]] = Field(
        min_length=1
    )

    @field_validator("interface")
    @classmethod
    def _ifname(cls, value: str) -> str:
        if not IFNAME.fullmatch(value):
            raise ValueError(f"`{value}` is not a Linux interface name")
        return value

    @field_validator("name")
    @classmethod
    def _trunk_name(cls, value: str | None) -> str | None:
        if value is not None and not TRUNK_NAME.fullmatch(value):
            raise ValueError(f"`{value}`: letters, digits, `_`, `.` and `-` only, at most 32")
        return value


class DeviceSpec(_Model):
    """A legacy device: how to reach it (unless the Nornir inventory says) and its trunks."""

    platform: str | None = None
    hostname: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    username: str | None = None
    username_env: str | None = None
    password_env: str | None = None
    optional_args: dict[str, Any] = Field(default_factory=dict)
    dialect: str | None = None
    vlan_base: int = Field(default=100, ge=0, le=4093)
    trunks: list[TrunkSpec] = Field(min_length=1)


class InventorySpec(_Model):
    """A Nornir SimpleInventory to take devices' connection settings from."""

    host_file: str
    group_file: str | None = None
    defaults_file: str | None = None
    workers: int = Field(default=10, ge=1)


class SwitchSpec(_Model):
    """The software side: how to run ``hairpind``."""

    hairpind: str = "hairpind"
    hairpinctl: str = "hairpinctl"
    datapath_id: int | str
    controllers: list[str] = Field(default_factory=list)
    listen: list[str] = Field(default_factory=list)
    datapath_threads: int = Field(default=1, ge=1, le=64)
    fail_mode: Literal["secure", "standalone"] = "secure"
    control_socket: str | None = None

    @field_validator("datapath_id")
    @classmethod
    def _dpid(cls, value: int | str) -> int | str:
        parse_datapath_id(value)
        return value


class ChecksSpec(_Model):
    """Deadlines of ``up``'s checks, in seconds; a trunk timeout of 0 skips the traffic check."""

    start_timeout: float = Field(default=10.0, gt=0)
    trunk_traffic_timeout: float = Field(default=30.0, ge=0)


class WatchSpec(_Model):
    """How often ``watch`` polls the legacy devices' links, in seconds."""

    interval: float = Field(default=1.0, gt=0)


class DeploymentSpec(_Model):
    """The whole file."""

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.\-]{1,64}$")
    state_dir: str = DEFAULT_STATE_DIR
    inventory: InventorySpec | None = None
    devices: dict[str, DeviceSpec] = Field(min_length=1)
    switch: SwitchSpec
    checks: ChecksSpec = Field(default_factory=ChecksSpec)
    watch: WatchSpec = Field(default_factory=WatchSpec)


def parse_datapath_id(value: int | str) -> int:
    """An integer, ``"0x2a"`` or ``"00:00:00:00:00:00:00:2a"``, as a 64-bit datapath id."""
    if isinstance(value, int):
        number = value
    elif re.fullmatch(r"([0-9a-fA-F]{2}:){7}[0-9a-fA-F]{2}", value):
        number = int(value.replace(":", ""), 16)
    else:
        try:
            number = int(value, 0)
        except ValueError:
            raise ValueError(
                f"`{value}` is not a datapath id (0x..., or 8 bytes as aa:bb:..)"
            ) from None
    if not 0 <= number < 1 << 64:
        raise ValueError(f"datapath id {value} does not fit in 64 bits")
    return number


@dataclass(frozen=True)
class LogicalPort:
    """An access port of a legacy device as one OpenFlow port of ``hairpind``."""

    device: str
    port: str
    vlan: int
    of_port: int
    name: str
    trunk: str  # hairpind's trunk name
    speed_mbps: int | None
    line: int = 0  # where the deployment file names it


@dataclass(frozen=True)
class Trunk:
    """A legacy trunk port and the server interface that ``hairpind`` reads it through."""

    device: str
    port: str
    interface: str
    name: str
    line: int = 0


@dataclass(frozen=True)
class Deployment:
    """A validated deployment file and the port map it implies."""

    path: Path
    text_sha256: str
    spec: DeploymentSpec
    name: str
    state_dir: Path
    trunks: list[Trunk]
    ports: list[LogicalPort]
    datapath_id: int
    credentials: dict[str, tuple[str | None, str | None]]  # device -> (username, password)

    def device_ports(self, device: str) -> list[LogicalPort]:
        return [p for p in self.ports if p.device == device]

    def device_trunks(self, device: str) -> list[Trunk]:
        return [t for t in self.trunks if t.device == device]

    @property
    def control_socket(self) -> Path:
        configured = self.spec.switch.control_socket
        return Path(configured) if configured else self.state_dir / "hairpind.ctl"


class _Locator:
    """Maps a field path to the line of the YAML node it came from."""

    def __init__(self, path: Path, root: Any) -> None:
        self.path = path
        self.root = root

    def line(self, loc: Location) -> int:
        node = self.root
        line = 1
        for key in loc:
            if isinstance(node, CommentedMap) and key in node:
                line = (
                    node.lc.value(key)[0] + 1 if _is_scalar(node[key]) else node.lc.key(key)[0] + 1
                )
                node = node[key]
            elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
                line = node.lc.item(key)[0] + 1
                node = node[key]
            else:
                break
        return line

    def error(self, loc: Location, message: str) -> str:
        return f"{self.path}:{self.line(loc)}: field `{field_name(loc)}`: {message}"


def _is_scalar(node: Any) -> bool:
    return not isinstance(node, CommentedMap | CommentedSeq)


def field_name(loc: Location) -> str:
    """``devices.sw1.trunks[0].port`` for a pydantic location."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top)"


def _pydantic_problems(locator: _Locator, error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors():
        # Unions report each member under the member's type; keep the location in the file.
        loc = tuple(part for part in item["loc"] if part not in ("str", "int"))
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "model_type":
            message = "expected a mapping of settings" + (
                " or a port name" if "access_ports" in loc else ""
            )
        problems.append(locator.error(loc, message))
    return list(dict.fromkeys(problems))


def load(path: Path, environ: dict[str, str] | None = None) -> Deployment:
    """Reads and validates a deployment file; raises :class:`ConfigError`."""
    environ = dict(os.environ) if environ is None else environ
    path = path.resolve() if path.exists() else path
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError([f"{path}: cannot read: {e.strerror}"]) from e
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ConfigError([f"{path}:{line}: not UTF-8"]) from e
    try:
        root = YAML(typ="rt").load(text)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError([f"{path}:{line}: not YAML: {e.problem or e.context}"]) from e
    locator = _Locator(path, root)
    if not isinstance(root, CommentedMap):
        raise ConfigError([f"{path}:1: the file must be a mapping of settings"])
    try:
        spec = DeploymentSpec.model_validate(_plain(root))
    except ValidationError as e:
        raise ConfigError(_pydantic_problems(locator, e)) from e
    return _resolve(path, text, spec, locator, environ)


def _plain(node: Any) -> Any:
    """ruamel's containers as dicts and lists (pydantic's strict mode wants the real types)."""
    if isinstance(node, CommentedMap):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, CommentedSeq):
        return [_plain(v) for v in node]
    if isinstance(node, bool | int | float | str) or node is None:
        return node if not isinstance(node, str) else str(node)
    return node


def _relative(base: Path, value: str) -> Path:
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (base.parent / candidate)


def _resolve(
    path: Path, text: str, spec: DeploymentSpec, locator: _Locator, environ: dict[str, str]
) -> Deployment:
    problems: list[str] = []
    credentials: dict[str, tuple[str | None, str | None]] = {}
    trunks: list[Trunk] = []
    interfaces: dict[str, Location] = {}
    trunk_names: dict[str, Location] = {}
    pending: list[tuple[Location, str, AccessPortSpec, str]] = []

    for device, dev in spec.devices.items():
        base: Location = ("devices", device)
        if spec.inventory is None and (dev.platform is None or dev.hostname is None):
            missing = "platform" if dev.platform is None else "hostname"
            problems.append(locator.error(base, f"`{missing}` is needed without an inventory"))
        username, password = dev.username, None
        for key in ("username_env", "password_env"):
            var = getattr(dev, key)
            if var is None:
                continue
            if var not in environ:
                problems.append(locator.error((*base, key), f"environment variable {var} unset"))
            elif key == "username_env":
                username = environ[var]
            else:
                password = environ[var]
        credentials[device] = (username, password)

        seen_ports: dict[str, Location] = {}
        seen_vlans: dict[int, Location] = {}
        position = 0
        for t_index, trunk in enumerate(dev.trunks):
            t_loc: Location = (*base, "trunks", t_index)
            name = trunk.name or trunk.interface
            for key, table, value in (
                ("interface", interfaces, trunk.interface),
                ("name", trunk_names, name),
            ):
                if value in table:
                    where = field_name(table[value])
                    problems.append(locator.error((*t_loc, key), f"`{value}` is also {where}"))
                table[value] = (*t_loc, key)
            trunks.append(Trunk(device, trunk.port, trunk.interface, name, locator.line(t_loc)))
            for p_index, entry in enumerate(trunk.access_ports):
                access = entry
                p_loc: Location = (*t_loc, "access_ports", p_index)
                position += 1
                if access.port in seen_ports:
                    where = field_name(seen_ports[access.port])
                    problems.append(locator.error(p_loc, f"port {access.port} is also {where}"))
                seen_ports[access.port] = p_loc
                vlan = access.vlan if access.vlan is not None else dev.vlan_base + position
                if not 1 <= vlan <= 4094:
                    problems.append(locator.error(p_loc, f"VLAN {vlan} is outside 1..4094"))
                elif vlan in seen_vlans:
                    where = field_name(seen_vlans[vlan])
                    problems.append(locator.error(p_loc, f"VLAN {vlan} is also {where}"))
                seen_vlans[vlan] = p_loc
                access = access.model_copy(update={"vlan": vlan})
                pending.append((p_loc, device, access, name))
        for t_index, trunk in enumerate(dev.trunks):
            if trunk.port in seen_ports:
                where = field_name(seen_ports[trunk.port])
                problems.append(
                    locator.error(
                        (*base, "trunks", t_index, "port"),
                        f"trunk port {trunk.port} is also access port {where}",
                    )
                )

    ports = _number_ports(pending, locator, problems)
    state_dir = _relative(path, spec.state_dir)
    name = spec.name or path.stem
    if problems:
        raise ConfigError(problems)
    return Deployment(
        path=path,
        text_sha256=hashlib.sha256(text.encode()).hexdigest(),
        spec=spec,
        name=name,
        state_dir=state_dir / name,
        trunks=trunks,
        ports=ports,
        datapath_id=parse_datapath_id(spec.switch.datapath_id),
        credentials=credentials,
    )


def _number_ports(
    pending: list[tuple[Location, str, AccessPortSpec, str]],
    locator: _Locator,
    problems: list[str],
) -> list[LogicalPort]:
    """OpenFlow numbers (given ones kept, the rest 1, 2, ... in file order) and names."""
    taken: dict[int, Location] = {}
    for loc, _, access, _ in pending:
        if access.of_port is None:
            continue
        if access.of_port in taken:
            where = field_name(taken[access.of_port])
            problems.append(locator.error((*loc, "of_port"), f"{access.of_port} is also {where}"))
        taken[access.of_port] = loc
    devices_of_name: dict[str, set[str]] = {}
    for _, device, access, _ in pending:
        devices_of_name.setdefault(access.port, set()).add(device)

    ports = []
    names: dict[str, Location] = {}
    counter = iter(n for n in range(1, MAX_OF_PORT) if n not in taken)
    for loc, device, access, trunk in pending:
        number = access.of_port if access.of_port is not None else next(counter)
        if access.name is not None:
            name = access.name
        elif len(devices_of_name[access.port]) > 1:
            name = f"{device}:{access.port}"
        else:
            name = access.port
        if len(name.encode()) > MAX_PORT_NAME or not name.isprintable():
            problems.append(
                locator.error(
                    loc,
                    f"OpenFlow port name {name!r} is not {MAX_PORT_NAME} bytes or fewer "
                    "without control characters; give the port a `name`",
                )
            )
        elif name in names:
            problems.append(
                locator.error(loc, f"port name `{name}` is also {field_name(names[name])}")
            )
        names[name] = loc
        assert access.vlan is not None
        ports.append(
            LogicalPort(
                device,
                access.port,
                access.vlan,
                number,
                name,
                trunk,
                access.speed_mbps,
                locator.line(loc),
            )
        )
    return ports


def inventory_paths(deployment: Deployment) -> Iterator[tuple[str, Path]]:
    """The inventory's files, resolved against the deployment file."""
    inventory = deployment.spec.inventory
    if inventory is None:
        return
    for key in ("host_file", "group_file", "defaults_file"):
        value = getattr(inventory, key)
        if value is not None:
            yield key, _relative(deployment.path, value)
