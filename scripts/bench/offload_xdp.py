#!/usr/bin/env python3
"""Seed 003 Figs. 6-7 on veth: Hairpin with its XDP fast path as the hardware (`--offload
xdp-veth:xdp`) beside Hairpin in software alone, on the same topology and traffic.

Scenarios (seed 003 section 5.1): a learning switch's rules (destination MAC and VLAN ->
port, the MAC table) forwarding between 2 ports and between all 4 ports; a firewall of 2K
rules (the fast path's ACL holds them all) and of 4K rules (it holds half: the rest stay in
software). A generator pinned to CPU 0 offers 60-byte UDP frames as fast as it can, round
robin over the rules' destinations; the switch runs on CPU 1.

The generator is `xdpgen.c` with `xdpgen.bpf.c` (beside this script, compiled on the fly):
it runs an XDP program with BPF_PROG_RUN in live-frames mode, so frames leave the source's
veth as XDP frames and reach the switch's port as a NIC's buffers reach its driver, with no
socket buffer on the way in (a sender through a socket makes every frame a socket buffer,
which a native XDP program on veth must copy out of first: that copy, not the program,
would be what is measured). Delivered packets per second are Figs. 6a-b and 7a-b; the
switch's CPU (Figs. 6c-d, 7c-d) is what it costs to move the packets through the switch
namespace: the hairpind process (utime + stime) and the NAPI threads of its ports
(threaded NAPI, pinned to CPU 1; GRO on, so that both modes receive through NAPI). In XDP
mode the fast path runs in those NAPI threads; in software mode they hand the frames to
hairpind's AF_PACKET sockets. The hosts' veth ends receive in NAPI threads of their own on
CPU 0, so what a sink costs is counted in neither mode. The figure of merit is packets the
switch sent out (its egress ports' tx counters) per CPU-second of the switch.

Usage (root): scripts/bench/offload_xdp.py [--seconds 10] [--runs 3]
    [--modes software,xdp,xdp-generic] [--out docs/bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from hairpin.testing.daemon import find_hairpind  # noqa: E402
from hairpin.testing.netns import Namespace, star, unique_prefix  # noqa: E402
from hairpin.testing.topology import background, wait_until  # noqa: E402

OF_PORT = 16920
SOURCE_CPU, SWITCH_CPU = "0", "1"
HZ = os.sysconf("SC_CLK_TCK")


def mac_of(ns: Namespace, ifname: str = "eth0") -> str:
    return ns.run("cat", f"/sys/class/net/{ifname}/address").stdout.strip()


def counter(ns: Namespace, ifname: str, name: str) -> int:
    return int(ns.run("cat", f"/sys/class/net/{ifname}/statistics/{name}").stdout)


def napi_threads() -> dict[int, str]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,comm="], capture_output=True, text=True).stdout
    threads = {}
    for line in out.splitlines():
        pid, _, comm = line.strip().partition(" ")
        if comm.startswith("napi/"):
            threads[int(pid)] = comm
    return threads


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def dests_file(frames: list[tuple[str, str]], path: Path) -> None:
    """The generator's destinations, one "MAC IP" per line."""
    path.write_text("".join(f"{mac} {ip}\n" for mac, ip in frames))


def build_generator(directory: Path) -> tuple[Path, Path]:
    """Compiles the generator: its XDP object and the program that runs it."""
    here = Path(__file__).parent
    obj, binary = directory / "xdpgen.bpf.o", directory / "xdpgen"
    multiarch = (
        ["-I/usr/include/x86_64-linux-gnu"]
        if Path("/usr/include/x86_64-linux-gnu").is_dir()
        else []
    )
    subprocess.run(
        [
            "clang",
            "-target",
            "bpf",
            "-O2",
            "-g",
            *multiarch,
            "-c",
            str(here / "xdpgen.bpf.c"),
            "-o",
            str(obj),
        ],
        check=True,
    )
    subprocess.run(["cc", "-O2", "-o", str(binary), str(here / "xdpgen.c"), "-lbpf"], check=True)
    return obj, binary


def scenario(name: str, hosts: list[Namespace]) -> tuple[list[str], list[tuple[int, list]]]:
    """Flows, and per source host index: the (MAC, IP) destinations it sends to."""
    macs = [mac_of(h) for h in hosts]
    if name in ("l2-2ports", "l2-allports"):
        flows = [
            f"priority=10,dl_dst={mac},vlan_tci=0x0000/0x1fff,actions=output:{i + 1}"
            for i, mac in enumerate(macs)
        ]
        if name == "l2-2ports":
            return flows, [(0, [(macs[1], "10.0.0.2")])]
        return flows, [(0, [(macs[1], "10.0.0.2")]), (2, [(macs[3], "10.0.0.4")])]
    rules = 2048 if name == "firewall-2k" else 4096
    dests = [f"10.1.{i // 256}.{i % 256}" for i in range(rules)]
    flows = [f"priority=20,udp,nw_dst={d},tp_dst=9,actions=output:2" for d in dests]
    flows.append("priority=1,ip,actions=drop")
    return flows, [(0, [(macs[1], d) for d in dests])]


def measure(
    name: str, mode: str, seconds: float, generator: tuple[Path, Path], workdir: Path
) -> dict[str, object]:
    host_count = 4 if name == "l2-allports" else 2
    with ExitStack() as stack:
        topo = stack.enter_context(star(unique_prefix(), host_count))
        sw = topo.switch
        hosts = [h.ns for h in topo.hosts]
        for h in hosts:
            # Native XDP redirects into a veth only when the peer runs NAPI (GRO on).
            h.run("ethtool", "-K", "eth0", "gro", "on")
        before = napi_threads()
        for p in topo.ports:
            sw.run("ethtool", "-K", p, "gro", "on")
            sw.run("sh", "-c", f"echo 1 > /sys/class/net/{p}/threaded")
        napi = [pid for pid in napi_threads() if pid not in before]
        for pid in napi:
            subprocess.run(["taskset", "-p", "-c", SWITCH_CPU, str(pid)], capture_output=True)
        # The hosts receive in NAPI threads of their own, on the generator's CPU: what the
        # sinks cost is theirs, in both modes.
        before = napi_threads()
        for h in hosts:
            h.run("sh", "-c", "echo 1 > /sys/class/net/eth0/threaded")
        for pid in (p for p in napi_threads() if p not in before):
            subprocess.run(["taskset", "-p", "-c", SOURCE_CPU, str(pid)], capture_output=True)
        args = [str(find_hairpind()), "--datapath-id", "1", "--fail-mode", "secure"]
        args += ["--listen", f"ptcp:{OF_PORT}:127.0.0.1", "--control-socket", str(workdir / "ctl")]
        args += [arg for i, p in enumerate(topo.ports, 1) for arg in ("--port", f"{i}={p}")]
        if mode != "software":
            args += ["--offload", f"xdp-veth:{mode}"]
        log = workdir / f"hairpind-{name}-{mode}.log"
        process = stack.enter_context(background(sw, args, log))
        subprocess.run(
            ["taskset", "-a", "-p", "-c", SWITCH_CPU, str(process.pid)], capture_output=True
        )
        target = f"tcp:127.0.0.1:{OF_PORT}"
        show = ["ovs-ofctl", "-O", "OpenFlow13", "show", target]
        if not wait_until(lambda: sw.run(*show, check=False).returncode == 0, 20.0):
            raise RuntimeError(f"hairpind did not start: {log.read_text()}")
        flows, sources = scenario(name, hosts)
        flow_file = workdir / "flows.txt"
        flow_file.write_text("\n".join(flows) + "\n")
        sw.run("ovs-ofctl", "-O", "OpenFlow13", "add-flows", target, str(flow_file))
        time.sleep(1.5)  # the placement's publish, and the XDP maps written
        gens = []
        obj, binary = generator
        for i, dests in sources:
            path = workdir / f"dests-{i}"
            dests_file(dests, path)
            cmd = hosts[i].cmd(
                "taskset",
                "-c",
                SOURCE_CPU,
                str(binary),
                str(obj),
                "eth0",
                str(path),
                str(seconds + 4),
            )
            gens.append(
                subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
        time.sleep(2.0)
        sinks = [(hosts[1], "eth0")] + ([(hosts[3], "eth0")] if host_count == 4 else [])
        srcs = [hosts[i] for i, _ in sources]

        out_ports = [f"p{i + 1}" for i in (1, 3)[: len(sinks)]]

        def snapshot() -> tuple[int, int, int, int, float]:
            offered = sum(
                counter(h, "eth0", "tx_packets") + counter(h, "eth0", "tx_dropped") for h in srcs
            )
            forwarded = sum(counter(sw, p, "tx_packets") for p in out_ports)
            delivered = sum(counter(h, i, "rx_packets") for h, i in sinks)
            ticks = cpu_ticks(process.pid) + sum(cpu_ticks(pid) for pid in napi)
            return offered, forwarded, delivered, ticks, time.monotonic()

        o0, f0, d0, c0, t0 = snapshot()
        time.sleep(seconds)
        o1, f1, d1, c1, t1 = snapshot()
        for g in gens:
            _, err = g.communicate()
            if g.returncode != 0:
                raise RuntimeError(f"generator failed: {err}")
        modes = [line.split(": ")[-1] for line in log.read_text().splitlines() if "XDP" in line]
    dt = t1 - t0
    cpu = (c1 - c0) / HZ
    delivered = d1 - d0
    forwarded = f1 - f0
    return {
        "scenario": name,
        "mode": mode,
        "offered_pps": (o1 - o0) / dt,
        "forwarded_pps": forwarded / dt,
        "delivered_pps": delivered / dt,
        "switch_cpu": cpu / dt,
        "pkts_per_cpu_s": forwarded / cpu if cpu > 0 else 0.0,
        "xdp_modes": modes,
    }


def plot(results: list[dict[str, object]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["scenario"] for r in results))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, key, label in (
        (axes[0], "delivered_pps", "delivered (Mpps)"),
        (axes[1], "switch_cpu", "switch CPU (cores)"),
        (axes[2], "pkts_per_cpu_s", "packets per CPU-second (M)"),
    ):
        for k, mode in enumerate(("software", "xdp")):
            values = []
            for n in names:
                cell = [r[key] for r in results if r["scenario"] == n and r["mode"] == mode]
                values.append(statistics.median(cell) if cell else 0.0)
            scale = 1e-6 if key != "switch_cpu" else 1.0
            ax.bar(
                [i + 0.4 * k for i in range(len(names))],
                [v * scale for v in values],
                width=0.4,
                label=mode,
            )
        ax.set_xticks([i + 0.2 for i in range(len(names))], names, rotation=15)
        ax.set_ylabel(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "offload_xdp.png", dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenarios", default="l2-2ports,l2-allports,firewall-2k,firewall-4k")
    parser.add_argument("--modes", default="software,xdp", help="software, xdp, xdp-generic")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "bench")
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"loadavg {' '.join(load)}; generator on CPU {SOURCE_CPU}, switch on CPU {SWITCH_CPU}")
    print(
        f"{'scenario':<13}{'mode':<9}{'offered':>10}{'forwarded':>11}{'delivered':>11}{'cpu':>6}"
        f"{'pkts/cpu-s':>12}"
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="hairpin-xdpgen-") as build:
        generator = build_generator(Path(build))
        for run in range(args.runs):
            for name in args.scenarios.split(","):
                for mode in args.modes.split(","):
                    with tempfile.TemporaryDirectory(prefix="hairpin-xdp-bench-") as tmp:
                        r = measure(name, mode, args.seconds, generator, Path(tmp))
                    results.append(r)
                    print(
                        f"{name:<13}{mode:<9}{r['offered_pps'] / 1e3:>9.0f}K"
                        f"{r['forwarded_pps'] / 1e3:>10.0f}K"
                        f"{r['delivered_pps'] / 1e3:>10.0f}K{r['switch_cpu']:>6.2f}"
                        f"{r['pkts_per_cpu_s'] / 1e6:>11.2f}M  run {run} {r['xdp_modes']}",
                        flush=True,
                    )

    def cell(name: str, mode: str, key: str) -> list[float]:
        return sorted(r[key] for r in results if r["scenario"] == name and r["mode"] == mode)

    print("medians (min-max), xdp against software:")
    for name in args.scenarios.split(","):
        ts, tx = cell(name, "software", "delivered_pps"), cell(name, "xdp", "delivered_pps")
        cs, cx = cell(name, "software", "pkts_per_cpu_s"), cell(name, "xdp", "pkts_per_cpu_s")
        ms, mx = statistics.median(cs), statistics.median(cx)
        print(
            f"  {name}: delivered {statistics.median(tx) / 1e6:.3f} vs "
            f"{statistics.median(ts) / 1e6:.3f} Mpps; packets per CPU-second "
            f"{mx / 1e6:.2f}M ({cx[0] / 1e6:.2f}-{cx[-1] / 1e6:.2f}) vs "
            f"{ms / 1e6:.2f}M ({cs[0] / 1e6:.2f}-{cs[-1] / 1e6:.2f}): {mx / max(ms, 1):.1f}x"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "offload_xdp.json").write_text(
        json.dumps({"loadavg": load, "results": results}, indent=1)
    )
    plot(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
