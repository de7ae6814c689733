"""Checks a deployment against what its devices and the server really have, before anything
changes, and works out each device's candidate configuration.

Refused, naming the port or VLAN and the line of the deployment file: an access or trunk port
the device does not have; an access port that is now a trunk (in several VLANs); a HARMLESS
VLAN that the device already uses on a port that is not this deployment's; a trunk interface
the server does not have. Said but not refused (warnings): a trunk port that carries other
VLANs now (``up`` leaves it carrying only HARMLESS's), and a port that carries every VLAN
(an Open vSwitch port with neither ``tag`` nor ``trunks``), which the HARMLESS VLANs would
reach.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hairpin.harmless import dialects
from hairpin.harmless.config import Deployment, LogicalPort, Trunk
from hairpin.harmless.hairpind import interface_exists


@dataclass
class Facts:
    """What a device said before the manager changed anything."""

    running: str
    interfaces: dict[str, dict[str, Any]]
    vlans: dict[int, dict[str, Any]]
    hostname: str = ""


@dataclass
class DevicePlan:
    """One device's part of a plan."""

    device: str
    dialect: str
    ports: list[LogicalPort]
    trunks: list[Trunk]
    candidate: str = ""
    diff: str = ""
    previous_vlans: dict[str, int | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def trunk_vlans(trunks: Sequence[Trunk], ports: Sequence[LogicalPort]) -> dict[str, list[int]]:
    """Each legacy trunk port's HARMLESS VLANs."""
    return {
        trunk.port: sorted(
            p.vlan for p in ports if p.trunk == trunk.name and p.device == trunk.device
        )
        for trunk in trunks
    }


def check_device(
    deployment: Deployment,
    plan: DevicePlan,
    facts: Facts,
    managed_already: Sequence[LogicalPort] = (),
) -> None:
    """Fills ``plan.problems``, ``plan.warnings`` and ``plan.previous_vlans`` from ``facts``.

    ``managed_already`` are ports of this deployment that are up (``add-port``): their VLANs
    and ports count as ours."""
    where = f"{deployment.path}"
    device = plan.device
    ours_by_vlan: dict[int, set[str]] = {}
    for port in [*plan.ports, *managed_already]:
        ours_by_vlan.setdefault(port.vlan, set()).add(port.port)
    trunk_ports = {t.port for t in deployment.device_trunks(device)} | {t.port for t in plan.trunks}

    for port in plan.ports:
        if port.port not in facts.interfaces:
            plan.problems.append(
                f"{where}:{port.line}: device {device} has no port {port.port}"
                + _known(facts.interfaces)
            )
            continue
        member_of = [
            vid for vid, vlan in facts.vlans.items() if port.port in vlan.get("interfaces", [])
        ]
        if len(member_of) > 1:
            plan.problems.append(
                f"{where}:{port.line}: port {device}:{port.port} is a trunk now "
                f"(VLANs {dialects.compress(member_of)}), not an access port"
            )
        plan.previous_vlans[port.port] = member_of[0] if member_of else None
    for trunk in plan.trunks:
        if trunk.port not in facts.interfaces:
            plan.problems.append(
                f"{where}:{trunk.line}: device {device} has no trunk port {trunk.port}"
                + _known(facts.interfaces)
            )
        elif not interface_exists(trunk.interface):
            plan.problems.append(
                f"{where}:{trunk.line}: this server has no interface {trunk.interface} "
                f"(the trunk from {device}:{trunk.port})"
            )
        carried = sorted(
            vid
            for vid, vlan in facts.vlans.items()
            if trunk.port in vlan.get("interfaces", []) and vid not in ours_by_vlan
        )
        if carried:
            plan.warnings.append(
                f"trunk port {device}:{trunk.port} carries VLANs {dialects.compress(carried)} "
                "now; after `up` it carries only the HARMLESS VLANs"
            )
    for port in plan.ports:
        users = set(facts.vlans.get(port.vlan, {}).get("interfaces", []))
        strangers = sorted(users - ours_by_vlan[port.vlan] - trunk_ports)
        if port.vlan in facts.vlans and (strangers or not users):
            who = f"on ports {', '.join(strangers)}" if strangers else "(defined, no ports)"
            plan.problems.append(
                f"{where}:{port.line}: VLAN {port.vlan} (for {device}:{port.port}) is already "
                f"used on device {device} {who}; give the port another `vlan` or move "
                "`vlan_base`"
            )
    if plan.dialect == "hairpin_ovs":
        tagged = {name for vlan in facts.vlans.values() for name in vlan.get("interfaces", [])}
        managed = {p.port for p in [*plan.ports, *managed_already]} | trunk_ports
        every = sorted(set(facts.interfaces) - tagged - managed - {facts.hostname})
        if every:
            plan.warnings.append(
                f"ports {', '.join(every)} of {device} have neither tag nor trunks, so they carry "
                "every VLAN, the HARMLESS ones too"
            )


def _known(interfaces: dict[str, Any]) -> str:
    names = sorted(interfaces)
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f" (it has {shown})" if names else ""


def render_takeover(plan: DevicePlan, all_ports: Sequence[LogicalPort]) -> str:
    """The merge candidate for ``plan.ports``; each trunk carries every VLAN of ``all_ports``."""
    vlans = trunk_vlans(plan.trunks, all_ports)
    access = [dialects.PortVlan(p.port, p.vlan) for p in plan.ports]
    return dialects.takeover(plan.dialect, access, vlans)
