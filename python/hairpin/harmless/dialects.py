"""What a legacy device is told, in its own configuration language.

Each dialect has two Jinja2 templates in ``templates/``: ``DIALECT_takeover.j2`` (create the
HARMLESS VLANs, put each access port in its VLAN, let the trunks carry them) and
``DIALECT_release.j2`` (put ports back in the VLAN they had before, narrow the trunks, remove
the VLANs). Both render merge candidates: ``up`` and ``add-port`` merge a takeover, and
``remove-port`` a release; ``down`` does not render anything, it replaces the whole
configuration with the backup taken before ``up``.

A trunk's VLAN list is always rendered whole (every vendor's "allowed vlan" replaces the list),
so adding a port renders only the new port but the trunk's full list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources

import jinja2

from hairpin.harmless.drivers.ovs_config import parse as parse_ovs

DIALECTS = ("hairpin_ovs", "eos", "ios", "nxos", "junos")


@dataclass(frozen=True)
class PortVlan:
    """An access port and the HARMLESS VLAN it goes into."""

    port: str
    vlan: int


@dataclass(frozen=True)
class ReleasedPort:
    """An access port leaving HARMLESS, and its access VLAN before (None: the default)."""

    port: str
    previous: int | None


def vlan_name(vlan: int) -> str:
    return f"harmless-{vlan}"


def compress(vlans: Iterable[int]) -> str:
    """``101-104,110`` for 101, 102, 103, 104, 110."""
    ordered = sorted(set(vlans))
    parts: list[str] = []
    start = prev = None
    for vlan in [*ordered, None]:
        if start is not None and (vlan is None or vlan != prev + 1):  # type: ignore[operator]
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if vlan is not None and start is None:
            start = vlan
        prev = vlan
    return ",".join(parts)


def _environment() -> jinja2.Environment:
    templates = resources.files("hairpin.harmless") / "templates"
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def _vlans(ids: Iterable[int]) -> list[dict[str, object]]:
    return [{"id": v, "name": vlan_name(v)} for v in sorted(set(ids))]


def _trunks(trunks: dict[str, Sequence[int]]) -> list[dict[str, object]]:
    return [
        {
            "port": port,
            "vlans": _vlans(vlans),
            "vlans_text": compress(vlans),
            "vlans_csv": ",".join(str(v) for v in sorted(vlans)),
        }
        for port, vlans in trunks.items()
    ]


def check_dialect(name: str) -> None:
    if name not in DIALECTS:
        raise ValueError(f"no configuration dialect `{name}` (known: {', '.join(DIALECTS)})")


def takeover(dialect: str, access: Sequence[PortVlan], trunks: dict[str, Sequence[int]]) -> str:
    """The merge candidate that puts ``access`` ports in their VLANs and has each trunk carry
    exactly its list."""
    check_dialect(dialect)
    template = _environment().get_template(f"{dialect}_takeover.j2")
    text = template.render(
        vlans=_vlans(p.vlan for p in access),
        access=[{"port": p.port, "vlan": p.vlan, "vlan_name": vlan_name(p.vlan)} for p in access],
        trunks=_trunks(trunks),
    )
    return text.rstrip() + "\n"


def release(
    dialect: str,
    ports: Sequence[ReleasedPort],
    vlans: Iterable[int],
    trunks: dict[str, Sequence[int]],
    backup: str,
) -> str:
    """The merge candidate that puts ``ports`` back as they were before ``up`` (``backup`` is
    the configuration then), narrows each trunk to its list and removes ``vlans``."""
    check_dialect(dialect)
    access: list[dict[str, object]] = []
    before = parse_ovs(backup) if dialect == "hairpin_ovs" else None
    for port in ports:
        entry: dict[str, object] = {"port": port.port, "previous": port.previous}
        if before is not None:
            # Open vSwitch: the port's line before HARMLESS, every column said (empty clears).
            columns = before.ports.get(port.port, {})
            entry["previous_columns"] = " ".join(
                f"{key}={_ovs_value(columns.get(key))}" for key in ("tag", "trunks", "vlan_mode")
            )
        access.append(entry)
    template = _environment().get_template(f"{dialect}_release.j2")
    text = template.render(access=access, vlans=_vlans(vlans), trunks=_trunks(trunks))
    return text.rstrip() + "\n"


def _ovs_value(value: object) -> str:
    if value is None or value == ():
        return ""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)
