"""The HARMLESS manager when things go wrong: refusals at `plan` (unknown port, VLAN in use,
unreachable device), a commit that fails half-way, a `hairpind` that cannot start, a trunk that
stays silent. Each leaves the legacy switch exactly as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hairpin.testing.legacy import LegacySwitch, legacy_switch
from hairpin.testing.manager import (
    SWITCH_PORT,
    all_pairs,
    chatter,
    cleanup_daemon,
    harmless,
    pings,
    write_config,
)
from hairpin.testing.netns import Namespace, link, namespace, unique_prefix
from hairpin.testing.topology import background, wait_until

# Runs the real ovs-vsctl, except that the first transaction changing ports applies only its
# first half and then fails, as a device whose commit stops part-way.
HALF_COMMIT = """#!/usr/bin/env python3
import os, subprocess, sys
args = sys.argv[1:]
marker = {marker!r}
if "Port" in args and ("set" in args or "clear" in args) and not os.path.exists(marker):
    open(marker, "w").close()
    first = args.index("--")
    options, commands, current = args[:first], [], []
    for word in args[first + 1:] + ["--"]:
        if word == "--":
            commands.append(current)
            current = []
        else:
            current.append(word)
    half = [w for command in commands[: len(commands) // 2] for w in ["--", *command]]
    subprocess.run(["ovs-vsctl", *options, *half], check=True)
    done, total = len(commands) // 2, len(commands)
    sys.exit("ovs-vsctl: injected failure after %d of %d changes" % (done, total))
os.execvp("ovs-vsctl", ["ovs-vsctl", *args])
"""


@dataclass
class Site:
    server: Namespace
    legacy: LegacySwitch
    workdir: Path


@contextmanager
def site(tmp_path: Path, hosts: int = 3) -> Iterator[Site]:
    prefix = unique_prefix()
    with ExitStack() as stack:
        stack.callback(cleanup_daemon, tmp_path)
        server = stack.enter_context(namespace(f"{prefix}-srv"))
        addresses = [f"10.0.0.{i}" for i in range(1, hosts + 1)]
        legacy = stack.enter_context(legacy_switch(f"{prefix}-a", hosts, server, "tr1", addresses))
        yield Site(server, legacy, tmp_path)


def assert_untouched(s: Site, before: str) -> None:
    assert s.legacy.dump() == before
    assert not (s.workdir / "state" / "e2e" / "state.json").exists()
    assert pings(all_pairs(s.legacy.hosts), count=1) == []


@pytest.mark.usefixtures("root")
def test_plan_shows_and_refuses_before_any_change(tmp_path: Path) -> None:
    with site(tmp_path) as s:
        before = s.legacy.dump()
        good = write_config(tmp_path / "good.yaml", {"sw": (s.legacy, "tr1", ["p1", "p2"])})
        plan = harmless(s.server, good, "plan")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert "+port p1 tag=101 vlan_mode=access" in plan.stdout, plan.stdout
        assert "+port t1 trunks=101,102 vlan_mode=trunk" in plan.stdout, plan.stdout
        assert s.legacy.dump() == before

        unknown = write_config(tmp_path / "unknown.yaml", {"sw": (s.legacy, "tr1", ["p1", "p9"])})
        result = harmless(s.server, unknown, "up")
        assert result.returncode == 2, result.stdout + result.stderr
        line = next(
            n for n, t in enumerate(unknown.read_text().splitlines(), 1) if "access_ports" in t
        )
        assert f"{unknown}:{line}: device sw has no port p9" in result.stderr, result.stderr

        s.legacy.ovs.vsctl("set", "Port", "p3", "tag=102")
        in_use = s.legacy.dump()
        result = harmless(s.server, good, "plan")
        assert result.returncode == 2, result.stdout + result.stderr
        assert "VLAN 102 (for sw:p2) is already used on device sw on ports p3" in result.stderr
        s.legacy.ovs.vsctl("set", "Port", "p3", "tag=1")

        text = good.read_text().replace(s.legacy.db, "unix:/nonexistent/db.sock")
        unreachable = tmp_path / "unreachable.yaml"
        unreachable.write_text(text)
        result = harmless(s.server, unreachable, "up")
        assert result.returncode == 2, result.stdout + result.stderr
        assert "device sw (hairpin_ovs unix:/nonexistent/db.sock) unreachable" in result.stderr

        no_nic = tmp_path / "no-nic.yaml"
        no_nic.write_text(good.read_text().replace("interface: tr1", "interface: tr9"))
        result = harmless(s.server, no_nic, "plan")
        assert result.returncode == 2
        assert "this server has no interface tr9 (the trunk from sw:t1)" in result.stderr
        assert in_use != before
        assert_untouched(s, before)


@pytest.mark.usefixtures("root")
def test_commit_failing_half_way_leaves_the_switch_as_it_was(tmp_path: Path) -> None:
    with site(tmp_path) as s:
        before = s.legacy.dump()
        wrapper = tmp_path / "ovs-vsctl-half"
        wrapper.write_text(HALF_COMMIT.format(marker=str(tmp_path / "failed-once")))
        wrapper.chmod(0o755)
        config = write_config(tmp_path / "harmless.yaml", {"sw": (s.legacy, "tr1", ["p1", "p2"])})
        text = config.read_text().replace(
            "    trunks:", f"    optional_args: {{vsctl: {wrapper}}}\n    trunks:"
        )
        config.write_text(text)
        result = harmless(s.server, config, "up")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "injected failure after 2 of 4 changes" in result.stderr, result.stderr
        assert "every device was put back as it was" in result.stderr
        assert (tmp_path / "failed-once").exists()
        backups = list((tmp_path / "state" / "e2e" / "backups" / "sw").glob("*.cfg"))
        assert len(backups) == 1
        assert_untouched(s, before)


@pytest.mark.usefixtures("root")
def test_hairpind_that_cannot_start_changes_nothing(tmp_path: Path) -> None:
    with site(tmp_path) as s:
        before = s.legacy.dump()
        config = write_config(tmp_path / "harmless.yaml", {"sw": (s.legacy, "tr1", ["p1", "p2"])})
        # Something else holds hairpind's OpenFlow listening port.
        squatter = [
            "python3",
            "-c",
            "import socket,time; s=socket.socket(); "
            f"s.bind(('127.0.0.1',{SWITCH_PORT})); s.listen(); time.sleep(60)",
        ]
        with background(s.server, squatter, tmp_path / "squatter.log"):
            assert wait_until(
                lambda: bool(s.server.run("ss", "-Htln", f"sport = :{SWITCH_PORT}").stdout), 10
            )
            result = harmless(s.server, config, "up")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "hairpind exited" in result.stderr, result.stderr
        assert "Address already in use" in result.stderr, result.stderr
        assert "no device was changed" in result.stderr
        assert_untouched(s, before)


@pytest.mark.usefixtures("root")
def test_silent_trunk_makes_up_put_the_switch_back(tmp_path: Path) -> None:
    with site(tmp_path) as s:
        before = s.legacy.dump()
        # The deployment names a server interface that is cabled to nothing of the switch.
        link(s.server, "loose", s.server, "loose-peer")
        config = write_config(
            tmp_path / "harmless.yaml", {"sw": (s.legacy, "loose", ["p1", "p2"])}, trunk_timeout=2
        )
        with chatter(s.legacy.hosts[0], s.legacy.hosts[1], tmp_path):
            result = harmless(s.server, config, "up")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "no traffic on trunk loose (from sw:t1) within 2 s" in result.stderr, result.stderr
        assert "committed sw" in result.stdout, result.stdout
        assert "put sw back from" in result.stdout
        state = tmp_path / "state" / "e2e"
        assert (
            json.loads((state / "backups" / "sw").glob("*.json").__next__().read_text())["reason"]
            == "up"
        )
        assert_untouched(s, before)
