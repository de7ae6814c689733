"""The seed 001 ARP message model: Table 1's counts, Table 2's rows, Eq. 1's weighting, and
the savings the paper reports in section 5.2.2."""

from __future__ import annotations

import pytest

from hairpin.arpmodel import Approach, Messages, Scenario, Topology, messages, saving, total


def test_table_1_counts() -> None:
    t = Topology(m=4, alpha=10)
    assert (t.switches, t.hosts, t.links, t.distance) == (9, 40, 16 + 4 * 13 - 2, 3)
    assert Topology(m=2, alpha=5).distance == 2
    # Links by hand for M=2, alpha=1: core-aggr 2, aggr-aggr 1, edge-aggr 4, edge-edge 1,
    # hosts 2.
    assert Topology(m=2, alpha=1).links == 10


def test_table_2_rows_for_one_topology() -> None:
    t = Topology(m=4, alpha=10)  # N=40, S=9, E=66, d=3
    row = {(a, s): messages(a, s, t) for a in Approach for s in Scenario}
    assert row[Approach.OF_UNICAST, Scenario.NL_NL] == Messages(66 + 3 + 1, 2 * (66 - 39 + 9) + 6)
    assert row[Approach.OF_UNICAST, Scenario.L_NL] == Messages(70, 2 * (66 - 39) + 9 + 2)
    assert row[Approach.OF_UNICAST, Scenario.L_L] == Messages(8, 2)
    assert row[Approach.OF_RESPONDER, Scenario.NL_NL] == Messages(42, 40 + 18 + 3)
    assert row[Approach.OF_RESPONDER, Scenario.L_L] == Messages(2, 2)
    assert row[Approach.INSP, Scenario.L_L] == Messages(2, 0)
    for s in (Scenario.NL_NL, Scenario.NL_L, Scenario.L_NL):
        assert row[Approach.INSP, s] == row[Approach.OF_RESPONDER, s]


def test_eq_1_weights_the_scenarios() -> None:
    t = Topology(m=3, alpha=5)
    n = t.hosts
    expected = (
        messages(Approach.INSP, Scenario.NL_NL, t)
        + messages(Approach.INSP, Scenario.L_NL, t) * (n - 2)
        + messages(Approach.INSP, Scenario.L_L, t) * (n - 1) ** 2
    )
    assert total(Approach.INSP, t) == expected
    # N(N-1) pings in all: one NL-NL, N-2 L-NL, (N-1)^2 L-L.
    assert 1 + (n - 2) + (n - 1) ** 2 == n * (n - 1)


def test_savings_match_section_5_2_2() -> None:
    small = Topology(m=2, alpha=5)
    insp, unicast = total(Approach.INSP, small), total(Approach.OF_UNICAST, small)
    # "compared to OF-unicast, InSP saves from 58% ... of the messages" in the control plane
    assert saving(insp.control, unicast.control) == pytest.approx(0.58, abs=0.01)
    for m in (2, 10, 50):
        big = Topology(m=m, alpha=50)
        i, r = total(Approach.INSP, big), total(Approach.OF_RESPONDER, big)
        # "... up to a convergence point of 66%, whatever the size of the topology"
        assert saving(i.control, r.control) == pytest.approx(0.66, abs=0.02)
        # InSP and OF-responder send the same ARP messages (Table 2)
        assert i.arp == r.arp
    huge = Topology(m=50, alpha=500)
    u, i = total(Approach.OF_UNICAST, huge), total(Approach.INSP, huge)
    # "this gain converges around 67% in any case" (ARP messages against OF-unicast)
    assert saving(i.arp, u.arp) == pytest.approx(0.67, abs=0.01)
