"""Control-plane processing latency of a learning switch that installs no flows, run as a
controllet in each isolation and as a remote controller (the InFEP paper's Fig. 4 method).

Two hosts around hairpind; h0 sends 64-byte UDP datagrams to h1 at ``--rate`` per second for
``--seconds``, h1 reflects each. Every packet, both ways, misses the flow table and is handled
by the learning switch (packet-in, then packet-out). Kernel software timestamps at both hosts
give ``RTT = t_s,RX - t_s,TX`` and ``T_refl = t_r,TX - t_r,RX``, and the switch's one-way
processing latency ``T_proc = (RTT - T_refl) / 2``. Variants:

- ``rust-bare``: the Rust SDK's learning switch, supervised but neither sandboxed nor limited;
- ``rust-sandbox``: in bubblewrap with cgroup limits, sharing the host's network namespace;
- ``rust-sandbox-busy``: the same beside a busy-polling datapath thread (``--busy-poll``);
- ``rust-sandbox-colocated``: the same with the controllet on the polling thread's core
  (``--datapath-cpus 0`` and the controllet's ``cpu_affinity = "0"``): its wake-up is then a
  local one, not an interrupt to an idle core, and the polling thread yields it the core;
- ``rust-bare-colocated``: ``rust-bare`` placed the same way (what the sandbox costs there);
- ``rust-sandbox-netns``: the same with a network namespace of its own (OpenFlow over TCP);
- ``python-sandbox``: the Python SDK's learning switch, sandboxed like ``rust-sandbox``;
- ``osken-remote``: os-ken's learning switch as a controller over TCP (on this machine, over
  loopback: the remote controller's best case).

Controllets run with ``cpu_weight = 100`` (as much CPU weight as hairpind's own threads) unless
``--cpu-weight`` says otherwise: hairpind's default (2) makes them yield to the switch on a
busy host, which is not what this benchmark measures.

``python -m hairpin.bench.infep_fig4 [--seconds 50] [--rate 100] [--json FILE] [--plot FILE]``
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from hairpin.testing.controllets import (
    find_example,
    hairpind,
    python_controllet,
    shared_tempdir,
)
from hairpin.testing.daemon import REPO
from hairpin.testing.netns import star, unique_prefix
from hairpin.testing.topology import background, wait_until

PYTHON = str(REPO / ".venv" / "bin" / "python")
ECHO_PORT = 16962
OSKEN_PORT = 16963
VARIANTS = [
    "rust-bare",
    "rust-sandbox",
    "rust-sandbox-busy",
    "rust-sandbox-colocated",
    "rust-bare-colocated",
    "rust-sandbox-netns",
    "python-sandbox",
    "osken-remote",
]
# Variants whose datapath thread never sleeps (`hairpind --busy-poll`, a core of its own).
BUSY_POLL = {"rust-sandbox-busy", "rust-sandbox-colocated", "rust-bare-colocated"}
# Variants whose controllet shares the datapath thread's core.
COLOCATED = {"rust-sandbox-colocated", "rust-bare-colocated"}
COLOCATED_CPU = 0
# The target for a sandboxed Rust controllet, T_proc p50 (drawn on the plot).
TARGET_US = 50
# Switch events stay off the bus here: the bus's own cost is measured by infep_bus.
BUS = {"events": ["port_status", "flow_removed"]}


def controllet(variant: str) -> dict[str, object] | None:
    rust = find_example("learning_switch")
    rust_fields = {"program": str(rust), "read_only": [str(rust.parent)], "args": ["--no-flows"]}
    python = python_controllet("hairpin.controllet.examples.learning_switch", "--no-flows")
    declared: dict[str, dict[str, object]] = {
        "rust-bare": rust_fields | {"isolation": "none"},
        "rust-sandbox": rust_fields | {"network": "host"},
        "rust-sandbox-busy": rust_fields | {"network": "host"},
        "rust-sandbox-colocated": rust_fields
        | {"network": "host", "cpu_affinity": str(COLOCATED_CPU)},
        "rust-bare-colocated": rust_fields
        | {"isolation": "none", "cpu_affinity": str(COLOCATED_CPU)},
        "rust-sandbox-netns": rust_fields | {"network": "private", "channel": "tcp"},
        "python-sandbox": python | {"network": "host"},
    }
    fields = declared.get(variant)
    return None if fields is None else {"name": "lsw", "cpu": 1.0} | fields


def datapath_args(variant: str) -> list[str]:
    """hairpind's datapath options for `variant`."""
    args = ["--busy-poll"] if variant in BUSY_POLL else []
    if variant in COLOCATED:
        args += ["--datapath-cpus", str(COLOCATED_CPU)]
    return args


def t_proc_us(sent: Sequence[dict[str, int]], reflected: dict[int, dict[str, int]]) -> list[float]:
    """T_proc per answered datagram, in microseconds."""
    out = []
    for s in sent:
        r = reflected.get(s["seq"])
        if s["tx"] and s["rx"] and r:
            out.append(((s["rx"] - s["tx"]) - (r["tx"] - r["rx"])) / 2000)
    return out


def run_variant(
    variant: str, seconds: float, rate: float, cpu_weight: int = 100
) -> dict[str, object]:
    declared = controllet(variant)
    with ExitStack() as stack:
        work = stack.enter_context(shared_tempdir("hp-fig4-"))
        topo = stack.enter_context(star(unique_prefix(), 2))
        h0, h1 = topo.hosts
        for a, b in ((h0, h1), (h1, h0)):
            mac = b.ns.run("cat", "/sys/class/net/eth0/address").stdout.strip()
            a.ns.run("ip", "neigh", "replace", b.address, "lladdr", mac, "dev", "eth0")
        controllers: list[str] = []
        if declared is None:
            manager = str(Path(PYTHON).parent / "osken-manager")
            app = "hairpin.bench.osken_no_flows"
            args = [manager, "--ofp-tcp-listen-port", str(OSKEN_PORT), app]
            stack.enter_context(background(topo.switch, args, work / "osken.log"))
            controllers = [f"tcp:127.0.0.1:{OSKEN_PORT}"]
        switch = stack.enter_context(
            hairpind(
                topo.switch,
                work,
                topo.ports,
                [declared] if declared else [],
                bus=BUS,
                host={"cpu_weight": cpu_weight},
                controllers=controllers,
                extra_args=datapath_args(variant),
            )
        )
        if declared:
            switch.wait_running("lsw")
        assert wait_until(lambda: any("CONTROLLER" in f for f in switch.flows()), 30), switch.log()
        # Learn both addresses before timing.
        assert h0.ns.ping(h1.address, count=2), switch.flows()
        reflect = [PYTHON, "-m", "hairpin.bench.udp_echo", "reflect"]
        reflect += ["--port", str(ECHO_PORT), "--seconds", str(seconds + 30)]
        reflector = h1.ns.popen(*reflect, stdout=subprocess.PIPE)
        time.sleep(1.0)
        send = [PYTHON, "-m", "hairpin.bench.udp_echo", "send"]
        send += ["--to", f"{h1.address}:{ECHO_PORT}", "--rate", str(rate)]
        send += ["--seconds", str(seconds)]
        load = Path("/proc/loadavg").read_text().split()[0]
        sent_out = h0.ns.run(*send).stdout
        time.sleep(0.5)
        reflector.terminate()
        reflected_out = reflector.communicate(timeout=10)[0].decode()
    sent = [json.loads(line) for line in sent_out.splitlines()]
    reflected = {r["seq"]: r for r in map(json.loads, reflected_out.splitlines()) if "seq" in r}
    samples = sorted(t_proc_us(sent, reflected))
    return {
        "variant": variant,
        "sent": len(sent),
        "answered": len(samples),
        "median_us": statistics.median(samples),
        "mean_us": statistics.fmean(samples),
        "p2_5_us": samples[int(0.025 * (len(samples) - 1))],
        "p97_5_us": samples[int(0.975 * (len(samples) - 1))],
        "stdev_us": statistics.pstdev(samples),
        "loadavg_1m": float(load),
        "samples_us": samples,
    }


def plot(results: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, ax = plt.subplots(figsize=(7, 0.6 * len(results) + 1.6))
    names = [str(r["variant"]) for r in results]
    y = list(range(len(results)))[::-1]
    medians = [float(r["median_us"]) for r in results]  # type: ignore[arg-type]
    low = [m - float(r["p2_5_us"]) for m, r in zip(medians, results, strict=True)]  # type: ignore[arg-type]
    high = [float(r["p97_5_us"]) - m for m, r in zip(medians, results, strict=True)]  # type: ignore[arg-type]
    ax.barh(y, medians, color="#7aa6c2", xerr=[low, high], capsize=3, label="median, 95% whiskers")
    ax.scatter(
        [r["mean_us"] for r in results], y, marker="D", color="black", zorder=3, label="mean"
    )
    ax.set_yticks(y, names)
    ax.axvline(TARGET_US, color="#b04040", linestyle="--", label=f"target, {TARGET_US} µs")
    ax.set_xscale("log")
    # From the power of ten below the fastest whisker, so that every bar shows.
    fastest = min(float(r["p2_5_us"]) for r in results)  # type: ignore[arg-type]
    ax.set_xlim(left=10 ** math.floor(math.log10(min(fastest, TARGET_US))))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("T_proc (µs, log scale): one-way processing through the learning switch")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=50.0)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument(
        "--cpu-weight",
        type=int,
        default=100,
        help="controllets' CPU weight against hairpind's threads (hairpind's default is 2)",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    results = []
    for variant in args.variants:
        result = run_variant(variant, args.seconds, args.rate, args.cpu_weight)
        summary = {k: v for k, v in result.items() if k != "samples_us"}
        print(json.dumps(summary), flush=True)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results))
    if args.plot:
        plot(results, args.plot)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
