"""Hairpin as the switch of a star of host namespaces, with controllers beside it.

:func:`hairpin_star` builds hosts around a switch namespace (see :func:`netns.star`) and runs
`hairpind` inside that namespace with port i bound to interface pi. Controllers run in the same
namespace and listen on its own 127.0.0.1, so fixed port numbers never collide between tests.
Every process is stopped before the namespaces are deleted, whatever way the block ends.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from hairpin.testing.daemon import find_hairpind
from hairpin.testing.netns import Host, Namespace, Star, star, unique_prefix

# Inside the switch namespace: where hairpind listens, and where controllers listen.
SWITCH_OF_PORT = 6653
CONTROLLER_PORT = 6633
IPERF_PORT = 5201


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    """Polls ``predicate`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


@contextmanager
def background(
    ns: Namespace,
    args: Sequence[str],
    log_path: Path,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Runs ``args`` in ``ns`` with output to ``log_path``; SIGTERM (then SIGKILL) on exit."""
    with log_path.open("ab") as log:
        process = ns.popen(*args, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds; no-op when it has already exited."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def hairpind_command(
    of_port: int,
    control_path: Path,
    fail_mode: str = "secure",
    controller_port: int | None = None,
) -> list[str]:
    """hairpind's command line in a test namespace: datapath id 1, an OpenFlow listener on the
    namespace's 127.0.0.1:``of_port``, the management socket at ``control_path``, and a
    connection to a controller on 127.0.0.1:``controller_port`` unless that is None. Callers
    add its ports and whatever else the test needs."""
    args = [str(find_hairpind()), "--datapath-id", "0x1", "--fail-mode", fail_mode]
    args += ["--listen", f"ptcp:{of_port}:127.0.0.1", "--control-socket", str(control_path)]
    if controller_port is not None:
        args += ["--controller", f"tcp:127.0.0.1:{controller_port}"]
    return args


@dataclass
class Hairpind:
    """A hairpind running in a namespace (started by :func:`background` with a
    :func:`hairpind_command` line), and the tools to look at it."""

    ns: Namespace
    process: subprocess.Popen[bytes]
    log_path: Path
    control_path: Path
    #: Its passive OpenFlow listener, on the namespace's 127.0.0.1.
    of_port: int
    #: Where its controller listens, on the namespace's 127.0.0.1.
    controller_port: int
    #: Its OpenFlow listener on a unix socket, reachable from outside the namespace, if any.
    unix_path: Path | None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_alive(self) -> None:
        status = self.process.poll()
        assert status is None, f"hairpind exited with status {status}:\n{self.log()}"

    def wait_listening(self, timeout: float = 20.0) -> None:
        """Returns once its OpenFlow listener answers; raises with its log if it exits first
        or ``timeout`` seconds pass."""

        def listening() -> bool:
            self.assert_alive()
            show = ["ovs-ofctl", "-O", "OpenFlow13", "show", f"tcp:127.0.0.1:{self.of_port}"]
            return self.ns.run(*show, check=False).returncode == 0

        if not wait_until(listening, timeout):
            raise RuntimeError(f"hairpind did not start listening:\n{self.log()}")

    def ofctl(self, *args: str) -> str:
        """``ovs-ofctl -O OpenFlow13 COMMAND tcp:... ARGS`` against hairpind's passive
        listener; fails on an error."""
        command, *rest = args
        target = f"tcp:127.0.0.1:{self.of_port}"
        result = self.ns.run(
            "ovs-ofctl", "-O", "OpenFlow13", "--timeout=10", command, target, *rest, check=False
        )
        assert result.returncode == 0, f"ovs-ofctl {command} failed: {result.stderr}"
        return result.stdout

    def flows(self) -> list[str]:
        """The flow entries `ovs-ofctl dump-flows` lists (header line dropped)."""
        lines = self.ofctl("dump-flows").splitlines()
        return [line.strip() for line in lines if "actions=" in line]

    def ctl_run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``hairpinctl --control ... ARGS`` (management commands), whatever its outcome."""
        binary = find_hairpind().parent / "hairpinctl"
        return self.ns.run(str(binary), "--control", str(self.control_path), *args, check=False)

    def ctl(self, *args: str) -> str:
        """:meth:`ctl_run` that fails on an error and returns the output."""
        result = self.ctl_run(*args)
        assert result.returncode == 0, f"hairpinctl {args} failed: {result.stderr}"
        return result.stdout

    def trunks(self) -> list[dict[str, object]]:
        """``hairpinctl show-trunks``: each trunk with its counters and legacy ports."""
        trunks: list[dict[str, object]] = json.loads(self.ctl("show-trunks"))
        return trunks

    def controller_connected(self) -> bool:
        """True while hairpind holds an established TCP connection to its controller's port."""
        listing = self.ns.run(
            "ss", "-Htn", "state", "established", f"dport = :{self.controller_port}"
        )
        return bool(listing.stdout.strip())


@dataclass
class HairpinStar(Hairpind):
    """Hosts around a running hairpind."""

    topo: Star

    @property
    def switch(self) -> Namespace:
        return self.topo.switch

    @property
    def hosts(self) -> list[Host]:
        return self.topo.hosts


@contextmanager
def hairpin_star(
    workdir: Path,
    hosts: int = 4,
    fail_mode: str = "secure",
    controller_port: int | None = CONTROLLER_PORT,
    extra_args: Sequence[str] = (),
    wrapper: Sequence[str] = (),
) -> Iterator[HairpinStar]:
    """``hosts`` host namespaces (10.0.0.i/24) cabled to ports 1..N of a hairpind in the switch
    namespace, which connects to ``tcp:127.0.0.1:controller_port`` unless that is None.
    ``extra_args`` go to hairpind, ``wrapper`` before it (``chrt -f 50``, ``taskset``...)."""
    log_path = workdir / "hairpind.log"
    control_path = workdir / "hairpind.ctl"
    args = [*wrapper, *hairpind_command(SWITCH_OF_PORT, control_path, fail_mode, controller_port)]
    args += list(extra_args)
    for number in range(1, hosts + 1):
        args += ["--port", f"{number}=p{number}"]
    with ExitStack() as stack:
        topo = stack.enter_context(star(unique_prefix(), hosts))
        process = stack.enter_context(background(topo.switch, args, log_path))
        # With none named, a controller the test starts later listens on the usual port.
        listening = CONTROLLER_PORT if controller_port is None else controller_port
        switch = HairpinStar(
            topo.switch, process, log_path, control_path, SWITCH_OF_PORT, listening, None, topo
        )
        switch.wait_listening()
        yield switch


def ping_all_pairs(hosts: Sequence[Host], count: int = 2) -> list[str]:
    """Pings between every ordered pair of hosts; returns the pairs that lost a reply."""
    failures = []
    for src in hosts:
        for dst in hosts:
            if src is not dst and not src.ns.ping(dst.address, count=count):
                failures.append(f"{src.ns.name} -> {dst.address}")
    return failures


def iperf3_tcp_bps(client: Host, server: Host, workdir: Path, seconds: int = 2) -> float:
    """Runs one iperf3 TCP transfer from ``client`` to ``server``; returns the receiver's
    throughput in bits per second (raises with iperf3's output when the transfer fails)."""
    server_args = ["iperf3", "--server", "--one-off", "--port", str(IPERF_PORT)]
    with background(server.ns, server_args, workdir / f"iperf3-{server.ns.name}.log"):

        def server_listening() -> bool:
            listing = server.ns.run("ss", "-Htln", f"sport = :{IPERF_PORT}").stdout
            return bool(listing.strip())

        if not wait_until(server_listening, 10.0, 0.05):
            raise RuntimeError("iperf3 server did not start listening")
        result = client.ns.run(
            "iperf3",
            "--client",
            server.address,
            "--port",
            str(IPERF_PORT),
            "--time",
            str(seconds),
            "--connect-timeout",
            "5000",
            "--json",
            check=False,
        )
    report = json.loads(result.stdout or "{}")
    if result.returncode != 0 or "error" in report:
        raise RuntimeError(f"iperf3 failed ({result.returncode}): {result.stdout}{result.stderr}")
    return float(report["end"]["sum_received"]["bits_per_second"])
