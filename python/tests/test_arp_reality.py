"""Seed 001's ARP message model (Table 2, Eq. 1) against counted messages on a fabric of
hairpind instances: Table 1's topology with M = 2, alpha = 2 (five switches, four hosts).

The counts are exact, so they are asserted exactly: ARP frames on the cables as the model
says, control messages as the model says less its footnote-3 approximation, and InSP's own
additions (a template and an answering entry per learnt host and edge switch).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hairpin.bench.arp_reality import check

pytestmark = pytest.mark.usefixtures("root")


def test_counted_messages_match_the_model(tmp_path: Path) -> None:
    results = check(m=2, alpha=2, workdir=tmp_path)
    openflow = {}
    for mode in ("responder", "insp"):
        counted, expected = results[mode]["counted"], results[mode]["expected"]
        control = counted["control"]
        assert counted["answered"] == counted["requests"] == 12, counted
        assert counted["arp_messages"] == expected["model_arp"], counted
        assert counted["arp_on_switch_cables"] == 0, "ARP never crosses a switch cable"
        forwarding = control["FLOW_MOD"] - expected["insp_flow_mods"]
        openflow[mode] = control["PACKET_IN"] + control["PACKET_OUT"]
        assert openflow[mode] + forwarding == expected["control_without_footnote_3"], (
            mode,
            control,
            expected,
        )
        assert control.get("EXPERIMENTER", 0) == expected["insp_templates"], control
    # Once every host is learnt, InSP's edge switches answer: (N-1)^2 resolutions, each a
    # PACKET_IN and a PACKET_OUT fewer.
    assert (
        openflow["responder"] - openflow["insp"] == results["responder"]["expected"]["l_l_control"]
    )
