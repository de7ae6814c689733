"""The watch loop: legacy link changes become PORT_STATUS.

Every ``watch.interval`` seconds it reads each device's interfaces (NAPALM ``get_interfaces``,
all devices at once), and for each managed port whose link or speed changed since the last
round it calls ``hairpinctl set-port-link``, which ``hairpind`` turns into PORT_STATUS for its
controllers. The first round pushes every port. A device that does not answer is reported once
and retried each round; its ports keep their last state (its management plane being down says
nothing about its links). ``add-port`` and ``remove-port`` are picked up from the state file.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import TextIO

from hairpin.harmless import hairpind
from hairpin.harmless.config import Deployment, LogicalPort
from hairpin.harmless.hairpind import DaemonError
from hairpin.harmless.inventory import Fleet
from hairpin.harmless.manager import Refused, get_interfaces
from hairpin.harmless.state import StateDir

Link = tuple[bool, int | None]


class Watcher:
    """Polls the devices of a deployment that is up and pushes link changes to hairpind."""

    def __init__(self, deployment: Deployment, out: TextIO) -> None:
        self.deployment = deployment
        self.out = out
        self.state_dir = StateDir(deployment.state_dir)
        self.stop = threading.Event()
        self.pushed: dict[int, Link] = {}
        self.unreachable: set[str] = set()
        self.ports: list[LogicalPort] = []
        self.state_mtime = 0.0
        self.control_socket = deployment.control_socket
        self.fleet: Fleet | None = None

    def say(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=self.out, flush=True)

    def _reload(self) -> None:
        """Reads the state again when add-port or remove-port changed it."""
        try:
            mtime = self.state_dir.state_file.stat().st_mtime
        except FileNotFoundError:
            raise Refused([f"deployment {self.deployment.name} is not up"]) from None
        if mtime == self.state_mtime:
            return
        state = self.state_dir.load()
        if state is None or state.phase != "up":
            raise Refused([f"deployment {self.deployment.name} is not up"])
        self.state_mtime = mtime
        self.ports = state.ports
        if state.hairpind is not None:
            self.control_socket = Path(state.hairpind.control_socket)
        devices = sorted({p.device for p in self.ports})
        if self.fleet is None or sorted(self.fleet.devices) != devices:
            if self.fleet is not None:
                self.fleet.close()
            self.fleet = Fleet(self.deployment, devices)
        # A restarted hairpind (add-port, remove-port) starts from scratch: push everything.
        self.pushed.clear()

    def round(self, hairpinctl: Path) -> int:
        """One poll of every device; returns how many link changes it pushed."""
        self._reload()
        assert self.fleet is not None
        changes = 0
        for device, outcome in self.fleet.run(get_interfaces).items():
            if not outcome.ok:
                if device not in self.unreachable:
                    self.say(f"device {device} does not answer: {outcome.error}")
                    self.unreachable.add(device)
                continue
            if device in self.unreachable:
                self.say(f"device {device} answers again")
                self.unreachable.discard(device)
            interfaces = outcome.value or {}
            for port in (p for p in self.ports if p.device == device):
                info = interfaces.get(port.port)
                if info is None:
                    continue
                speed = port.speed_mbps or int(info.get("speed") or 0) or None
                link: Link = (bool(info.get("is_up")), speed)
                if self.pushed.get(port.of_port) == link:
                    continue
                try:
                    hairpind.set_port_link(
                        hairpinctl, self.control_socket, port.of_port, link[0], link[1]
                    )
                except DaemonError as e:
                    self.say(f"{e} (retried next round)")
                    continue
                if port.of_port in self.pushed:
                    self.say(
                        f"{device}:{port.port} link {'up' if link[0] else 'down'}: "
                        f"OpenFlow port {port.of_port} ({port.name})"
                    )
                self.pushed[port.of_port] = link
                changes += 1
        return changes

    def run(self, once: bool = False) -> None:
        _, hairpinctl = hairpind.tools(self.deployment)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stop.set())
        interval = self.deployment.spec.watch.interval
        self.say(f"watching deployment {self.deployment.name} every {interval:g} s")
        try:
            while True:
                started = time.monotonic()
                self.round(hairpinctl)
                if once:
                    return
                if self.stop.wait(max(0.0, interval - (time.monotonic() - started))):
                    return
        finally:
            if self.fleet is not None:
                self.fleet.close()
