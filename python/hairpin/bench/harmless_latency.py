"""Seed 000 Table III on veth: ping latency through hairpind alone, the legacy switch alone
(a private Open vSwitch in standalone mode) and HARMLESS (the legacy switch hairpinning two
access ports through hairpind), each with a single forwarding rule per direction and with an
L2 table of 1,000 MAC addresses, without and with background traffic (docs/bench/harmless.md).

``python -m hairpin.bench.harmless_latency [--pings 1000] [--load-mbps 200] [--json FILE]``
(root; hairpind from target/release or $HAIRPIN_BIN).

Each cell is ``ping -c N -i 0.01`` between two hosts: mean and deviation of the round trips
(the paper's figures), with the median and 99th percentile beside them. Hosts have static
neighbour entries, so only the pings cross the switch. The background load is an iperf3 UDP
stream at a fixed rate between two other hosts through the same switches. The legacy switch
alone runs NORMAL whatever the column: its two columns are the same configuration measured
twice.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hairpin.testing import frames
from hairpin.testing.harmless import legacy_site, run_hairpind
from hairpin.testing.netns import Host
from hairpin.testing.topology import background, hairpin_star, wait_until

IPERF_PORT = 16810
L2_FLOWS = 1000
RTT = re.compile(r"time=([\d.]+) ms")


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    return {"cpu": cpu, "cores": os.cpu_count()}


def loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def static_neighbours(hosts: Sequence[Host]) -> None:
    """Every host knows every other's MAC, so no ARP needs the switch (an L2 table has no
    rule for broadcasts)."""
    macs = {h.address: frames.mac_of(h.ns).hex(":") for h in hosts}
    for host in hosts:
        for other in hosts:
            if other is not host:
                host.ns.run(
                    "ip",
                    "neigh",
                    "replace",
                    other.address,
                    "lladdr",
                    macs[other.address],
                    "dev",
                    "eth0",
                    "nud",
                    "permanent",
                )


def flow_lines(
    pipeline: str, pairs: Sequence[tuple[int, int]], hosts: dict[int, Host]
) -> list[str]:
    """The flows of a pipeline between port pairs: ``bridge`` one in_port rule per direction;
    ``l2`` an eth_dst table of 1,000 entries holding the hosts' MACs among random ones."""
    if pipeline == "bridge":
        lines = []
        for a, b in pairs:
            lines += [f"in_port={a},actions=output:{b}", f"in_port={b},actions=output:{a}"]
        return lines
    rng = random.Random(7)
    lines = [
        f"dl_dst={frames.mac_of(hosts[port].ns).hex(':')},actions=output:{port}"
        for pair in pairs
        for port in pair
    ]
    while len(lines) < L2_FLOWS:
        mac = "02:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(5))
        lines.append(f"dl_dst={mac},actions=output:1")
    return lines


def ping(src: Host, dst: Host, count: int) -> list[float]:
    """The round trips of ``count`` pings, in microseconds (lost ones left out)."""
    out = src.ns.run("ping", "-n", "-c", str(count), "-i", "0.01", dst.address, check=False).stdout
    rtts = [float(ms) * 1000 for ms in RTT.findall(out)]
    if len(rtts) < count // 2:
        raise RuntimeError(f"ping {src.address} -> {dst.address} lost most replies:\n{out}")
    return rtts


def summary(rtts: list[float]) -> dict[str, float]:
    """Mean and deviation (the paper's figures), and the median and 99th percentile."""
    ordered = sorted(rtts)
    return {
        "mean_us": round(statistics.fmean(rtts), 1),
        "dev_us": round(statistics.pstdev(rtts), 1),
        "median_us": round(statistics.median(rtts), 1),
        "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        "replies": len(rtts),
    }


@contextmanager
def load(client: Host, server: Host, mbps: float, workdir: Path) -> Iterator[None]:
    """An iperf3 UDP stream of ``mbps`` from ``client`` to ``server`` while the block runs."""
    if mbps <= 0:
        yield
        return
    server_args = ["iperf3", "--server", "--port", str(IPERF_PORT)]
    client_args = ["iperf3", "--client", server.address, "--port", str(IPERF_PORT), "--udp"]
    client_args += ["--bitrate", f"{mbps}M", "--length", "1000", "--time", "3600"]
    with background(server.ns, server_args, workdir / "iperf3-server.log"):
        listening = wait_until(
            lambda: bool(server.ns.run("ss", "-Hltn", f"sport = :{IPERF_PORT}").stdout), 10.0
        )
        assert listening, "iperf3 server did not start"
        with background(client.ns, client_args, workdir / "iperf3-client.log"):
            yield


def measure_cells(
    name: str,
    install: Any,
    probe: tuple[Host, Host],
    loaders: tuple[Host, Host],
    args: argparse.Namespace,
    workdir: Path,
) -> list[dict[str, Any]]:
    rows = []
    for pipeline in ("bridge", "l2"):
        install(pipeline)
        ping(*probe, 20)  # warm up the path
        for mbps in (0.0, args.load_mbps):
            with load(*loaders, mbps, workdir):
                figures = summary(ping(*probe, args.pings))
            row = {"setup": name, "pipeline": pipeline, "load_mbps": mbps, **figures}
            row["loadavg"] = loadavg()
            print(
                f"{name:<9} {pipeline:<6} load {mbps:>4.0f} Mbit/s: "
                f"{figures['mean_us']:7.0f} ± {figures['dev_us']:6.0f} µs, "
                f"median {figures['median_us']:6.0f}, p99 {figures['p99_us']:6.0f} "
                f"({figures['replies']} replies; load average {' '.join(row['loadavg'])})"
            )
            rows.append(row)
    return rows


def hairpind_alone(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    with hairpin_star(workdir, hosts=4, controller_port=None) as star:
        hosts = star.hosts
        static_neighbours(hosts)
        by_port = {i + 1: h for i, h in enumerate(hosts)}

        def install(pipeline: str) -> None:
            star.ofctl("del-flows")
            path = workdir / "flows.txt"
            path.write_text("\n".join(flow_lines(pipeline, [(1, 2), (3, 4)], by_port)) + "\n")
            star.ofctl("add-flows", str(path))

        return measure_cells(
            "hairpind", install, (hosts[0], hosts[1]), (hosts[2], hosts[3]), args, workdir
        )


def legacy_and_harmless(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    rows = []
    with legacy_site(access=(4,), ordinary=4) as site:
        legacy = site.legacy[0]
        ordinary = legacy.ordinary
        static_neighbours(ordinary)
        rows += measure_cells(
            "legacy",
            lambda _: None,
            (ordinary[0], ordinary[1]),
            (ordinary[2], ordinary[3]),
            args,
            workdir,
        )
        hosts = site.access_hosts
        static_neighbours(hosts)
        by_port = {p.of_port: p.host for p in site.access}
        with run_hairpind(site, workdir, controller=False) as daemon:

            def install(pipeline: str) -> None:
                daemon.ofctl("del-flows")
                path = workdir / "flows.txt"
                path.write_text("\n".join(flow_lines(pipeline, [(1, 2), (3, 4)], by_port)) + "\n")
                daemon.ofctl("add-flows", str(path))

            rows += measure_cells(
                "HARMLESS", install, (hosts[0], hosts[1]), (hosts[2], hosts[3]), args, workdir
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=1000)
    parser.add_argument("--load-mbps", type=float, default=200.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"machine: {machine()}, load average {' '.join(loadavg())}")
    with tempfile.TemporaryDirectory(prefix="harmless-latency-") as tmp:
        workdir = Path(tmp)
        rows = hairpind_alone(args, workdir) + legacy_and_harmless(args, workdir)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "cells": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
