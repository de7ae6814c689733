"""The software side: ``hairpind``'s TOML for a deployment, starting and stopping it, and the
management calls the manager makes through ``hairpinctl``.

The TOML has one ``[trunks]`` entry per server interface cabled to a legacy trunk and one
logical port per access port (``N = { trunk = ..., vlan = ..., name = ... }``), so the
controller sees the legacy ports by name and number. ``hairpind`` runs detached from the
manager (its own session), logging to the state directory; the manager checks that a pid it
stops is still the ``hairpind`` it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hairpin.harmless.config import Deployment, LogicalPort, Trunk


class DaemonError(Exception):
    """``hairpind`` or ``hairpinctl`` did not do what was asked; says what and why."""


def _toml_string(value: str) -> str:
    # JSON's string escapes are valid TOML basic-string escapes.
    return json.dumps(value, ensure_ascii=True)


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def render_toml(
    deployment: Deployment, trunks: Sequence[Trunk], ports: Sequence[LogicalPort]
) -> str:
    """``hairpind``'s configuration for ``ports`` over ``trunks``."""
    switch = deployment.spec.switch
    lines = [
        f"# hairpind settings of HARMLESS deployment {deployment.name}, written by",
        f"# hairpin-harmless from {deployment.path}; it rewrites this file.",
        f'datapath_id = "0x{deployment.datapath_id:016x}"',
        f"controllers = {_toml_list(switch.controllers)}",
        f"listen = {_toml_list(switch.listen)}",
        f"control_socket = {_toml_string(str(deployment.control_socket))}",
        f"datapath_threads = {switch.datapath_threads}",
        f"fail_mode = {_toml_string(switch.fail_mode)}",
        "",
        "[trunks]",
    ]
    used = {p.trunk for p in ports}
    for trunk in trunks:
        if trunk.name in used:
            lines.append(f"{_toml_string(trunk.name)} = {_toml_string(trunk.interface)}")
    lines += ["", "[ports]"]
    for port in sorted(ports, key=lambda p: p.of_port):
        fields = [
            f"trunk = {_toml_string(port.trunk)}",
            f"vlan = {port.vlan}",
            f"name = {_toml_string(port.name)}",
        ]
        if port.speed_mbps is not None:
            fields.append(f"speed_mbps = {port.speed_mbps}")
        lines.append(f"{port.of_port} = {{ {', '.join(fields)} }}")
    return "\n".join(lines) + "\n"


def find_tool(configured: str, base: Path, env_dir: str | None = None) -> Path | None:
    """A tool named in the deployment file: a path (relative to the file), else $HAIRPIN_BIN,
    else PATH."""
    if "/" in configured:
        path = Path(configured)
        path = path if path.is_absolute() else base.parent / path
        return path if path.is_file() and os.access(path, os.X_OK) else None
    if env_dir:
        candidate = Path(env_dir) / configured
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(configured)
    return Path(found) if found else None


def tools(deployment: Deployment) -> tuple[Path, Path]:
    """The ``hairpind`` and ``hairpinctl`` binaries, or DaemonError naming what is missing."""
    switch = deployment.spec.switch
    env_dir = os.environ.get("HAIRPIN_BIN")
    found = []
    for name in (switch.hairpind, switch.hairpinctl):
        path = find_tool(name, deployment.path, env_dir)
        if path is None:
            raise DaemonError(f"no executable `{name}` (as a path, in $HAIRPIN_BIN or in PATH)")
        found.append(path)
    return found[0], found[1]


@dataclass
class Daemon:
    """A ``hairpind`` started by the manager."""

    pid: int
    config: Path
    log: Path
    control_socket: Path

    def alive(self) -> bool:
        """True while the pid is still this ``hairpind`` (same binary, same config)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
        return not zombie and str(self.config).encode() in cmdline

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if not self.alive():
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            _reap(self.pid)
            time.sleep(0.05)
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            while self.alive():
                _reap(self.pid)
                time.sleep(0.05)
        _reap(self.pid)


def _reap(pid: int) -> None:
    """Collects our own child's exit status so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def start(binary: Path, config: Path, log: Path, control_socket: Path, timeout: float) -> Daemon:
    """Starts ``hairpind --config CONFIG`` detached and waits until its management socket
    answers; raises DaemonError (with the log's tail) if it exits or stays silent."""
    control_socket.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        control_socket.unlink()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(binary), "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    daemon = Daemon(process.pid, config, log, control_socket)
    deadline = time.monotonic() + timeout
    while True:
        status = process.poll()
        if status is not None:
            raise DaemonError(
                f"hairpind exited with status {status} at start; its log ({log}):\n"
                + daemon.log_tail()
            )
        if _answers(control_socket):
            return daemon
        if time.monotonic() > deadline:
            daemon.stop()
            raise DaemonError(
                f"hairpind's management socket {control_socket} did not answer within "
                f"{timeout:g} s; its log ({log}):\n" + daemon.log_tail()
            )
        time.sleep(0.05)


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def set_port_link(
    hairpinctl: Path, control_socket: Path, of_port: int, up: bool, speed_mbps: int | None
) -> None:
    """``hairpinctl set-port-link``: the legacy port's link state and speed, which hairpind
    sends to controllers as PORT_STATUS."""
    args = [
        str(hairpinctl),
        "--control",
        str(control_socket),
        "set-port-link",
        str(of_port),
        "up" if up else "down",
    ]
    if speed_mbps:
        args += ["--speed-mbps", str(speed_mbps)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=10, check=False)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        raise DaemonError(f"hairpinctl set-port-link {of_port}: {message}")


def rx_packets(interface: str) -> int | None:
    """Frames received on a server interface so far (None: no such interface)."""
    try:
        return int(Path(f"/sys/class/net/{interface}/statistics/rx_packets").read_text())
    except (OSError, ValueError):
        return None


def interface_exists(interface: str) -> bool:
    return Path(f"/sys/class/net/{interface}").exists()
