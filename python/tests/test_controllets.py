"""Controllets on a switch: the examples in namespaces with hosts (a Rust learning switch and a
Python ARP responder sharing the switch, a remote controller hearing them on the bus), the
host's refusals when a confinement is missing, and controllets started at run time."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from hairpin.testing.controllets import (
    BUS_PORT,
    find_example,
    hairpind,
    python_controllet,
    shared_tempdir,
)
from hairpin.testing.daemon import REPO
from hairpin.testing.netns import link, namespace, star, unique_prefix
from hairpin.testing.topology import background, wait_until

HOSTS = 3
CONFINED = ["sandbox", "cpu", "memory", "pids", "network", "seccomp", "bus"]


def host_mac(ns: object, iface: str = "eth0") -> str:
    out = ns.run("cat", f"/sys/class/net/{iface}/address").stdout  # type: ignore[attr-defined]
    return out.strip()


@pytest.mark.usefixtures("root")
def test_examples_share_a_switch_and_tell_a_remote_controller() -> None:
    with shared_tempdir("hp-infep-") as work, star(unique_prefix(), HOSTS) as topo:
        (work / "remote.pw").write_text("remote-secret\n")
        answers = [f"--answer={h.address}={host_mac(h.ns)}" for h in topo.hosts]
        controllets = [
            {
                "name": "lsw",
                "program": str(find_example("learning_switch")),
                "read_only": [str(find_example("learning_switch").parent)],
            },
            {"name": "arp"}
            | python_controllet("hairpin.controllet.examples.arp_responder", *answers),
        ]
        bus = {"users": [{"name": "remote", "password_file": str(work / "remote.pw")}]}
        with hairpind(topo.switch, work, topo.ports, controllets, bus=bus) as switch:
            for name in ("lsw", "arp"):
                status = switch.wait_running(name)
                assert status["confined"] == CONFINED, status
                assert status["missing"] == {}, status
            remote_args = [
                str(REPO / ".venv" / "bin" / "python"),
                "-m",
                "hairpin.controllet.examples.remote_controller",
                f"--url=nats://127.0.0.1:{BUS_PORT}",
                "--user=remote",
                f"--password-file={work / 'remote.pw'}",
                "--switch=0000000000000001",
            ]
            remote_log = work / "remote.log"
            with background(topo.switch, remote_args, remote_log):
                assert wait_until(lambda: '"ready"' in remote_log.read_text(), 20), (
                    remote_log.read_text()
                )
                # The ARP responder installs its rules once it has the switch's features.
                assert wait_until(lambda: any("arp_tpa" in f for f in switch.flows()), 20), (
                    switch.logs("arp")
                )
                for src, dst in itertools.permutations(topo.hosts, 2):
                    assert src.ns.ping(dst.address, count=2), f"{src.ns.name} -> {dst.address}"
                heard = [json.loads(line) for line in remote_log.read_text().splitlines()]

            flows = switch.flows()
            learned = [f for f in flows if "priority=10" in f]
            assert len(learned) >= HOSTS * (HOSTS - 1), flows
            arp_hits = [f for f in flows if "arp_tpa" in f and "n_packets=0" not in f]
            assert arp_hits, flows
            answered = switch.logs("arp")
            assert any("answering ARP" in line for line in answered), answered

            # The remote controller asked the switch for its ports and heard the controllets.
            ports = next(h["ports"] for h in heard if "ports" in h)
            assert sorted(p["port_no"] for p in ports) == [1, 2, 3], ports
            subjects = [h.get("subject", "") for h in heard]
            assert any(s.endswith(".c.lsw.learned") for s in subjects), heard
            assert any(s.endswith(".c.arp.answered") for s in subjects), heard
            switch.assert_alive()


@pytest.mark.usefixtures("root")
def test_missing_confinement_is_refused_by_name_unless_accepted() -> None:
    sleep = {"program": "/bin/sleep", "args": ["600"]}
    everything = ["sandbox", "seccomp", "cpu", "memory", "pids"]
    with shared_tempdir("hp-infep-") as work, star(unique_prefix(), 1) as topo:
        empty = work / "no-cgroups"
        empty.mkdir()
        controllets = [
            {"name": "strict"} | sleep,
            {"name": "lenient", "run_without": everything} | sleep,
        ]
        host = {"cgroup_root": str(empty), "bwrap": "/nonexistent/bwrap"}
        with hairpind(topo.switch, work, topo.ports, controllets, host=host) as switch:
            strict = switch.status("strict")
            assert strict["state"] == "refused", strict
            for piece in everything:
                assert f"{piece} (" in strict["reason"], strict
            assert "no bubblewrap at /nonexistent/bwrap" in strict["reason"], strict
            lenient = switch.wait_running("lenient")
            assert sorted(lenient["missing"]) == sorted(everything), lenient
            assert lenient["confined"] == ["network", "bus"], lenient
            table = switch.ctl("controllet", "list")
            assert "refused" in table and "cpu,memory,pids,sandbox,seccomp" in table, table

            # At run time the same rules hold; stop and start keep the declaration.
            late = ["controllet", "start", "late", "/bin/sleep"]
            binary = switch.bin_dir / "hairpinctl"
            refused = subprocess.run(
                [str(binary), "--control", str(switch.control), *late, "--", "600"],
                capture_output=True,
                text=True,
                check=False,
            )
            assert refused.returncode != 0, refused.stdout
            assert "lacks sandbox (no bubblewrap" in refused.stderr, refused.stderr
            accepted = [f"--run-without={p}" for p in everything]
            switch.ctl(*late, *accepted, "--", "600")
            switch.wait_running("late")
            switch.ctl("controllet", "stop", "late")
            assert wait_until(lambda: switch.status("late")["state"] == "stopped", 10)
            switch.ctl("controllet", "start", "late")
            switch.wait_running("late")
            logs = switch.ctl("controllet", "logs", "late")
            assert logs.count("hairpind: started") == 2, logs
            assert "runs without sandbox" in logs, logs


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    tree = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            tree += process_tree(int(child))
    return tree


def cpus_allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[1]
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


@pytest.mark.usefixtures("root")
def test_a_controllet_runs_on_its_cpus_and_a_sandboxed_one_cannot_leave_them() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert len(allowed) >= 2, f"this test needs two CPUs to tell placements apart: {allowed}"
    home, other = allowed[-1], allowed[0]
    # It tries to move itself to another CPU, then sleeps where it ended up.
    escape = f"taskset -p -c {other} $$ || echo stayed; exec sleep 600"
    shell = {"program": "/bin/sh", "args": ["-c", escape], "cpu_affinity": str(home)}
    controllets = [
        {"name": "boxed", "network": "host"} | shell,
        {"name": "bare", "isolation": "none"} | shell,
    ]
    with (
        shared_tempdir("hp-infep-") as work,
        star(unique_prefix(), 1) as topo,
        hairpind(topo.switch, work, topo.ports, controllets) as switch,
    ):
        boxed = switch.wait_running("boxed")
        assert "cpuset" in boxed["confined"], boxed
        assert boxed["cpu_affinity"] == str(home), boxed
        assert wait_until(lambda: "stayed" in "".join(switch.logs("boxed")), 10)
        tree = process_tree(int(boxed["pid"]))  # type: ignore[call-overload]
        assert len(tree) >= 2, tree  # bubblewrap and the program under it
        assert {cpus_allowed(pid) for pid in tree} == {str(home)}, tree
        # What holds it there: its cpuset (cgroup v1's hierarchy, else the unified one).
        cpuset = Path(f"/proc/{tree[-1]}/cpuset").read_text().strip()
        assert cpuset.endswith("/boxed"), cpuset
        v1 = Path("/sys/fs/cgroup/cpuset")
        hierarchy = v1 if v1.is_dir() else Path("/sys/fs/cgroup")
        held = (hierarchy / cpuset.lstrip("/") / "cpuset.cpus").read_text()
        assert held.strip() == str(home), held

        # Without a sandbox the placement is where it starts, not a confinement.
        bare = switch.wait_running("bare")
        assert "cpuset" not in bare["confined"], bare
        assert wait_until(lambda: "sleep" in Path(f"/proc/{bare['pid']}/comm").read_text(), 10)
        moved = f"current affinity list: {home}"
        assert wait_until(lambda: moved in "".join(switch.logs("bare")), 10), switch.logs("bare")
        assert cpus_allowed(int(bare["pid"])) == str(other)  # type: ignore[call-overload]

        # A CPU hairpind may not use is refused, with the field.
        binary = switch.bin_dir / "hairpinctl"
        outside = allowed[-1] + 1
        refused = subprocess.run(
            [
                str(binary),
                "--control",
                str(switch.control),
                "controllet",
                "start",
                "far",
                "/bin/sleep",
                f"--cpu-affinity={outside}",
                "--",
                "600",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert refused.returncode != 0, refused.stdout
        assert f"`cpu_affinity`: CPU {outside} is not one this process" in refused.stderr, (
            refused.stderr
        )
        switch.assert_alive()


@pytest.mark.usefixtures("root")
def test_a_cpuset_the_kernel_refuses_costs_the_placement_alone() -> None:
    home = max(os.sched_getaffinity(0))
    sleep = {"program": "/bin/sleep", "args": ["600"], "network": "host"}
    placed = sleep | {"cpu_affinity": str(home)}
    controllets = [
        {"name": "strict"} | placed,
        {"name": "lenient", "run_without": ["cpuset"]} | placed,
    ]
    with shared_tempdir("hp-infep-") as work, star(unique_prefix(), 1) as topo:
        # The host's cpu, memory and pids hierarchies, and a cpuset one whose files the
        # kernel would refuse to write: no cpuset.cpus to copy from.
        root = work / "cgroups"
        root.mkdir()
        for name in ("cpu", "memory", "pids"):
            (root / name).symlink_to(f"/sys/fs/cgroup/{name}")
        (root / "cpuset").mkdir()
        (root / "cpuset" / "cgroup.procs").touch()
        host = {"cgroup_root": str(root)}
        with hairpind(topo.switch, work, topo.ports, controllets, host=host) as switch:
            assert wait_until(lambda: switch.status("strict")["state"] == "refused", 10)
            reason = str(switch.status("strict")["reason"])
            assert "cpuset (cannot make its cpuset" in reason, reason
            for piece in ("cpu (", "memory (", "pids ("):
                assert piece not in reason, reason
            lenient = switch.wait_running("lenient")
            assert list(lenient["missing"]) == ["cpuset"], lenient  # type: ignore[call-overload]
            confined = set(lenient["confined"])  # type: ignore[call-overload]
            assert {"cpu", "memory", "pids"} <= confined, lenient
            usage = lenient["usage"]
            assert usage["processes"] >= 1, lenient  # type: ignore[index]
            # Still placed where it asked, though nothing holds it there.
            assert cpus_allowed(int(lenient["pid"])) == str(home)  # type: ignore[call-overload]


def udp_gap(sent: list[dict[str, int | None]], cut_ns: int) -> tuple[int, float]:
    """(answers after the cut, the longest stretch without answers in ms) of a probe run."""
    answered = [s["tx"] for s in sent if s["tx"] and s["rx"]]
    after = [t for t in answered if t > cut_ns]  # type: ignore[operator]
    gaps = [b - a for a, b in itertools.pairwise(answered)]  # type: ignore[operator]
    return len(after), max(gaps, default=0) / 1e6


@pytest.mark.usefixtures("root")
def test_fast_reroute_restores_connectivity_after_a_link_cut() -> None:
    """h1 - switch - two links (primary p2, backup p3) - a bridge in h2. Cutting the primary
    at h2's end makes the switch see its port go down; the controllet moves the flows to the
    backup. A 1000/s UDP probe measures the gap."""
    python = str(REPO / ".venv" / "bin" / "python")
    prefix = unique_prefix()
    with (
        shared_tempdir("hp-infep-") as work,
        namespace(f"{prefix}-sw") as sw,
        namespace(f"{prefix}-h1") as h1,
        namespace(f"{prefix}-h2") as h2,
    ):
        link(sw, "p1", h1, "eth0")
        link(sw, "p2", h2, "e2a")
        link(sw, "p3", h2, "e2b")
        h1.run("ip", "addr", "add", "10.0.0.1/24", "dev", "eth0")
        h2.run("ip", "link", "add", "br0", "type", "bridge")
        for leg in ("e2a", "e2b"):
            h2.run("ip", "link", "set", leg, "master", "br0")
        h2.run("ip", "addr", "add", "10.0.0.2/24", "dev", "br0")
        h2.run("ip", "link", "set", "br0", "up")
        frr = {
            "name": "frr",
            "program": str(find_example("fast_reroute")),
            "args": ["--pair", "2:3", "--host-port", "1"],
            "read_only": [str(find_example("fast_reroute").parent)],
        }
        with hairpind(sw, work, ["p1", "p2", "p3"], [frr]) as switch:
            switch.wait_running("frr")
            assert wait_until(lambda: "fast reroute ready" in "".join(switch.logs("frr")), 20)
            assert h1.ping("10.0.0.2", count=2), switch.flows()
            reflector = [python, "-m", "hairpin.bench.udp_echo", "reflect", "--port", "16961"]
            with background(h2, reflector, work / "reflect.log"):
                assert wait_until(lambda: "ready" in (work / "reflect.log").read_text(), 10)
                probe = h1.popen(
                    python,
                    "-m",
                    "hairpin.bench.udp_echo",
                    "send",
                    "--to",
                    "10.0.0.2:16961",
                    "--rate",
                    "1000",
                    "--seconds",
                    "3",
                    stdout=subprocess.PIPE,
                )
                time.sleep(1.0)
                cut_ns = time.time_ns()
                h2.run("ip", "link", "set", "e2a", "down")
                out, _ = probe.communicate(timeout=30)
            sent = [json.loads(line) for line in out.decode().splitlines()]
            after, gap_ms = udp_gap(sent, cut_ns)
            print(f"fast reroute: {gap_ms:.1f} ms without answers, {after} answers after the cut")
            assert after > 500, f"connectivity not restored: {after} answers after the cut"
            assert "traffic on port 3" in "".join(switch.logs("frr")), switch.logs("frr")
            assert any("in_port=1" in f and "output:3" in f for f in switch.flows()), switch.flows()
            switch.assert_alive()
