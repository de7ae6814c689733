"""What the manager keeps on disk for a deployment, under ``state_dir/NAME/``:

- ``backups/DEVICE/TIMESTAMP-SHA256.cfg``: a device's running configuration as read before the
  manager changed it, with a ``.json`` beside it (device, address, reason, full hash). Files
  are created exclusively and never overwritten or deleted by the manager.
- ``state.json``: the running deployment (written atomically; gone after ``down``): the port
  map, each device's backup to restore at ``down``, the ``hairpind`` process.
- ``hairpind.toml`` and ``hairpind.log``; ``lock``, held while a command changes anything.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hairpin.harmless.config import LogicalPort, Trunk


class StateError(Exception):
    """The state directory says something that stops the command (busy, not up, tampered)."""


@dataclass(frozen=True)
class Backup:
    """A saved configuration and its SHA-256."""

    path: Path
    sha256: str

    def read(self) -> str:
        """The configuration, checked against its hash."""
        text = self.path.read_text()
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest != self.sha256:
            raise StateError(f"backup {self.path} changed since it was saved (sha256 {digest})")
        return text


def save_backup(directory: Path, device: str, text: str, meta: dict[str, Any]) -> Backup:
    """Writes ``text`` to a new file named by the time and hash; never overwrites."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    folder = directory / "backups" / device
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    for attempt in range(100):
        suffix = f"-{attempt}" if attempt else ""
        path = folder / f"{stamp}-{digest[:16]}{suffix}.cfg"
        try:
            with path.open("x") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        except FileExistsError:
            continue
        info = {"device": device, "sha256": digest, "saved_at": stamp, **meta}
        with path.with_suffix(".json").open("x") as f:
            json.dump(info, f, indent=2)
        return Backup(path, digest)
    raise StateError(f"cannot find a free backup name in {folder}")


@dataclass
class DeviceState:
    """A device under HARMLESS: its dialect, the backup ``down`` restores, the access VLAN
    each managed port had before."""

    dialect: str
    backup: str
    backup_sha256: str
    previous_vlans: dict[str, int | None] = field(default_factory=dict)

    @property
    def original(self) -> Backup:
        return Backup(Path(self.backup), self.backup_sha256)


@dataclass
class DaemonState:
    """The ``hairpind`` the manager started."""

    pid: int
    config: str
    log: str
    control_socket: str
    started_at: float


@dataclass
class DeploymentState:
    """A deployment that is up (or was caught half-way)."""

    name: str
    config_path: str
    config_sha256: str
    phase: str  # "committing" while devices change, "up" once everything runs
    since: float
    devices: dict[str, DeviceState]
    trunks: list[Trunk]
    ports: list[LogicalPort]
    hairpind: DaemonState | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DeploymentState:
        raw = json.loads(text)
        return cls(
            name=raw["name"],
            config_path=raw["config_path"],
            config_sha256=raw["config_sha256"],
            phase=raw["phase"],
            since=raw["since"],
            devices={k: DeviceState(**v) for k, v in raw["devices"].items()},
            trunks=[Trunk(**t) for t in raw["trunks"]],
            ports=[LogicalPort(**p) for p in raw["ports"]],
            hairpind=DaemonState(**raw["hairpind"]) if raw.get("hairpind") else None,
        )


class StateDir:
    """One deployment's directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def state_file(self) -> Path:
        return self.path / "state.json"

    def load(self) -> DeploymentState | None:
        try:
            return DeploymentState.from_json(self.state_file.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            # Not JSON, or JSON not of the shape this tool writes (edited by hand, a disk
            # that lost the end of it): say so instead of failing with a traceback.
            problem = f"{self.state_file}: corrupt state ({e!r}); restore or remove it"
            raise StateError(problem) from e

    def save(self, state: DeploymentState) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        temporary = self.state_file.with_suffix(".tmp")
        temporary.write_text(state.to_json())
        os.replace(temporary, self.state_file)

    def clear(self) -> None:
        self.state_file.unlink(missing_ok=True)

    @contextmanager
    def locked(self, timeout: float = 10.0) -> Iterator[None]:
        """Holds the deployment's lock (another command changing it makes this one wait, then
        give up)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / "lock").open("a") as lock:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StateError(f"another command holds {self.path / 'lock'}") from None
                    time.sleep(0.1)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
