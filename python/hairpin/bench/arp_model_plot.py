"""Seed 001 Fig. 11 from :mod:`hairpin.arpmodel`: ARP and control messages of the three ARP
handling approaches, and InSP's savings, against the number of hosts, for a small, a medium
and a large datacenter topology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hairpin.arpmodel import Approach, Topology, saving, total

# M aggregation (and edge) switches of the small, medium and large topologies; Table 1 has
# 2 <= M <= 50 and 5 <= alpha <= 50 hosts per edge switch.
TOPOLOGIES = {"small (M=2)": 2, "medium (M=10)": 10, "large (M=50)": 50}
ALPHAS = range(5, 51)


def curves(m: int) -> dict[str, list[float]]:
    """Per host count: messages of each approach and InSP's savings, for M = m."""
    out: dict[str, list[float]] = {"hosts": []}
    for alpha in ALPHAS:
        t = Topology(m, alpha)
        counts = {a: total(a, t) for a in Approach}
        out["hosts"].append(t.hosts)
        for a, c in counts.items():
            out.setdefault(f"arp {a.value}", []).append(c.arp)
            out.setdefault(f"ctrl {a.value}", []).append(c.control)
        insp = counts[Approach.INSP]
        unicast, responder = counts[Approach.OF_UNICAST], counts[Approach.OF_RESPONDER]
        out.setdefault("arp saving vs OF-unicast", []).append(saving(insp.arp, unicast.arp))
        out.setdefault("ctrl saving vs OF-unicast", []).append(
            saving(insp.control, unicast.control)
        )
        out.setdefault("ctrl saving vs OF-responder", []).append(
            saving(insp.control, responder.control)
        )
    return out


def draw(png: Path) -> dict[str, Any]:
    """Draws the nine panels to `png`; returns the first and last savings of each topology."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(13, 11))
    summary: dict[str, Any] = {}
    for col, (name, m) in enumerate(TOPOLOGIES.items()):
        c = curves(m)
        for row, kind in enumerate(("arp", "ctrl")):
            ax = axes[row][col]
            for a in Approach:
                ax.plot(c["hosts"], c[f"{kind} {a.value}"], label=a.value)
            ax.set_yscale("log")
            ax.set_title(f"{'ARP' if kind == 'arp' else 'control'} messages, {name}")
            ax.set_xlabel("hosts")
            ax.legend()
        ax = axes[2][col]
        for key in (
            "arp saving vs OF-unicast",
            "ctrl saving vs OF-unicast",
            "ctrl saving vs OF-responder",
        ):
            ax.plot(c["hosts"], [100 * v for v in c[key]], label=key)
            summary[f"{name}: {key}"] = [round(c[key][0], 3), round(c[key][-1], 3)]
        ax.set_ylim(0, 100)
        ax.set_title(f"InSP savings (%), {name}")
        ax.set_xlabel("hosts")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=80)
    plt.close(fig)
    for key, (first, last) in summary.items():
        print(f"{key}: {100 * first:.0f}% at alpha=5, {100 * last:.0f}% at alpha=50")
    return summary
