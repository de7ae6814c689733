"""A hostile controllet is contained on every count (CPU, memory, processes, files, raw
sockets, the host's network, the master role, refused system calls, the bus) while a
learning-switch controllet on the same switch keeps working. The cost of its presence to
hairpind's echo latency and forwarding throughput is measured by ``python -m
hairpin.bench.infep_isolation`` (docs/bench/infep.md), not here."""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path

import pytest

from hairpin.testing.controllets import (
    BUS_PORT,
    Switch,
    find_example,
    hairpind,
    python_controllet,
    shared_tempdir,
)
from hairpin.testing.daemon import REPO
from hairpin.testing.netns import star, unique_prefix
from hairpin.testing.topology import background, wait_until

HOSTILE = Path(__file__).parent / "data" / "hostile_controllet.py"
NOBODY = 65534
CPU_LIMIT = 0.2


def cpu_shares(switch: Switch) -> list[float]:
    """The CPU shares the spinning controllet reported, one per half second."""
    lines = switch.logs("hostile-cpu")
    return [float(line.split()[-1]) for line in lines if line.startswith("cpu share")]


def hostile(name: str, *args: str, **limits: object) -> dict[str, object]:
    python = python_controllet("x")
    return {
        "name": name,
        "program": python["program"],
        "args": [str(HOSTILE), *args],
        "read_only": python["read_only"],
        "restart": {"min": "200ms", "max": "1s"},
    } | limits


@pytest.mark.usefixtures("root")
def test_a_hostile_controllet_is_contained_and_the_others_keep_working() -> None:
    with shared_tempdir("hp-infep-") as work, star(unique_prefix(), 2) as topo:
        (work / "watch.pw").write_text("watch-secret\n")
        lsw = find_example("learning_switch")
        # Another controllet's file, there before any controllet starts.
        secret = work / "state" / "controllets" / "lsw" / "secret"
        secret.parent.mkdir(parents=True)
        secret.write_text("lsw's secret")
        os.chown(secret.parent, NOBODY, NOBODY)
        readable = [
            str(secret),
            str(work / "run" / "bus" / "nats-server.json"),
            str(work / "hairpind.toml"),
            "/etc/shadow",
            str(work / "watch.pw"),
        ]
        controllets = [
            {"name": "lsw", "program": str(lsw), "read_only": [str(lsw.parent)]},
            hostile("hostile-cpu", "cpu", cpu=CPU_LIMIT),
            hostile("hostile-mem", "memory", memory="48M"),
            hostile("hostile-fork", "fork", pids=16),
            hostile("hostile-escape", "escape", *readable),
        ]
        bus = {"users": [{"name": "watch", "password_file": str(work / "watch.pw")}]}
        watch_log = work / "watch.log"
        with hairpind(topo.switch, work, topo.ports, controllets, bus=bus) as switch:
            watcher = [
                str(REPO / ".venv" / "bin" / "python"),
                "-m",
                "hairpin.controllet.examples.remote_controller",
                f"--url=nats://127.0.0.1:{BUS_PORT}",
                "--user=watch",
                f"--password-file={work / 'watch.pw'}",
            ]
            with background(topo.switch, watcher, watch_log):
                assert wait_until(lambda: '"ready"' in watch_log.read_text(), 20)
                switch.wait_running("lsw")
                for name in ("hostile-cpu", "hostile-fork", "hostile-escape"):
                    switch.wait_running(name)

                def contained() -> bool:
                    mem = switch.status("hostile-mem")
                    fork = switch.status("hostile-fork")["usage"]
                    escape = "\n".join(switch.logs("hostile-escape"))
                    return (
                        mem["restarts"] >= 1  # type: ignore[operator]
                        and fork["forks_refused"] > 0  # type: ignore[index]
                        and len(cpu_shares(switch)) >= 4
                        and "published on its own subject" in escape
                    )

                assert wait_until(contained, 30, 0.5), switch.ctl("controllet", "list", "--json")
                # The learning switch still forwards: every host reaches every other.
                for src, dst in itertools.permutations(topo.hosts, 2):
                    assert src.ns.ping(dst.address, count=2), f"{src.ns.name} -> {dst.address}"
                time.sleep(0.5)
            heard = [json.loads(line) for line in watch_log.read_text().splitlines()]

            # CPU: never more than its share (less when the host is busy: controllets weigh
            # little against the switch).
            shares = cpu_shares(switch)
            assert max(shares[1:]) <= CPU_LIMIT * 1.25 + 0.02, shares
            # Memory: killed by the kernel at its limit, and restarted.
            mem = switch.status("hostile-mem")
            assert mem["usage"]["oom_kills"] >= 1, mem  # type: ignore[index]
            assert "signal 9" in str(mem["last_exit"]) or mem["state"] == "running", mem
            # Processes: forks refused at the limit, never more than the limit alive.
            fork = switch.status("hostile-fork")
            assert fork["usage"]["processes"] <= 16, fork  # type: ignore[index]
            assert any("fork refused" in line for line in switch.logs("hostile-fork"))
            # Files, raw sockets, the host's network: every attempt denied.
            escape = switch.logs("hostile-escape")
            assert not [line for line in escape if line.startswith("ESCAPED")], escape
            denied = [line for line in escape if line.startswith("denied")]
            assert len(denied) == len(readable) + 9, escape
            # OpenFlow: its claim of the master role refused (ROLE_REQUEST_FAILED, UNSUP).
            assert "denied master role: OpenFlow error type 11 code 1" in escape, escape
            # The system-call filter: EPERM for what works for any process outside it.
            for call in ("new user namespace", "io_uring", "kernel keyring"):
                assert f"denied {call}: Operation not permitted" in escape, escape
            # The bus: nothing published on another's subjects reached anyone; its own did.
            refused = [line for line in escape if line.startswith("bus refused")]
            assert len(refused) == 2, escape
            assert all("permissions violation" in r.lower() for r in refused), escape
            subjects = [h.get("subject", "") for h in heard]
            assert any(s.endswith(".c.hostile-escape.alive") for s in subjects), heard
            forged = [
                h for h in heard if h.get("data") == "hostile" or ".event." in h.get("subject", "")
            ]
            assert not forged, forged
            # The others kept working, untouched.
            status = switch.status("lsw")
            assert status["state"] == "running" and status["restarts"] == 0, status
            assert secret.read_text() == "lsw's secret"
            switch.assert_alive()
