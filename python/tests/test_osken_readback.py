"""An os-ken controller installs flows, groups and meters on hairpind and reads every one back
field-by-field equal, as os-ken's switch test tool checks them (see hairpin.apps.readback).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hairpin.apps import readback
from hairpin.testing.daemon import free_tcp_port, running_hairpind, wait_for_tcp

OSKEN_MANAGER = Path(sys.executable).parent / "osken-manager"
RUN_TIMEOUT = 600.0


def expected_checks() -> list[tuple[str, str, str]]:
    """(file, test, kind) of every prerequisite in the suite the app installs, in order."""
    kinds = {"OFPFlowMod": "flow", "OFPGroupMod": "group", "OFPMeterMod": "meter"}
    expected = []
    for path in sorted(readback.DEFAULT_CASES.rglob("*.json")):
        name = str(path.relative_to(readback.DEFAULT_CASES))
        for test in json.loads(path.read_text()):
            if isinstance(test, dict):
                for message in test["prerequisite"]:
                    expected.append((name, str(test["description"]), kinds[next(iter(message))]))
    assert len(expected) > 1000, "the os-ken switch test suite is missing"
    return expected


def test_osken_reads_back_what_it_installed(tmp_path: Path) -> None:
    result_path = tmp_path / "readback.json"
    port = free_tcp_port()
    env = dict(os.environ, HAIRPIN_READBACK_RESULT=str(result_path))
    log_path = tmp_path / "osken.log"
    with log_path.open("wb") as log:
        controller = subprocess.Popen(
            [
                str(OSKEN_MANAGER),
                "--ofp-listen-host",
                "127.0.0.1",
                "--ofp-tcp-listen-port",
                str(port),
                readback.__file__,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_for_tcp(port, 30.0, controller)
        with running_hairpind(controllers=[f"tcp:127.0.0.1:{port}"]) as switch:
            deadline = time.monotonic() + RUN_TIMEOUT
            while not result_path.exists():
                assert controller.poll() is None, log_path.read_text()
                switch.assert_alive()
                assert time.monotonic() < deadline, "os-ken app did not finish"
                time.sleep(0.2)
            switch.assert_alive()
    finally:
        controller.terminate()
        controller.wait(10)

    report = json.loads(result_path.read_text())
    assert report["failure"] == ""
    checks = report["checks"]
    assert [(c["file"], c["test"], c["kind"]) for c in checks] == expected_checks()
    failed = [
        f"{c['file']} [{c['test']}] {c['kind']}: {c['detail']}" for c in checks if not c["ok"]
    ]
    assert failed == [], "\n".join(failed)
    kinds = {c["kind"] for c in checks}
    assert kinds == {"flow", "group", "meter"}
