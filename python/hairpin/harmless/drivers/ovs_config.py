"""The configuration text of an Open vSwitch bridge used as a legacy 802.1Q switch.

One line per bridge and per port, holding exactly the columns that make a legacy switch's VLAN
configuration, so that the text read from a bridge and written back leaves the bridge as it
was (``down`` relies on that)::

    # hairpin_ovs configuration of bridge br0
    bridge br0 fail_mode=standalone
    port p1 tag=1
    port p2 tag=101 vlan_mode=access
    port t1 trunks=101,102 vlan_mode=trunk

Columns: a bridge's ``fail_mode``; a port's ``tag`` (its access VLAN), ``trunks`` (VLAN ids,
commas and ranges as ``101-104``) and ``vlan_mode``. An unset column is left out. In a merge, a
column given with an empty value (``tag=``) is cleared and columns not given are kept; in a
replace, the text is the whole configuration: columns not given are cleared, and so are those of
ports not listed. Lines starting with ``#`` and blank lines are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

VLAN_MODES = ("access", "trunk", "native-tagged", "native-untagged", "dot1q-tunnel")
FAIL_MODES = ("secure", "standalone")
PORT_COLUMNS = ("tag", "trunks", "vlan_mode")


class ConfigSyntaxError(ValueError):
    """A line of configuration text that means nothing; names the line."""


@dataclass(frozen=True)
class PortVlans:
    """The VLAN columns of one port; None and () are unset."""

    tag: int | None = None
    trunks: tuple[int, ...] = ()
    vlan_mode: str | None = None

    def text(self) -> str:
        words = []
        if self.tag is not None:
            words.append(f"tag={self.tag}")
        if self.trunks:
            words.append("trunks=" + ",".join(str(v) for v in self.trunks))
        if self.vlan_mode is not None:
            words.append(f"vlan_mode={self.vlan_mode}")
        return " ".join(words)


@dataclass(frozen=True)
class BridgeConfig:
    """A bridge's whole legacy configuration."""

    bridge: str
    fail_mode: str | None
    ports: dict[str, PortVlans]

    def text(self) -> str:
        lines = [f"# hairpin_ovs configuration of bridge {self.bridge}"]
        lines.append(
            f"bridge {self.bridge}" + (f" fail_mode={self.fail_mode}" if self.fail_mode else "")
        )
        for name in sorted(self.ports, key=natural_key):
            words = self.ports[name].text()
            lines.append(f"port {name}" + (f" {words}" if words else ""))
        return "\n".join(lines) + "\n"


@dataclass
class ConfigText:
    """Parsed text: what each line sets (None clears), before merge or replace."""

    bridge: str | None = None
    bridge_columns: dict[str, str | None] = field(default_factory=dict)
    ports: dict[str, dict[str, object]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # port -> line number

    def merged_into(self, running: BridgeConfig) -> BridgeConfig:
        """The bridge after merging this text into ``running``."""
        self._check_bridge(running)
        ports = dict(running.ports)
        for name, columns in self.ports.items():
            self._check_port(running, name)
            ports[name] = replace(ports[name], **columns)  # type: ignore[arg-type]
        fail_mode = self.bridge_columns.get("fail_mode", running.fail_mode)
        return BridgeConfig(running.bridge, fail_mode, ports)

    def replacing(self, running: BridgeConfig) -> BridgeConfig:
        """The bridge after replacing ``running``'s configuration with this text."""
        self._check_bridge(running)
        ports = {name: PortVlans() for name in running.ports}
        for name, columns in self.ports.items():
            self._check_port(running, name)
            ports[name] = replace(PortVlans(), **columns)  # type: ignore[arg-type]
        return BridgeConfig(running.bridge, self.bridge_columns.get("fail_mode"), ports)

    def _check_bridge(self, running: BridgeConfig) -> None:
        if self.bridge is not None and self.bridge != running.bridge:
            raise ConfigSyntaxError(
                f"the text is for bridge {self.bridge}, the device is bridge {running.bridge}"
            )

    def _check_port(self, running: BridgeConfig, name: str) -> None:
        if name not in running.ports:
            raise ConfigSyntaxError(
                f"line {self.lines[name]}: bridge {running.bridge} has no port {name}"
            )


def natural_key(name: str) -> tuple[object, ...]:
    """Sorts p2 before p10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def parse_vlan(text: str, what: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 4095:
        raise ConfigSyntaxError(f"{what}: `{text}` is not a VLAN id (0..4095)")
    return int(text)


def parse_trunks(text: str, what: str) -> tuple[int, ...]:
    vlans: set[int] = set()
    for item in text.split(","):
        low, _, high = item.partition("-")
        first = parse_vlan(low, what)
        last = parse_vlan(high, what) if high else first
        if last < first:
            raise ConfigSyntaxError(f"{what}: range `{item}` runs backwards")
        vlans.update(range(first, last + 1))
    return tuple(sorted(vlans))


def parse(text: str) -> ConfigText:
    """Parses configuration text; raises :class:`ConfigSyntaxError` naming the line."""
    parsed = ConfigText()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, *words = line.split()
        where = f"line {number}"
        if not words:
            raise ConfigSyntaxError(f"{where}: `{keyword}` needs a name")
        name, settings = words[0], words[1:]
        pairs = []
        for word in settings:
            key, sep, value = word.partition("=")
            if not sep:
                raise ConfigSyntaxError(f"{where}: `{word}` is not COLUMN=VALUE")
            pairs.append((key, value))
        if keyword == "bridge":
            if parsed.bridge is not None:
                raise ConfigSyntaxError(f"{where}: a second bridge line")
            parsed.bridge = name
            for key, value in pairs:
                if key != "fail_mode":
                    raise ConfigSyntaxError(f"{where}: bridge column `{key}` is not managed")
                if value and value not in FAIL_MODES:
                    raise ConfigSyntaxError(
                        f"{where}: fail_mode `{value}` is not one of {FAIL_MODES}"
                    )
                parsed.bridge_columns[key] = value or None
        elif keyword == "port":
            if name in parsed.ports:
                raise ConfigSyntaxError(
                    f"{where}: port {name} again (first on line {parsed.lines[name]})"
                )
            columns: dict[str, object] = {}
            for key, value in pairs:
                what = f"{where}: port {name}"
                if key == "tag":
                    columns[key] = parse_vlan(value, what) if value else None
                elif key == "trunks":
                    columns[key] = parse_trunks(value, what) if value else ()
                elif key == "vlan_mode":
                    if value and value not in VLAN_MODES:
                        raise ConfigSyntaxError(
                            f"{what}: vlan_mode `{value}` is not one of {VLAN_MODES}"
                        )
                    columns[key] = value or None
                else:
                    raise ConfigSyntaxError(f"{what}: column `{key}` is not one of {PORT_COLUMNS}")
            parsed.ports[name] = columns
            parsed.lines[name] = number
        else:
            raise ConfigSyntaxError(f"{where}: `{keyword}` is neither `bridge` nor `port`")
    return parsed
