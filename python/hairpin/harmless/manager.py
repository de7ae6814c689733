"""The manager's commands: plan, up, down, status, add-port and remove-port.

``up`` is all or nothing, in an order that changes the devices last: check everything (devices
reachable, ports there, VLANs free, server interfaces there, tools found) and stage each
device's candidate; start ``hairpind`` and set its ports' link states; save each device's
running configuration; commit every device; check that the VLANs took, that every trunk shows
traffic and that ``hairpind`` still runs. A failure before the commits changes no device; a
failure from the commits on puts every device back from its backup (a replace and a commit,
then a compare that must come out empty) and stops ``hairpind``. If putting a device back
fails, the state stays on disk so that ``down`` can try again, and the command says which
device and which backup.

Exit codes (see :mod:`.cli`): 2 refused before any change, 1 failed and put back, 3 failed and
could not put back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from hairpin.harmless import dialects, hairpind, yamledit
from hairpin.harmless.config import MAX_PORT_NAME, Deployment, LogicalPort, Trunk
from hairpin.harmless.hairpind import Daemon, DaemonError
from hairpin.harmless.inventory import Fleet, Outcome, dialect_name
from hairpin.harmless.plan import DevicePlan, Facts, check_device, render_takeover, trunk_vlans
from hairpin.harmless.state import (
    Backup,
    DaemonState,
    DeploymentState,
    DeviceState,
    StateDir,
    save_backup,
)


class Refused(Exception):
    """Nothing was changed: the command cannot go ahead (one problem per line)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class Failed(Exception):
    """The command failed part-way and everything it changed was put back."""


class RevertFailed(Exception):
    """The command failed and could not put everything back: a person must look."""


# -- device steps (each a function of one NAPALM driver) ------------------------------------


def gather(driver: Any, device: str) -> Facts:
    interfaces = driver.get_interfaces()
    vlans = {int(vid): info for vid, info in driver.get_vlans().items()}
    running = driver.get_config(retrieve="running")["running"]
    hostname = driver.get_facts().get("hostname", "")
    return Facts(running=running, interfaces=interfaces, vlans=vlans, hostname=hostname)


def stage(candidate: str) -> Callable[[Any, str], str]:
    def step(driver: Any, device: str) -> str:
        driver.load_merge_candidate(config=candidate)
        return str(driver.compare_config())

    return step


def discard(driver: Any, device: str) -> None:
    driver.discard_config()


def commit(driver: Any, device: str) -> None:
    driver.commit_config()


def restore(text: str) -> Callable[[Any, str], str]:
    """Replace the configuration with ``text``, commit, and prove nothing is left to change."""

    def step(driver: Any, device: str) -> str:
        driver.load_replace_candidate(config=text)
        diff = str(driver.compare_config())
        if diff.strip():
            driver.commit_config()
        else:
            driver.discard_config()
        driver.load_replace_candidate(config=text)
        left = str(driver.compare_config())
        driver.discard_config()
        if left.strip():
            raise RevertFailed(
                f"after the replace, {device} still differs from the backup:\n{left}"
            )
        return diff

    return step


def get_vlans(driver: Any, device: str) -> dict[int, dict[str, Any]]:
    return {int(vid): info for vid, info in driver.get_vlans().items()}


def get_interfaces(driver: Any, device: str) -> dict[str, dict[str, Any]]:
    return dict(driver.get_interfaces())


def _error(outcome: Outcome[Any]) -> str:
    error = outcome.error
    return f"{type(error).__name__}: {error}" if error is not None else ""


# -- the manager ----------------------------------------------------------------------------


@dataclass
class Manager:
    """Commands over one deployment file; messages go to ``out``."""

    deployment: Deployment
    out: TextIO

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    @property
    def state_dir(self) -> StateDir:
        return StateDir(self.deployment.state_dir)

    # -- plan --------------------------------------------------------------------------

    def _plans(self, fleet: Fleet) -> tuple[list[DevicePlan], dict[str, Facts]]:
        """Reads every device, checks the deployment against it and stages its candidate."""
        problems: list[str] = []
        plans: list[DevicePlan] = []
        facts_of: dict[str, Facts] = {}
        gathered = fleet.run(gather)
        for device, outcome in gathered.items():
            if not outcome.ok:
                problems.append(
                    f"{self.deployment.path}: device {device} ({fleet.address(device)}) "
                    f"unreachable: {_error(outcome)}"
                )
                continue
            assert outcome.value is not None
            plan = DevicePlan(
                device=device,
                dialect=dialect_name(self.deployment, device, fleet.inventory),
                ports=self.deployment.device_ports(device),
                trunks=self.deployment.device_trunks(device),
            )
            check_device(self.deployment, plan, outcome.value)
            problems += plan.problems
            plans.append(plan)
            facts_of[device] = outcome.value
        if problems:
            raise Refused(problems)
        for plan in plans:
            plan.candidate = render_takeover(plan, self.deployment.ports)
        candidates = {plan.device: plan.candidate for plan in plans}
        staged = fleet.run(lambda driver, device: stage(candidates[device])(driver, device))
        for plan in plans:
            outcome = staged[plan.device]
            if outcome.ok:
                plan.diff = str(outcome.value)
            else:
                problems.append(f"device {plan.device} refused the candidate: {_error(outcome)}")
        if problems:
            fleet.run(discard)
            raise Refused(problems)
        return plans, facts_of

    def _show_plan(self, plans: Sequence[DevicePlan]) -> None:
        self.say(
            f"deployment {self.deployment.name}: datapath 0x{self.deployment.datapath_id:016x}"
        )
        self.say(self.port_table(self.deployment.ports))
        for plan in plans:
            for warning in plan.warnings:
                self.say(f"warning: {warning}")
        for plan in plans:
            self.say(f"\n--- device {plan.device} ({plan.dialect}) candidate:")
            self.say(plan.candidate.rstrip())
            self.say(f"--- device {plan.device} diff:")
            self.say(plan.diff.rstrip() or "(no change)")

    @staticmethod
    def port_table(ports: Sequence[LogicalPort], links: dict[int, str] | None = None) -> str:
        rows = [("OF", "NAME", "DEVICE", "PORT", "VLAN", "TRUNK") + (("LINK",) if links else ())]
        for p in sorted(ports, key=lambda p: p.of_port):
            row = (str(p.of_port), p.name, p.device, p.port, str(p.vlan), p.trunk)
            rows.append(row + ((links.get(p.of_port, "?"),) if links else ()))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        )

    def plan(self) -> None:
        """Prints the VLAN map and each device's candidate and diff; changes nothing."""
        self._server_problems()
        fleet = Fleet(self.deployment)
        try:
            plans, _ = self._plans(fleet)
            self._show_plan(plans)
            fleet.run(discard)
        finally:
            fleet.close()

    def _server_problems(self) -> tuple[Path, Path]:
        try:
            return hairpind.tools(self.deployment)
        except DaemonError as e:
            raise Refused([f"{self.deployment.path}: switch: {e}"]) from e

    # -- up ----------------------------------------------------------------------------

    def up(self) -> None:
        directory = self.state_dir
        with directory.locked():
            existing = directory.load()
            if existing is not None:
                raise Refused(
                    [
                        f"deployment {self.deployment.name} is {existing.phase} since "
                        f"{_when(existing.since)}; `down` first"
                    ]
                )
            binary, hairpinctl = self._server_problems()
            fleet = Fleet(self.deployment)
            try:
                self._up(fleet, directory, binary, hairpinctl)
            finally:
                fleet.close()

    def _up(self, fleet: Fleet, directory: StateDir, binary: Path, hairpinctl: Path) -> None:
        deployment = self.deployment
        plans, facts = self._plans(fleet)
        self._show_plan(plans)

        daemon = None
        try:
            daemon = self._start_daemon(binary, deployment.ports)
            self._push_links(hairpinctl, deployment.ports, facts)
        except BaseException as e:  # DaemonError, or Ctrl-C while hairpind starts
            exited = daemon is not None and not daemon.alive()
            if daemon is not None:
                daemon.stop()
            fleet.run(discard)
            if not isinstance(e, DaemonError):
                raise
            if exited and daemon is not None:
                # It answered, then exited (a listener it could not open, say): its log says why.
                e = DaemonError(f"hairpind exited after starting; its log:\n{daemon.log_tail()}")
            raise Failed(f"{e}\nno device was changed") from e

        devices: dict[str, DeviceState] = {}
        for plan in plans:
            backup = save_backup(
                directory.path,
                plan.device,
                facts[plan.device].running,
                {"address": fleet.address(plan.device), "reason": "up"},
            )
            self.say(f"saved {plan.device}'s running configuration to {backup.path}")
            devices[plan.device] = DeviceState(
                plan.dialect, str(backup.path), backup.sha256, plan.previous_vlans
            )
        state = DeploymentState(
            name=deployment.name,
            config_path=str(deployment.path),
            config_sha256=deployment.text_sha256,
            phase="committing",
            since=time.time(),
            devices=devices,
            trunks=deployment.trunks,
            ports=deployment.ports,
            hairpind=_daemon_state(daemon),
        )
        directory.save(state)

        try:
            self._commit_and_check(fleet, plans, daemon)
        except BaseException as e:  # whatever stopped `up`, put things back
            reason = str(e) if isinstance(e, Failed) else f"{type(e).__name__}: {e}"
            self._put_back(fleet, state, directory, daemon, reason)
        state.phase = "up"
        directory.save(state)
        self.say(
            f"deployment {deployment.name} is up: hairpind pid {daemon.pid}, "
            f"{len(deployment.ports)} ports"
        )

    def _start_daemon(self, binary: Path, ports: Sequence[LogicalPort]) -> Daemon:
        deployment = self.deployment
        path = self.state_dir.path
        config = path / "hairpind.toml"
        config.write_text(hairpind.render_toml(deployment, deployment.trunks, ports))
        daemon = hairpind.start(
            binary,
            config,
            path / "hairpind.log",
            deployment.control_socket,
            deployment.spec.checks.start_timeout,
        )
        self.say(f"hairpind started (pid {daemon.pid}, settings {config})")
        return daemon

    def _push_links(
        self, hairpinctl: Path, ports: Sequence[LogicalPort], facts: dict[str, Facts]
    ) -> None:
        for port in ports:
            interface = facts[port.device].interfaces.get(port.port, {})
            speed = port.speed_mbps or int(interface.get("speed") or 0) or None
            hairpind.set_port_link(
                hairpinctl,
                self.deployment.control_socket,
                port.of_port,
                bool(interface.get("is_up")),
                speed,
            )

    def _commit_and_check(self, fleet: Fleet, plans: Sequence[DevicePlan], daemon: Daemon) -> None:
        committed = fleet.run(commit, [p.device for p in plans])
        failures = [f"commit on {d} failed: {_error(o)}" for d, o in committed.items() if not o.ok]
        if failures:
            raise Failed("\n".join(failures))
        for plan in plans:
            self.say(f"committed {plan.device}")
        self._check_vlans(fleet, [p.device for p in plans])
        self._check_trunks()
        if not daemon.alive():
            raise Failed(f"hairpind exited; its log:\n{daemon.log_tail()}")

    def _check_vlans(self, fleet: Fleet, devices: Sequence[str]) -> None:
        """The devices say each managed port is in its VLAN and each trunk carries it."""
        problems = []
        for device, outcome in fleet.run(get_vlans, devices).items():
            if not outcome.ok:
                problems.append(f"cannot read {device}'s VLANs after the commit: {_error(outcome)}")
                continue
            assert outcome.value is not None
            vlans = outcome.value
            for port in self.deployment.device_ports(device):
                members = set(vlans.get(port.vlan, {}).get("interfaces", []))
                trunk = next(t for t in self.deployment.trunks if t.name == port.trunk)
                missing = {port.port, trunk.port} - members
                if missing:
                    lacking = ", ".join(sorted(missing))
                    problems.append(
                        f"after the commit, {device}'s VLAN {port.vlan} lacks {lacking}"
                    )
        if problems:
            raise Failed("\n".join(problems))

    def _check_trunks(self) -> None:
        """Every trunk interface receives frames within the deadline (a cable to the wrong
        port, or none, shows as silence)."""
        timeout = self.deployment.spec.checks.trunk_traffic_timeout
        if timeout == 0:
            return
        trunks = {t.interface: t for t in self.deployment.trunks}
        start = {name: hairpind.rx_packets(name) or 0 for name in trunks}
        silent = set(trunks)
        deadline = time.monotonic() + timeout
        while silent and time.monotonic() < deadline:
            silent = {n for n in silent if (hairpind.rx_packets(n) or 0) <= start[n]}
            if silent:
                time.sleep(0.1)
        if silent:
            names = ", ".join(
                f"{n} (from {trunks[n].device}:{trunks[n].port})" for n in sorted(silent)
            )
            raise Failed(f"no traffic on trunk {names} within {timeout:g} s: check the cabling")
        self.say("traffic seen on every trunk")

    def _put_back(
        self,
        fleet: Fleet,
        state: DeploymentState,
        directory: StateDir,
        daemon: Daemon | None,
        reason: str,
    ) -> None:
        """Restores every device from its backup and stops hairpind; raises Failed (all put
        back) or RevertFailed (some not: the state stays for `down`)."""
        self.say(f"failed: {reason}\nputting the devices back from their backups")
        problems = self._restore_devices(fleet, state)
        if daemon is not None:
            daemon.stop()
        if problems:
            state.hairpind = None
            directory.save(state)
            raise RevertFailed(
                f"{reason}\nputting back failed:\n"
                + "\n".join(problems)
                + "\n`hairpin-harmless down` tries again"
            )
        directory.clear()
        raise Failed(f"{reason}\nevery device was put back as it was")

    def _restore_devices(self, fleet: Fleet, state: DeploymentState) -> list[str]:
        texts: dict[str, str] = {}
        problems = []
        for device, info in state.devices.items():
            try:
                texts[device] = info.original.read()
            except Exception as e:  # reported; the other devices go on
                problems.append(f"{device}: backup {info.backup}: {e}")
        outcomes: dict[str, Outcome[str]] = {}
        for device, text in texts.items():
            outcomes.update(fleet.run(restore(text), [device]))
        for device, outcome in outcomes.items():
            if outcome.ok:
                self.say(f"put {device} back from {state.devices[device].backup}")
            else:
                problems.append(
                    f"{device}: {_error(outcome)} (backup {state.devices[device].backup})"
                )
        return problems

    # -- down --------------------------------------------------------------------------

    def down(self) -> None:
        directory = self.state_dir
        with directory.locked():
            state = directory.load()
            if state is None:
                self.say(f"deployment {self.deployment.name} is not up")
                return
            fleet = Fleet(self.deployment, state.devices)
            try:
                problems = self._restore_devices(fleet, state)
            finally:
                fleet.close()
            if problems:
                raise RevertFailed("\n".join(problems))
            if state.hairpind is not None:
                _daemon(state.hairpind).stop()
                self.say(f"hairpind (pid {state.hairpind.pid}) stopped")
            directory.clear()
            self.say(f"deployment {self.deployment.name} is down")

    # -- status ------------------------------------------------------------------------

    def status(self) -> bool:
        """Prints the deployment's health; True when everything is as ``up`` left it."""
        state = self.state_dir.load()
        if state is None:
            self.say(f"deployment {self.deployment.name} is not up")
            return True
        healthy = state.phase == "up"
        self.say(f"deployment {state.name}: {state.phase} since {_when(state.since)}")
        if state.config_sha256 != self.deployment.text_sha256:
            self.say(
                f"note: {self.deployment.path} changed since `up`; the running deployment is shown"
            )
        if state.hairpind is not None:
            daemon = _daemon(state.hairpind)
            alive = daemon.alive()
            healthy &= alive
            self.say(
                f"hairpind pid {daemon.pid}: "
                + ("running" if alive else "NOT RUNNING")
                + f", management socket {daemon.control_socket}"
            )
        fleet = Fleet(self.deployment, state.devices)
        links: dict[int, str] = {}
        try:
            read = fleet.run(lambda d, n: (get_vlans(d, n), get_interfaces(d, n)))
        finally:
            fleet.close()
        for device, outcome in read.items():
            if not outcome.ok:
                healthy = False
                self.say(f"device {device}: UNREACHABLE: {_error(outcome)}")
                continue
            assert outcome.value is not None
            vlans, interfaces = outcome.value
            drift = []
            for port in (p for p in state.ports if p.device == device):
                members = vlans.get(port.vlan, {}).get("interfaces", [])
                if port.port not in members:
                    drift.append(f"{port.port} not in VLAN {port.vlan}")
                links[port.of_port] = "up" if interfaces.get(port.port, {}).get("is_up") else "down"
            healthy &= not drift
            self.say(
                f"device {device}: reachable, "
                + ("VLANs in place" if not drift else "DRIFT: " + "; ".join(drift))
                + f", backup {state.devices[device].backup}"
            )
        self.say(self.port_table(state.ports, links))
        return healthy

    # -- add-port and remove-port ------------------------------------------------------

    def _running_state(self) -> DeploymentState:
        state = self.state_dir.load()
        if state is None or state.phase != "up":
            raise Refused([f"deployment {self.deployment.name} is not up"])
        return state

    def add_port(
        self,
        device: str,
        port: str,
        vlan: int | None = None,
        of_port: int | None = None,
        name: str | None = None,
        trunk_port: str | None = None,
    ) -> None:
        directory = self.state_dir
        with directory.locked():
            state = self._running_state()
            if device not in state.devices:
                raise Refused([f"device {device} is not part of deployment {state.name}"])
            if any(p.device == device and p.port == port for p in state.ports):
                raise Refused([f"{device}:{port} is managed already"])
            trunk = _choose_trunk(state.trunks, device, trunk_port)
            new = LogicalPort(
                device=device,
                port=port,
                vlan=vlan if vlan is not None else _free_vlan(self.deployment, state, device),
                of_port=of_port if of_port is not None else _free_of_port(state.ports),
                name=name or _free_name(state.ports, device, port),
                trunk=trunk.name,
                speed_mbps=None,
            )
            problems = _port_problems(state.ports, new)
            if problems:
                raise Refused(problems)
            ports = [*state.ports, new]
            self._change_ports(
                state,
                ports,
                device,
                DevicePlan(device, state.devices[device].dialect, [new], [trunk]),
                reason="add-port",
            )
            yamledit.add_port(self.deployment.path, new, trunk)
            self._refresh_config_hash(state)
            self.say(
                f"{device}:{port} is OpenFlow port {new.of_port} `{new.name}` on VLAN {new.vlan}"
            )

    def remove_port(self, device: str, port: str) -> None:
        directory = self.state_dir
        with directory.locked():
            state = self._running_state()
            gone = next((p for p in state.ports if p.device == device and p.port == port), None)
            if gone is None:
                raise Refused([f"{device}:{port} is not a port of deployment {state.name}"])
            ports = [p for p in state.ports if p is not gone]
            if not any(p.trunk == gone.trunk for p in ports):
                raise Refused(
                    [f"{device}:{port} is the last port on trunk {gone.trunk}; `down` releases it"]
                )
            trunk = next(t for t in state.trunks if t.name == gone.trunk)
            plan = DevicePlan(device, state.devices[device].dialect, [], [trunk])
            plan.candidate = dialects.release(
                plan.dialect,
                [dialects.ReleasedPort(port, state.devices[device].previous_vlans.get(port))],
                [gone.vlan],
                trunk_vlans([trunk], ports),
                state.devices[device].original.read(),
            )
            self._change_ports(state, ports, device, plan, reason="remove-port")
            yamledit.remove_port(self.deployment.path, gone, ports)
            self._refresh_config_hash(state)
            self.say(f"{device}:{port} is back under the legacy switch")

    def _change_ports(
        self,
        state: DeploymentState,
        ports: list[LogicalPort],
        device: str,
        plan: DevicePlan,
        reason: str,
    ) -> None:
        """Commits ``plan`` on ``device`` and restarts hairpind with ``ports``; on a failure
        puts the device back from a fresh backup and hairpind back as it was."""
        binary, hairpinctl = self._server_problems()
        fleet = Fleet(self.deployment, [device])
        try:
            gathered = fleet.run(gather)[device]
            if not gathered.ok:
                raise Refused([f"device {device} unreachable: {_error(gathered)}"])
            facts = gathered.value
            assert facts is not None
            if reason == "add-port":
                managed = [p for p in state.ports if p.device == device]
                check_device(self.deployment, plan, facts, managed_already=managed)
                if plan.problems:
                    raise Refused(plan.problems)
                plan.candidate = render_takeover(plan, ports)
                state.devices[device].previous_vlans.update(plan.previous_vlans)
            staged = fleet.run(stage(plan.candidate))[device]
            if not staged.ok:
                raise Refused([f"device {device} refused the candidate: {_error(staged)}"])
            self.say(f"--- device {device} diff:\n{str(staged.value).rstrip() or '(no change)'}")
            backup = save_backup(
                self.state_dir.path,
                device,
                facts.running,
                {"address": fleet.address(device), "reason": reason},
            )
            self.say(f"saved {device}'s running configuration to {backup.path}")
            committed = fleet.run(commit)[device]
            if not committed.ok:
                self._undo_device(
                    fleet, device, backup, f"commit on {device} failed: {_error(committed)}"
                )
            old = state.hairpind
            if old is not None:
                _daemon(old).stop()
            try:
                daemon = self._start_daemon(binary, ports)
                links = {**self._facts_for(state, device), device: facts}
                self._push_links(hairpinctl, ports, links)
            except DaemonError as e:
                try:
                    self._undo_device(fleet, device, backup, str(e))
                except (Failed, RevertFailed):
                    self._restart_old(binary, hairpinctl, state, device, facts)
                    raise
            state.ports = ports
            state.hairpind = _daemon_state(daemon)
            self.state_dir.save(state)
        finally:
            fleet.close()

    def _restart_old(
        self, binary: Path, hairpinctl: Path, state: DeploymentState, device: str, facts: Facts
    ) -> None:
        """hairpind back with the ports it had (best effort; the state says if it runs)."""
        state.hairpind = None
        try:
            daemon = self._start_daemon(binary, state.ports)
            state.hairpind = _daemon_state(daemon)
            self._push_links(
                hairpinctl, state.ports, {**self._facts_for(state, device), device: facts}
            )
        except DaemonError as e:
            self.say(f"hairpind with the ports before did not start again: {e}")
        self.state_dir.save(state)

    def _facts_for(self, state: DeploymentState, device: str) -> dict[str, Facts]:
        """Link states of the other devices' ports, for hairpind after a restart."""
        others = [d for d in state.devices if d != device]
        if not others:
            return {}
        other_fleet = Fleet(self.deployment, others)
        try:
            read = other_fleet.run(get_interfaces)
        finally:
            other_fleet.close()
        return {d: Facts(running="", interfaces=o.value or {}, vlans={}) for d, o in read.items()}

    def _undo_device(self, fleet: Fleet, device: str, backup: Backup, reason: str) -> None:
        outcome = fleet.run(restore(backup.read()), [device])[device]
        if not outcome.ok:
            raise RevertFailed(
                f"{reason}\nputting {device} back from {backup.path} failed: {_error(outcome)}"
            )
        raise Failed(f"{reason}\n{device} was put back from {backup.path}")

    def _refresh_config_hash(self, state: DeploymentState) -> None:
        import hashlib

        state.config_sha256 = hashlib.sha256(self.deployment.path.read_bytes()).hexdigest()
        self.state_dir.save(state)


def _choose_trunk(trunks: Sequence[Trunk], device: str, port: str | None) -> Trunk:
    mine = [t for t in trunks if t.device == device]
    if port is not None:
        chosen = [t for t in mine if t.port == port]
        if not chosen:
            raise Refused([f"device {device} has no trunk {port} in this deployment"])
        return chosen[0]
    if len(mine) != 1:
        raise Refused(
            [
                f"device {device} has trunks {', '.join(t.port for t in mine)}: "
                "say which with --trunk"
            ]
        )
    return mine[0]


def _free_vlan(deployment: Deployment, state: DeploymentState, device: str) -> int:
    base = deployment.spec.devices[device].vlan_base if device in deployment.spec.devices else 100
    used = {p.vlan for p in state.ports if p.device == device}
    return next(v for v in range(base + 1, 4095) if v not in used)


def _free_of_port(ports: Sequence[LogicalPort]) -> int:
    used = {p.of_port for p in ports}
    return next(n for n in range(1, 0xFFFFFF00) if n not in used)


def _free_name(ports: Sequence[LogicalPort], device: str, port: str) -> str:
    names = {p.name for p in ports}
    return port if port not in names else f"{device}:{port}"


def _port_problems(ports: Sequence[LogicalPort], new: LogicalPort) -> list[str]:
    problems = []
    if not 1 <= new.vlan <= 4094:
        problems.append(f"VLAN {new.vlan} is outside 1..4094")
    for p in ports:
        if p.of_port == new.of_port:
            problems.append(f"OpenFlow port {new.of_port} is {p.device}:{p.port} already")
        if p.name == new.name:
            problems.append(f"port name `{new.name}` is {p.device}:{p.port}'s already")
        if p.device == new.device and p.vlan == new.vlan:
            problems.append(f"VLAN {new.vlan} is {p.device}:{p.port}'s already")
    if len(new.name) > MAX_PORT_NAME:
        problems.append(f"port name `{new.name}` is longer than {MAX_PORT_NAME}; give --name")
    return problems


def _daemon_state(daemon: Daemon) -> DaemonState:
    return DaemonState(
        pid=daemon.pid,
        config=str(daemon.config),
        log=str(daemon.log),
        control_socket=str(daemon.control_socket),
        started_at=time.time(),
    )


def _daemon(state: DaemonState) -> Daemon:
    return Daemon(state.pid, Path(state.config), Path(state.log), Path(state.control_socket))


def _when(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
