"""Figures for docs/bench/insp.md from the JSON that ``hairpin.bench.insp`` writes.

``python -m hairpin.bench.insp_plots REACTION.json CPU.json OUTDIR`` draws the reaction times
of every request (Fig. 7 analogue, log scale), their distribution for every case measured
(a CDF), and the CPU bars (Figs. 8 and 9 analogues).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def reaction_figure(results: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for mode, label in (("classic", "PACKET_IN/PACKET_OUT (os-ken)"), ("insp", "InSP")):
        samples = [us / 1000 for us in results[mode]["samples_us"]]
        ax.plot(range(1, len(samples) + 1), samples, marker=".", linestyle="", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("ARP request")
    ax.set_ylabel("reaction time (ms)")
    ax.set_title("ARP reply reaction time, 100 requests at 5/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=80)
    plt.close(fig)


CASE_LABELS = {
    "kernel": "peer's kernel over one veth (floor)",
    "insp-busy": "InSP, busy-polling datapath thread",
    "insp-rt": "InSP, hairpind at real-time priority",
    "insp": "InSP",
    "insp-blocks": "InSP, TPACKET_V3 receive ring",
    "ovs": "Open vSwitch netdev, ARP-responder flow",
    "classic": "PACKET_IN/PACKET_OUT (os-ken)",
}


def reaction_cdf(results: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for case, label in CASE_LABELS.items():
        if case not in results:
            continue
        samples = sorted(results[case]["samples_us"])
        fractions = [(i + 1) / len(samples) for i in range(len(samples))]
        ax.step(
            samples, fractions, where="post", label=f"{label}: p50 {results[case]['p50']:.0f} us"
        )
    ax.set_xscale("log")
    ax.set_xlabel("reaction time (us)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"ARP reaction time, {results['count']} requests at {results['rate']:g}/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=80)
    plt.close(fig)


def cpu_figure(results: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [("packet_in_only", "PACKET_IN only"), ("classic", "PACKET_IN+OUT"), ("insp", "InSP")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    switch = [results[m]["switch_cpu_percent"] for m, _ in modes]
    left.bar([label for _, label in modes], switch)
    left.set_ylabel("hairpind CPU (% of one core)")
    left.set_title("switch (Fig. 8)")
    pairs = [("classic", "OpenFlow"), ("insp", "InSP")]
    controller = [results[m]["controller_cpu_percent"] for m, _ in pairs]
    switch2 = [results[m]["switch_cpu_percent"] for m, _ in pairs]
    labels = [label for _, label in pairs]
    right.bar(labels, switch2, label="switch")
    right.bar(labels, controller, bottom=switch2, label="controller (os-ken)")
    right.set_ylabel("CPU (% of one core)")
    right.set_title("switch + controller (Fig. 9)")
    right.legend()
    fig.suptitle(f"{results['rate']:.0f} ARP requests/s for {results['seconds']:.0f} s")
    fig.tight_layout()
    fig.savefig(png, dpi=80)
    plt.close(fig)


def main(argv: list[str]) -> int:
    reaction, cpu, outdir = Path(argv[0]), Path(argv[1]), Path(argv[2])
    reaction_results = json.loads(reaction.read_text())
    reaction_figure(reaction_results, outdir / "insp_fig7.png")
    reaction_cdf(reaction_results, outdir / "insp_reaction_cdf.png")
    cpu_figure(json.loads(cpu.read_text()), outdir / "insp_fig8_9.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
