"""The os-ken switch test tool's VLAN match cases through trunk ports: the tester's cables end on
a legacy switch's access ports, whose VLANs are hairpind's ports (scripts/conformance/run.sh
--target harmless). The whole match and action sets take minutes and are run by hand
(docs/conformance.md); these are the cases of what a trunk could break: the tester's own tags
crossing inside the trunk's, matched by VLAN id and priority.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from hairpin.testing.daemon import find_hairpind

pytestmark = pytest.mark.usefixtures("root")

REPO = Path(__file__).resolve().parents[2]
CASES = "06_VLAN_VID.json,07_VLAN_PCP.json"
# The tool's report when the tester switch received the packet but sent no packet-in within
# its 3 s deadline: the target did its part. run.sh removes the known cause (Open vSwitch's
# cached datapath flows, docs/conformance.md); a run failing only so is run again once.
TESTER_TIMEOUT = "Receiving timeout: increment in rx_packets in tester."
SUMMARY = re.compile(r"^(\w+): (\d+)/(\d+) passed", re.MULTILINE)


def run_cases(out: Path) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Runs the cases; per set (passed, total), and the reasons of every failure."""
    script = REPO / "scripts" / "conformance" / "run.sh"
    args = [str(script), "--target", "harmless", "--sets", "match", "--only", CASES]
    args += ["--port", "16822", "--out", str(out)]
    env = {"HAIRPIND": str(find_hairpind()), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    summary = {s: (int(p), int(t)) for s, p, t in SUMMARY.findall(result.stdout)}
    assert set(summary) == {"match"}, result.stdout + result.stderr
    lines = (out / "match.log").read_text().splitlines()
    reasons = [lines[i + 1].strip() for i, line in enumerate(lines[:-1]) if "ERROR" in line]
    return summary, reasons


def test_vlan_cases_pass_through_trunk_ports(tmp_path: Path) -> None:
    summary, reasons = run_cases(tmp_path / "first")
    if reasons and all(r == TESTER_TIMEOUT for r in reasons):
        summary, reasons = run_cases(tmp_path / "again")
    assert not reasons, f"{summary}: {reasons}"
    for name, (passed, total) in summary.items():
        assert passed == total > 0, f"{name}: {passed}/{total}"
