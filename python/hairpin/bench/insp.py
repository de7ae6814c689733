"""InSP against PACKET_IN/PACKET_OUT, the measurements of seed 001 section 5 (docs/bench/insp.md).

``python -m hairpin.bench.insp reaction|cpu|memory|model [options]`` (root; hairpind from
target/release or $HAIRPIN_BIN):

- reaction: ARP requests from a host namespace through hairpind, answered by the InSP
  responder (in the switch) and by the classic responder (os-ken, PACKET_IN + PACKET_OUT);
  reaction time from just before the request's send to the kernel's receive timestamp of the
  reply (SO_TIMESTAMPNS). Fig. 7.
- cpu: ARP requests at a fixed rate; CPU time of hairpind and of the controller for PACKET_IN
  only, PACKET_IN + PACKET_OUT and InSP. Figs. 8 and 9.
- memory: many ARP reply templates installed; the switch's own accounting per entry (from
  PKTTMP_STATS) beside hairpind's resident memory growth per entry. Section 5.
- model: the datacenter ARP message model (Table 2, Eq. 1) drawn as Fig. 11 to a PNG.

Each prints its figures and, with --json FILE, writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hairpin.templates import template_id
from hairpin.testing.apps import arp_probe, dump_templates, osken_app
from hairpin.testing.topology import HairpinStar, hairpin_star, wait_until

APPS = {
    "insp": "hairpin.apps.arp_insp",
    "classic": "hairpin.apps.arp_classic",
    "packet_in_only": "hairpin.bench.packet_in_sink",
}


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


@contextmanager
def responder(mode: str, workdir: Path) -> Iterator[tuple[HairpinStar, Any]]:
    """Three hosts around hairpind with `mode`'s app; h2's binding learned (except for the
    PACKET_IN sink) and h2's own ARP off, so only the switch or the controller answers."""
    with hairpin_star(workdir, hosts=3) as switch:
        h1, h2, _ = switch.hosts
        with osken_app(switch, APPS[mode], workdir / f"{mode}.log") as app:
            if mode != "packet_in_only" and not h1.ns.ping(h2.address, count=2):
                raise RuntimeError(f"h1 cannot reach h2 under {mode}")
            if mode == "insp":
                key = template_id(h2.address)
                if not wait_until(
                    lambda: dump_templates(switch).get(key, {}).get("flows") == 1, 10
                ):
                    raise RuntimeError("the InSP responder installed no template")
            h2.ns.run("ip", "link", "set", "eth0", "arp", "off")
            yield switch, app


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def summary_us(samples_ns: list[int]) -> dict[str, float]:
    us = [s / 1000 for s in samples_ns]
    return {
        "n": len(us),
        "min": min(us),
        "p50": statistics.median(us),
        "p99": percentile(us, 99),
        "max": max(us),
        "mean": statistics.fmean(us),
    }


def reaction(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "count": args.count, "rate": args.rate}
    for mode in ("insp", "classic"):
        with (
            tempfile.TemporaryDirectory(prefix="insp-bench-") as tmp,
            responder(mode, Path(tmp)) as (switch, _),
        ):
            _, h2, h3 = switch.hosts
            replies = arp_probe(h3, h2.address, args.count, 1 / args.rate, 1.0)
            times = [int(r["reaction_ns"]) for r in replies if r["reaction_ns"] is not None]
            wrong = [r for r in replies if r["reaction_ns"] is not None and r["spa"] != h2.address]
            if wrong or not times:
                raise RuntimeError(f"{mode}: wrong or missing replies: {wrong or replies[:3]}")
            results[mode] = {
                "lost": len(replies) - len(times),
                **summary_us(times),
                "samples_us": [t / 1000 for t in times],
            }
        print(
            f"{mode:8} {json.dumps({k: v for k, v in results[mode].items() if k != 'samples_us'})}"
        )
    results["p50_speedup"] = results["classic"]["p50"] / results["insp"]["p50"]
    print(f"InSP is {results['p50_speedup']:.1f}x faster at p50")
    return results


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process and its waited-for children, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15])


def cpu(args: argparse.Namespace) -> dict[str, Any]:
    hz = os.sysconf("SC_CLK_TCK")
    results: dict[str, Any] = {"machine": machine(), "seconds": args.seconds, "rate": args.rate}
    for mode in ("packet_in_only", "classic", "insp"):
        with (
            tempfile.TemporaryDirectory(prefix="insp-bench-") as tmp,
            responder(mode, Path(tmp)) as (switch, app),
        ):
            _, h2, h3 = switch.hosts
            before = (cpu_ticks(switch.process.pid), cpu_ticks(app.pid), time.monotonic())
            interval = 1 / args.rate
            replies = arp_probe(
                h3, h2.address, int(args.seconds * args.rate), interval, interval * 0.9
            )
            after = (cpu_ticks(switch.process.pid), cpu_ticks(app.pid), time.monotonic())
            wall = after[2] - before[2]
            answered = sum(r["reaction_ns"] is not None for r in replies)
            results[mode] = {
                "switch_cpu_percent": 100 * (after[0] - before[0]) / hz / wall,
                "controller_cpu_percent": 100 * (after[1] - before[1]) / hz / wall,
                "wall_s": wall,
                "requests": len(replies),
                "answered": answered,
            }
        print(f"{mode:15} {json.dumps(results[mode])}")
    return results


def memory(args: argparse.Namespace) -> dict[str, Any]:
    from os_ken.ofproto import ofproto_v1_3 as ofproto
    from os_ken.ofproto import ofproto_v1_3_parser as parser

    from hairpin.insp import BEBA_EXPERIMENTER
    from hairpin.templates import arp_reply
    from hairpin.testing.daemon import connected_client, running_hairpind

    dp = SimpleNamespace(ofproto=ofproto, ofproto_parser=parser, id=1)

    def rss_kib(pid: int) -> int:
        line = next(
            x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS")
        )
        return int(line.split()[1])

    with running_hairpind() as daemon, connected_client(daemon.port) as client:
        client.barrier()
        rss_before = rss_kib(daemon.process.pid)
        for i in range(args.templates):
            msg = arp_reply(
                dp, "02:00:00:00:00:01", f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
            )
            msg.set_xid(i + 1)
            msg.serialize()
            client.send_raw(bytes(msg.buf))
        errors = client.barrier()
        if errors:
            raise RuntimeError(f"{len(errors)} PKTTMP_MODs refused, first {errors[0]}")
        rss_after = rss_kib(daemon.process.pid)
        records = []
        first = 0
        while True:
            body = struct.pack("!II", BEBA_EXPERIMENTER, 3) + struct.pack("!I4x", first)
            data = client.multipart(0xFFFF, body)[8:]
            page = [struct.unpack_from("!IHHH2xIQQI4x", data, o) for o in range(0, len(data), 40)]
            records += page
            if len(page) < 1024:
                break
            first = page[-1][0] + 1
    accounted = [r[7] for r in records]
    results = {
        "machine": machine(),
        "templates": len(records),
        "template_len": records[0][1],
        "copy_ops": records[0][2],
        "accounted_bytes_per_entry": statistics.fmean(accounted),
        "rss_growth_bytes_per_entry": (rss_after - rss_before) * 1024 / args.templates,
    }
    print(json.dumps(results))
    return results


def model(args: argparse.Namespace) -> dict[str, Any]:
    from hairpin.bench.arp_model_plot import draw

    return draw(Path(args.png))


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    top.add_argument("--json", type=Path, help="also write the figures here")
    sub = top.add_subparsers(dest="what", required=True)
    r = sub.add_parser("reaction")
    r.add_argument("--count", type=int, default=100)
    r.add_argument("--rate", type=float, default=5.0)
    c = sub.add_parser("cpu")
    c.add_argument("--seconds", type=float, default=50.0)
    c.add_argument("--rate", type=float, default=100.0)
    m = sub.add_parser("memory")
    m.add_argument("--templates", type=int, default=10_000)
    g = sub.add_parser("model")
    g.add_argument("--png", default="docs/bench/insp_fig11.png")
    args = top.parse_args(argv)
    results = {"reaction": reaction, "cpu": cpu, "memory": memory, "model": model}[args.what](args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
