"""The CAPEX model of seed 000 ("Transition to SDN is HARMLESS"), section II (hardware and
software switches) and section III-B (HARMLESS), for a deployment of ``x`` access ports at
1G or 10G, in US dollars of the paper's price survey:

- hardware (HW): the cheapest 48-port OpenFlow switch, $2,200 at 1G, $3,900 at 10G;
- software (SW): $1,400 servers (one CPU, 4x1G built in, 3 PCIe slots), NICs of 4x1G at $100
  or 4x10G at $400, and a second $400 CPU for a server that uses its third slot (more than 12
  ports at 1G, 8 at 10G);
- HARMLESS (HL): the legacy switches are in stock; a server takes 144 access ports at 1G (72
  at 10G), 12 access ports per trunk, trunk NICs of 4x10G at $400 (2x40G at $500 for 10G
  access), the second CPU as above.

The ceilings are the paper's: a partly used switch, server or NIC is bought whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import ceil
from pathlib import Path

SPEEDS = ("1G", "10G")
KINDS = ("HW", "SW", "HL")


def _check(x: int) -> None:
    if x < 0:
        raise ValueError(f"a deployment has no {x} ports")


def hardware(x: int, speed: str) -> int:
    """C_HW: 48-port OpenFlow switches."""
    _check(x)
    price = {"1G": 2200, "10G": 3900}[speed]
    return price * ceil(x / 48)


def software(x: int, speed: str) -> int:
    """C_SW: servers of 16 ports at 1G (12 at 10G), each with a second CPU unless it is the
    last and holds at most 12 ports at 1G (8 at 10G)."""
    _check(x)
    if speed == "1G":
        servers = ceil(x / 16)
        extra_cpu = 1 if 0 < x % 16 < 13 else 0
        return 1400 * servers + 100 * (ceil(x / 4) - servers) + 400 * (servers - extra_cpu)
    servers = ceil(x / 12)
    extra_cpu = 1 if 0 < x % 12 < 9 else 0
    return 1400 * servers + 400 * ceil(x / 4) + 400 * (servers - extra_cpu)


def harmless(x: int, speed: str) -> int:
    """C_HL: a server per 144 access ports at 1G (72 at 10G), a trunk NIC per 48 (24)."""
    _check(x)
    if speed == "1G":
        servers = ceil(x / 144)
        extra_cpu = 1 if 0 < x % 144 < 97 else 0
        return 1400 * servers + 400 * ceil(x / 48) + 400 * (servers - extra_cpu)
    servers = ceil(x / 72)
    extra_cpu = 1 if 0 < x % 72 < 49 else 0
    return 1400 * servers + 500 * ceil(x / 24) + 400 * (servers - extra_cpu)


MODELS = {"HW": hardware, "SW": software, "HL": harmless}


def cost(kind: str, x: int, speed: str) -> int:
    return MODELS[kind](x, speed)


@dataclass(frozen=True)
class Row:
    ports: int
    costs: dict[tuple[str, str], int]  # (kind, speed) -> USD


def table(port_counts: Iterable[int]) -> list[Row]:
    return [Row(x, {(k, s): cost(k, x, s) for s in SPEEDS for k in KINDS}) for x in port_counts]


def format_table(rows: Sequence[Row]) -> str:
    header = ["ports"] + [f"{k} {s}" for s in SPEEDS for k in KINDS]
    lines = [header] + [
        [str(r.ports)] + [f"${r.costs[(k, s)]:,}" for s in SPEEDS for k in KINDS] for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )


def plot(path: Path, max_ports: int = 5000) -> None:
    """Fig. 8-style step curves of the three deployments, 1G and 10G side by side, ports on a
    log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(1, max_ports + 1))
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    styles = {
        "HW": ("tab:red", "HW (OpenFlow switches)"),
        "SW": ("tab:blue", "SW (software switches)"),
        "HL": ("tab:green", "HL (HARMLESS)"),
    }
    for axis, speed in zip(axes, SPEEDS, strict=True):
        for kind in KINDS:
            color, label = styles[kind]
            axis.step(
                xs,
                [cost(kind, x, speed) / 1000 for x in xs],
                where="post",
                color=color,
                label=label,
            )
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel(f"access ports at {speed}")
        axis.set_title(f"CAPEX at {speed} access")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("CAPEX (thousand USD)")
    axes[0].legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
