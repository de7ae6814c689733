"""Keeps the deployment file in step with ``add-port`` and ``remove-port``, the way a package
manager's ``add`` edits its project file: comments and layout stay (ruamel.yaml round trip).

An added port is written with its VLAN, OpenFlow number and name. Removing a port would shift
the VLANs and numbers that other ports get from their position, so every remaining port gets
its VLAN and number written out: the file then describes the running deployment exactly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from hairpin.harmless.config import LogicalPort, Trunk


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _write(path: Path, document: Any) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w") as f:
        _yaml().dump(document, f)
    os.replace(temporary, path)


def _entry_port(entry: Any) -> str:
    return entry if isinstance(entry, str) else str(entry["port"])


def _pinned(port: LogicalPort, entry: Any) -> CommentedMap:
    mapping = CommentedMap() if isinstance(entry, str) else entry
    if isinstance(entry, str):
        mapping["port"] = entry
    mapping.setdefault("vlan", port.vlan)
    mapping.setdefault("of_port", port.of_port)
    return mapping


def add_port(path: Path, port: LogicalPort, trunk: Trunk) -> None:
    document = _yaml().load(path.read_text())
    for entry in document["devices"][port.device]["trunks"]:
        if entry["port"] == trunk.port:
            added = CommentedMap()
            added["port"] = port.port
            added["vlan"] = port.vlan
            added["of_port"] = port.of_port
            added["name"] = port.name
            entry["access_ports"].append(added)
            break
    _write(path, document)


def remove_port(path: Path, gone: LogicalPort, remaining: Sequence[LogicalPort]) -> None:
    document = _yaml().load(path.read_text())
    by_key = {(p.device, p.port): p for p in remaining}
    for device, settings in document["devices"].items():
        for trunk in settings["trunks"]:
            ports = trunk["access_ports"]
            for index in range(len(ports) - 1, -1, -1):
                if device == gone.device and _entry_port(ports[index]) == gone.port:
                    del ports[index]
            for index, entry in enumerate(ports):
                key = (device, _entry_port(entry))
                if key in by_key:
                    ports[index] = _pinned(by_key[key], entry)
    _write(path, document)
