"""Isolated Open vSwitch instances on the userspace netdev datapath (twin of scripts/lib/ovs.sh).

Each instance runs ovsdb-server and ovs-vswitchd inside one network namespace with its own
database, run, log and config directories, so it never touches the system's Open vSwitch.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hairpin.testing.netns import Namespace

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")


@dataclass(frozen=True)
class OvsInstance:
    """One running Open vSwitch, reached through its own directory."""

    ns: Namespace
    directory: Path

    def cmd(self, *args: str) -> list[str]:
        """The command line that runs ``args`` in this instance's namespace and directories."""
        env = [
            f"{var}={self.directory}"
            for var in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR")
        ]
        return self.ns.cmd("env", *env, "OVS_PKGDATADIR=/usr/share/openvswitch", *args)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run an OVS tool against this instance."""
        return subprocess.run(self.cmd(*args), check=check, capture_output=True, text=True)

    def vsctl(self, *args: str) -> str:
        """``ovs-vsctl`` against this instance; returns its output."""
        return self.run("ovs-vsctl", "--timeout=10", *args).stdout

    def ofctl(self, *args: str) -> str:
        """``ovs-ofctl -O OpenFlow13`` (a bridge name as target uses its management socket)."""
        return self.run("ovs-ofctl", "-O", "OpenFlow13", *args).stdout

    @property
    def vswitchd_pid(self) -> int:
        """Process id of this instance's ovs-vswitchd."""
        return int((self.directory / "ovs-vswitchd.pid").read_text())

    def add_bridge(
        self, bridge: str, dpid: int, ports: Sequence[str], protocols: str = "OpenFlow13"
    ) -> None:
        """A netdev bridge whose OpenFlow port i is ``ports[i-1]``; fail mode secure, in-band
        control off."""
        args = [
            "--",
            "add-br",
            bridge,
            "--",
            "set",
            "bridge",
            bridge,
            "datapath_type=netdev",
            f"protocols={protocols}",
            "fail-mode=secure",
            f"other-config:datapath-id={dpid:016x}",
            "other-config:disable-in-band=true",
        ]
        for number, port in enumerate(ports, start=1):
            args += [
                "--",
                "add-port",
                bridge,
                port,
                "--",
                "set",
                "interface",
                port,
                f"ofport_request={number}",
            ]
        self.vsctl(*args)
        self.ns.run("ip", "link", "set", bridge, "up")

    def set_controller(self, bridge: str, *targets: str) -> None:
        """Controller targets such as ``tcp:127.0.0.1:16653`` or ``ptcp:16654:127.0.0.1``."""
        self.vsctl("set-controller", bridge, *targets)

    def set_fail_mode(self, bridge: str, mode: str) -> None:
        """``secure`` or ``standalone``."""
        self.vsctl("set-fail-mode", bridge, mode)

    def wait_connected(self, timeout: float = 20.0) -> bool:
        """True once a controller of this instance reports is_connected."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "true" in self.vsctl("--columns=is_connected", "list", "controller"):
                return True
            time.sleep(0.2)
        return False


def _wait_ready(instance: OvsInstance, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if instance.run("ovs-appctl", "version", check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"ovs-vswitchd in {instance.ns.name} did not start")


def _stop_daemon(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text())
        os.kill(pid, signal.SIGTERM)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@contextmanager
def ovs_instance(ns: Namespace) -> Iterator[OvsInstance]:
    """Start ovsdb-server and ovs-vswitchd in ``ns``; stop them and remove their files on exit."""
    directory = Path(tempfile.mkdtemp(prefix=f"ovs-{ns.name}-"))
    instance = OvsInstance(ns, directory)
    try:
        db = str(directory / "conf.db")
        instance.run("ovsdb-tool", "create", db, str(SCHEMA))
        instance.run(
            "ovsdb-server",
            db,
            f"--remote=punix:{directory}/db.sock",
            "-vconsole:off",
            "--pidfile",
            "--detach",
            "--no-chdir",
            "--log-file",
        )
        instance.vsctl("--no-wait", "init")
        instance.run(
            "ovs-vswitchd",
            f"unix:{directory}/db.sock",
            "-vconsole:off",
            "--pidfile",
            "--detach",
            "--no-chdir",
            "--log-file",
        )
        _wait_ready(instance)
        yield instance
    finally:
        _stop_daemon(directory / "ovs-vswitchd.pid")
        _stop_daemon(directory / "ovsdb-server.pid")
        shutil.rmtree(directory, ignore_errors=True)
