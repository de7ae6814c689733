"""hairpind with controllets in a switch namespace, for tests and benchmarks.

hairpind joins the switch namespace's network only (``nsenter --net``), not the mount
namespace ``ip netns exec`` makes: that one remounts ``/sys`` and hides the cgroup
hierarchies, so every controllet would (rightly) be refused for lack of its limits. Its run and
state directories live in a world-traversable temporary directory, because bubblewrap runs as
the controllet's unprivileged user and must reach what it binds.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hairpin.testing.daemon import REPO, find_hairpind
from hairpin.testing.netns import Namespace
from hairpin.testing.topology import stop, wait_until

OF_PORT = 16953
BUS_PORT = 16954


def find_example(name: str) -> Path:
    """A Rust SDK example binary, from the build that holds hairpind."""
    binary = find_hairpind().parent.resolve() / "examples" / name
    if not binary.is_file():
        raise FileNotFoundError(f"no {binary}: cargo build --examples -p controllet")
    return binary


def python_controllet(module: str, *args: str) -> dict[str, object]:
    """The declaration fields that run a Python SDK module with this repository's venv."""
    return {
        "program": str(REPO / ".venv" / "bin" / "python"),
        "args": ["-m", module, *args],
        "read_only": [str(REPO)],
    }


def toml_value(value: object) -> str:
    """A Python value as TOML (strings, numbers, booleans, lists and flat tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


@dataclass
class Switch:
    """A running hairpind with its control socket, in namespace ``ns``."""

    ns: Namespace
    workdir: Path
    process: subprocess.Popen[bytes]
    bin_dir: Path
    of_port: int = OF_PORT
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def control(self) -> Path:
        return self.workdir / "hairpind.ctl"

    def log(self) -> str:
        return (self.workdir / "hairpind.log").read_text(errors="replace")

    def assert_alive(self) -> None:
        status = self.process.poll()
        assert status is None, f"hairpind exited with status {status}:\n{self.log()}"

    def call(self, method: str, params: object = None) -> object:
        """One management command; raises RuntimeError with the daemon's message on error."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(20)
            s.connect(str(self.control))
            request = {"id": 1, "method": method, "params": params}
            s.sendall(json.dumps(request).encode() + b"\n")
            reply = s.makefile().readline()
        answer = json.loads(reply)
        if "error" in answer:
            raise RuntimeError(answer["error"]["message"])
        return answer["result"]

    def ctl(self, *args: str) -> str:
        """``hairpinctl --control ... ARGS`` (management commands); its stdout."""
        binary = self.bin_dir / "hairpinctl"
        result = subprocess.run(
            [str(binary), "--control", str(self.control), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, f"hairpinctl {args}: {result.stderr}"
        return result.stdout

    def status(self, name: str) -> dict[str, object]:
        for entry in self.call("controllet/list"):  # type: ignore[union-attr]
            if entry["name"] == name:
                return entry  # type: ignore[no-any-return]
        raise KeyError(name)

    def logs(self, name: str) -> list[str]:
        return self.call("controllet/logs", {"name": name, "lines": 1000})  # type: ignore[return-value]

    def wait_running(self, name: str, timeout: float = 20.0) -> dict[str, object]:
        def running() -> bool:
            self.assert_alive()
            return self.status(name).get("state") == "running"

        assert wait_until(running, timeout, 0.1), f"{name}: {self.status(name)}\n{self.logs(name)}"
        return self.status(name)

    def ofctl(self, *args: str) -> str:
        command, *rest = args
        target = f"tcp:127.0.0.1:{self.of_port}"
        result = self.ns.run(
            "ovs-ofctl", "-O", "OpenFlow13", "--timeout=10", command, target, *rest, check=False
        )
        assert result.returncode == 0, f"ovs-ofctl {command}: {result.stderr}"
        return result.stdout

    def flows(self) -> list[str]:
        lines = self.ofctl("dump-flows").splitlines()
        return [line.strip() for line in lines if "actions=" in line]


@contextlib.contextmanager
def shared_tempdir(prefix: str) -> Iterator[Path]:
    """A temporary directory others may traverse (mode 0755), removed on exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def hairpind(
    ns: Namespace,
    workdir: Path,
    ports: Sequence[str] = (),
    controllets: Sequence[dict[str, object]] = (),
    bus: dict[str, object] | None = None,
    host: dict[str, object] | None = None,
    datapath_id: int = 1,
    controllers: Sequence[str] = (),
    extra_args: Sequence[str] = (),
) -> Iterator[Switch]:
    """hairpind in ``ns`` with ports 1..N bound to ``ports``, the given controllets (TOML
    fields as dicts), the embedded bus on 127.0.0.1:BUS_PORT unless ``bus`` says otherwise,
    connections to ``controllers`` (``tcp:IP:PORT``), and ``extra_args`` on its command line."""
    binary = find_hairpind()
    bus_fields = {"listen": f"127.0.0.1:{BUS_PORT}"} | (bus or {})
    lines = [
        f'datapath_id = "{datapath_id:#x}"',
        f'listen = ["ptcp:{OF_PORT}:127.0.0.1"]',
        f"controllers = {toml_value(list(controllers))}",
        f"control_socket = {toml_value(str(workdir / 'hairpind.ctl'))}",
        "[ports]",
        *(f'{i} = "{name}"' for i, name in enumerate(ports, start=1)),
        "[controllet_host]",
        f"run_dir = {toml_value(str(workdir / 'run'))}",
        f"state_dir = {toml_value(str(workdir / 'state'))}",
        *(f"{k} = {toml_value(v)}" for k, v in (host or {}).items()),
        "[bus]",
        *(f"{k} = {toml_value(v)}" for k, v in bus_fields.items()),
    ]
    for c in controllets:
        lines.append("[[controllets]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in c.items()]
    config = workdir / "hairpind.toml"
    config.write_text("\n".join(lines) + "\n")
    log_path = workdir / "hairpind.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                "nsenter",
                f"--net=/run/netns/{ns.name}",
                str(binary.resolve()),
                "--config",
                str(config),
                *extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    switch = Switch(ns, workdir, process, binary.parent.resolve())
    try:

        def ready() -> bool:
            switch.assert_alive()
            if not switch.control.exists():
                return False
            show = ["ovs-ofctl", "-O", "OpenFlow13", "show", f"tcp:127.0.0.1:{OF_PORT}"]
            return ns.run(*show, check=False).returncode == 0

        if not wait_until(ready, 30.0, 0.1):
            raise RuntimeError(f"hairpind did not start:\n{switch.log()}")
        yield switch
    finally:
        stop(process, timeout=10.0)
