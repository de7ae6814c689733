"""A NAPALM driver for an Open vSwitch bridge in standalone mode, the legacy 802.1Q switch of
these machines: access ports are ``tag=``, trunks ``trunks=`` with ``vlan_mode=trunk``.

It reaches the switch's OVSDB through ``ovs-vsctl --db=HOSTNAME`` (``unix:PATH``, a bare path,
or ``tcp:IP:PORT``) and its configuration is the text of :mod:`.ovs_config`. A commit is one
OVSDB transaction, so it applies whole or not at all; ``ovs-vsctl`` waits until ovs-vswitchd
has applied it. NAPALM finds the driver as platform ``hairpin_ovs``.

optional_args: ``bridge`` (needed when the switch has more than one), ``vsctl`` and ``appctl``
(the tools' paths), ``rundir`` (where ovs-vswitchd's control socket is, for the MAC table;
default: the directory of a ``unix:`` database socket).
"""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path
from typing import Any

from napalm.base import NetworkDriver, models
from napalm.base.exceptions import (
    CommitError,
    ConnectionException,
    MergeConfigException,
    ReplaceConfigException,
)

from hairpin.harmless.drivers.ovs_config import (
    BridgeConfig,
    ConfigSyntaxError,
    ConfigText,
    PortVlans,
    natural_key,
    parse,
)

VENDOR = "Open vSwitch"


class OvsError(Exception):
    """An ovs-vsctl or ovs-appctl command failed; carries its error output."""


def _datum(value: Any) -> Any:
    """An OVSDB JSON datum as Python: sets as lists, maps as dicts, atoms as they are."""
    if isinstance(value, list) and len(value) == 2 and value[0] in ("set", "map", "uuid"):
        kind, inner = value
        if kind == "set":
            return [_datum(v) for v in inner]
        if kind == "map":
            return {_datum(k): _datum(v) for k, v in inner}
        return inner
    return value


def _optional(value: Any) -> Any:
    """An OVSDB optional column (an empty set when unset) as a value or None."""
    value = _datum(value)
    return None if value == [] else value


def _rows(output: str) -> list[dict[str, Any]]:
    table = json.loads(output)
    return [dict(zip(table["headings"], row, strict=True)) for row in table["data"]]


class OvsDriver(NetworkDriver):  # type: ignore[misc]
    """NAPALM's NetworkDriver over one Open vSwitch bridge."""

    def __init__(
        self,
        hostname: str,
        username: str = "",
        password: str = "",
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        args = optional_args or {}
        self.hostname = hostname
        self.username = username
        self.password = password
        self.timeout = int(timeout)
        self.db = hostname if ":" in hostname else f"unix:{hostname}"
        self.bridge: str | None = args.get("bridge")
        self.vsctl_path: str = args.get("vsctl", "ovs-vsctl")
        self.appctl_path: str = args.get("appctl", "ovs-appctl")
        rundir = args.get("rundir")
        if rundir is None and self.db.startswith("unix:"):
            rundir = str(Path(self.db[len("unix:") :]).parent)
        self.rundir = Path(rundir) if rundir else None
        self.candidate: ConfigText | None = None
        self.candidate_replaces = False
        self.before_commit: str | None = None
        self.opened = False

    # -- the tools -----------------------------------------------------------------------

    def _run(self, args: list[str]) -> str:
        try:
            result = subprocess.run(
                args, capture_output=True, text=True, timeout=self.timeout + 5, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise OvsError(f"{args[0]} timed out after {self.timeout} s") from e
        except OSError as e:
            raise OvsError(f"cannot run {args[0]}: {e.strerror}") from e
        if result.returncode != 0:
            raise OvsError(result.stderr.strip() or f"{args[0]} exited {result.returncode}")
        return result.stdout

    def _vsctl(self, *args: str) -> str:
        return self._run([self.vsctl_path, f"--db={self.db}", f"--timeout={self.timeout}", *args])

    def _transact(self, commands: list[list[str]]) -> None:
        """Runs ``commands`` (each an ovs-vsctl command) as one OVSDB transaction."""
        args: list[str] = []
        for command in commands:
            args += ["--", *command]
        self._vsctl(*args)

    def _require_bridge(self) -> str:
        if not self.opened or self.bridge is None:
            raise ConnectionException(f"{self.hostname}: not open")
        return self.bridge

    # -- connection ----------------------------------------------------------------------

    def open(self) -> None:
        try:
            bridges = self._vsctl("list-br").split()
        except OvsError as e:
            raise ConnectionException(f"{self.hostname}: {e}") from e
        if self.bridge is None:
            if len(bridges) != 1:
                raise ConnectionException(
                    f"{self.hostname}: {len(bridges)} bridges ({', '.join(bridges) or 'none'}); "
                    "say which in optional_args bridge"
                )
            self.bridge = bridges[0]
        elif self.bridge not in bridges:
            raise ConnectionException(f"{self.hostname}: no bridge {self.bridge}")
        self.opened = True

    def close(self) -> None:
        self.opened = False

    def is_alive(self) -> models.AliveDict:
        try:
            self._vsctl("get", "Open_vSwitch", ".", "_uuid")
        except OvsError:
            return {"is_alive": False}
        return {"is_alive": self.opened}

    # -- reading -------------------------------------------------------------------------

    def _read(self) -> tuple[BridgeConfig, dict[str, dict[str, Any]]]:
        """The bridge's configuration and its interfaces' rows, in one ovs-vsctl call."""
        bridge = self._require_bridge()
        try:
            output = self._vsctl(
                "--format=json",
                "--",
                "--columns=name,ports,fail_mode,datapath_id",
                "list",
                "Bridge",
                bridge,
                "--",
                "--columns=_uuid,name,tag,trunks,vlan_mode,interfaces",
                "list",
                "Port",
                "--",
                "--columns=_uuid,name,link_state,admin_state,link_speed,mtu,mac_in_use,ofport",
                "list",
                "Interface",
            )
        except OvsError as e:
            raise ConnectionException(f"{self.hostname}: {e}") from e
        bridge_text, ports_text, interfaces_text = output.splitlines()[:3]
        (bridge_row,) = _rows(bridge_text)
        listed = _datum(bridge_row["ports"])
        own = {listed} if isinstance(listed, str) else set(listed)
        interfaces = {_datum(row["_uuid"]): row for row in _rows(interfaces_text)}
        ports: dict[str, PortVlans] = {}
        port_interfaces: dict[str, dict[str, Any]] = {}
        for row in _rows(ports_text):
            if _datum(row["_uuid"]) not in own:
                continue
            trunks = _datum(row["trunks"])
            trunks = [trunks] if isinstance(trunks, int) else trunks
            ports[row["name"]] = PortVlans(
                tag=_optional(row["tag"]),
                trunks=tuple(sorted(trunks)),
                vlan_mode=_optional(row["vlan_mode"]),
            )
            iface_uuid = _datum(row["interfaces"])
            if isinstance(iface_uuid, str) and iface_uuid in interfaces:
                port_interfaces[row["name"]] = interfaces[iface_uuid]
        config = BridgeConfig(bridge, _optional(bridge_row["fail_mode"]), ports)
        port_interfaces["__bridge__"] = {"datapath_id": _optional(bridge_row["datapath_id"])}
        return config, port_interfaces

    def running(self) -> BridgeConfig:
        return self._read()[0]

    def get_config(
        self,
        retrieve: str = "all",
        full: bool = False,
        sanitized: bool = False,
        format: str = "text",
    ) -> models.ConfigDict:
        running = self.running().text()
        candidate = self._target(self.running()).text() if self.candidate is not None else ""
        result: models.ConfigDict = {"running": "", "candidate": "", "startup": ""}
        if retrieve in ("all", "running"):
            result["running"] = running
        if retrieve in ("all", "candidate"):
            result["candidate"] = candidate
        if retrieve in ("all", "startup"):
            # OVSDB keeps what is committed: the startup configuration is the running one.
            result["startup"] = running
        return result

    def get_facts(self) -> models.FactsDict:
        config, interfaces = self._read()
        version = self._vsctl("get", "Open_vSwitch", ".", "ovs_version").strip().strip('"')
        if not version or version == "[]":
            version = self._run([self.vsctl_path, "--version"]).splitlines()[0].split()[-1]
        dpid = interfaces["__bridge__"]["datapath_id"] or ""
        return {
            "uptime": -1.0,
            "vendor": VENDOR,
            "os_version": str(version),
            "serial_number": str(dpid),
            "model": "standalone bridge",
            "hostname": config.bridge,
            "fqdn": config.bridge,
            "interface_list": sorted(config.ports, key=natural_key),
        }

    def get_interfaces(self) -> dict[str, models.InterfaceDict]:
        _, interfaces = self._read()
        result: dict[str, models.InterfaceDict] = {}
        for name, row in interfaces.items():
            if name == "__bridge__":
                continue
            speed = _optional(row["link_speed"])
            mtu = _optional(row["mtu"])
            result[name] = {
                "is_up": _optional(row["link_state"]) == "up",
                "is_enabled": _optional(row["admin_state"]) == "up",
                "description": "",
                "last_flapped": -1.0,
                "speed": float(speed) / 1e6 if speed else 0.0,
                "mtu": int(mtu) if mtu else 0,
                "mac_address": str(_optional(row["mac_in_use"]) or ""),
            }
        return result

    def get_vlans(self) -> dict[int, models.VlanDict]:
        """Every VLAN a port names: an access port's tag, a trunk's list. A port with neither
        carries every VLAN and is listed under none."""
        members: dict[int, list[str]] = {}
        for name, port in self.running().ports.items():
            vids = set(port.trunks)
            if port.tag is not None:
                vids.add(port.tag)
            for vid in vids:
                members.setdefault(vid, []).append(name)
        return {
            vid: {"name": f"VLAN{vid:04d}", "interfaces": sorted(names, key=natural_key)}
            for vid, names in sorted(members.items())
        }

    def get_mac_address_table(self) -> list[models.MACAdressTable]:
        bridge = self._require_bridge()
        if self.rundir is None:
            raise NotImplementedError("the MAC table needs ovs-vswitchd's rundir (optional_args)")
        pid = (self.rundir / "ovs-vswitchd.pid").read_text().strip()
        target = str(self.rundir / f"ovs-vswitchd.{pid}.ctl")
        output = self._run([self.appctl_path, "-t", target, "fdb/show", bridge])
        _, interfaces = self._read()
        by_ofport = {
            str(_optional(row.get("ofport"))): name
            for name, row in interfaces.items()
            if name != "__bridge__"
        }
        table: list[models.MACAdressTable] = []
        for line in output.splitlines()[1:]:
            words = line.split()
            if len(words) != 4:
                continue
            port, vlan, mac, _age = words
            table.append(
                {
                    "mac": mac.upper(),
                    "interface": by_ofport.get(port, port),
                    "vlan": int(vlan),
                    "static": False,
                    "active": True,
                    "moves": -1,
                    "last_move": -1.0,
                }
            )
        return table

    # -- candidate and commit ------------------------------------------------------------

    def _load(self, filename: str | None, config: str | None, replaces: bool) -> None:
        error = ReplaceConfigException if replaces else MergeConfigException
        if filename is not None:
            config = Path(filename).read_text()
        if config is None:
            raise error("no configuration given")
        try:
            candidate = parse(config)
            running = self.running()
            candidate.replacing(running) if replaces else candidate.merged_into(running)
        except ConfigSyntaxError as e:
            raise error(f"{self.hostname}: {e}") from e
        self.candidate = candidate
        self.candidate_replaces = replaces

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self._load(filename, config, replaces=False)

    def load_replace_candidate(
        self, filename: str | None = None, config: str | None = None
    ) -> None:
        self._load(filename, config, replaces=True)

    def _target(self, running: BridgeConfig) -> BridgeConfig:
        assert self.candidate is not None
        if self.candidate_replaces:
            return self.candidate.replacing(running)
        return self.candidate.merged_into(running)

    def compare_config(self) -> str:
        if self.candidate is None:
            return ""
        running = self.running()
        diff = difflib.unified_diff(
            running.text().splitlines(),
            self._target(running).text().splitlines(),
            fromfile="running",
            tofile="candidate",
            lineterm="",
        )
        return "\n".join(diff)

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if revert_in is not None:
            raise NotImplementedError("hairpin_ovs has no commit confirm")
        if self.candidate is None:
            raise CommitError(f"{self.hostname}: nothing to commit")
        running = self.running()
        try:
            target = self._target(running)
        except ConfigSyntaxError as e:
            raise CommitError(f"{self.hostname}: {e}") from e
        commands = transaction(running, target)
        if commands:
            try:
                self._transact(commands)
            except OvsError as e:
                raise CommitError(f"{self.hostname}: {e}") from e
        self.before_commit = running.text()
        self.candidate = None

    def discard_config(self) -> None:
        self.candidate = None

    def rollback(self) -> None:
        if self.before_commit is None:
            raise CommitError(f"{self.hostname}: no commit to roll back")
        self.load_replace_candidate(config=self.before_commit)
        self.commit_config()
        self.before_commit = None


def transaction(running: BridgeConfig, target: BridgeConfig) -> list[list[str]]:
    """The ovs-vsctl commands that turn ``running`` into ``target``."""
    commands: list[list[str]] = []
    if target.fail_mode != running.fail_mode:
        if target.fail_mode is None:
            commands.append(["del-fail-mode", running.bridge])
        else:
            commands.append(["set-fail-mode", running.bridge, target.fail_mode])
    for name in sorted(target.ports, key=natural_key):
        old, new = running.ports[name], target.ports[name]
        sets: list[str] = []
        clears: list[str] = []
        if new.tag != old.tag:
            if new.tag is not None:
                sets.append(f"tag={new.tag}")
            else:
                clears.append("tag")
        if new.trunks != old.trunks:
            if new.trunks:
                sets.append("trunks=" + ",".join(str(v) for v in new.trunks))
            else:
                clears.append("trunks")
        if new.vlan_mode != old.vlan_mode:
            if new.vlan_mode is not None:
                sets.append(f"vlan_mode={new.vlan_mode}")
            else:
                clears.append("vlan_mode")
        if sets:
            commands.append(["set", "Port", name, *sets])
        if clears:
            commands.append(["clear", "Port", name, *clears])
    return commands
