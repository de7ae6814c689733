#!/usr/bin/env python3
"""Draws the placement comparison (`cargo bench -p offload --bench cacheflow`'s JSON): the
share of traffic hardware decides, and hardware writes per rule change, against capacity.

Usage: scripts/bench/offload_cacheflow_plot.py JSON PNG
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    data = json.loads(source.read_text())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (share, writes) = plt.subplots(1, 2, figsize=(11, 4))
    for mode in dict.fromkeys(r["mode"] for r in data["results"]):
        rows = [r for r in data["results"] if r["mode"] == mode]
        caps = [r["capacity_percent"] for r in rows]
        share.plot(caps, [100 * r["share"] for r in rows], marker="o", label=mode)
        writes.plot(caps, [r["writes_per_change"] for r in rows], marker="o", label=mode)
    share.set_xscale("log")
    share.set_xlabel("hardware capacity (% of the rules)")
    share.set_ylabel("traffic decided in hardware (%)")
    share.set_title(f"{data['rules']} ACL rules, Zipf traffic")
    writes.set_xscale("log")
    writes.set_yscale("symlog", linthresh=1.0)
    writes.set_xlabel("hardware capacity (% of the rules)")
    writes.set_ylabel("hardware writes per rule change")
    writes.set_ylim(bottom=0)
    writes.set_title("update cost (TCAM moves included)")
    for ax in (share, writes):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
