"""InSP against PACKET_IN/PACKET_OUT, the measurements of seed 001 section 5 (docs/bench/insp.md).

``python -m hairpin.bench.insp reaction|cpu|memory|model [options]`` (root; hairpind from
target/release or $HAIRPIN_BIN):

- reaction: ARP requests from a host namespace through hairpind, answered by the InSP
  responder (in the switch) and by the classic responder (os-ken, PACKET_IN + PACKET_OUT);
  reaction time from just before the request's send to the kernel's receive timestamp of the
  reply (SO_TIMESTAMPNS). Fig. 7. For reference (``--cases``): InSP with hairpind at a
  real-time priority, and with busy-polling datapath threads (normal priority); the peer's
  kernel answering over one veth (the floor of the method); Open vSwitch (netdev) answering
  with an ARP-responder flow; and on request InSP with TPACKET_V3 receive rings
  (``insp-blocks``).
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
from hairpin.testing.apps import arp_probe, dump_templates, mac_of, osken_app
from hairpin.testing.netns import Host, link, namespace, star, unique_prefix
from hairpin.testing.ovs import ovs_instance
from hairpin.testing.topology import HairpinStar, hairpin_star, wait_until

APPS = {
    "insp": "hairpin.apps.arp_insp",
    "classic": "hairpin.apps.arp_classic",
    "packet_in_only": "hairpin.bench.packet_in_sink",
}
# The switch at a real-time priority, so that the other work on this shared machine cannot
# keep a woken datapath thread from a core; and datapath threads that never sleep, at the
# normal priority (at a real-time one a thread that never sleeps holds off the softirq work
# queued on its core: the same p50, and a p99 of 45-49 ms, docs/bench/insp.md).
REALTIME = {"wrapper": ["chrt", "-f", "50"]}
BUSY_POLL = {"extra_args": ["--busy-poll"]}
DAEMONS = {
    "insp": None,
    "insp-rt": REALTIME,
    "insp-busy": BUSY_POLL,
    "insp-blocks": {"extra_args": ["--rx-ring", "blocks"]},  # TPACKET_V3 (not by default)
}
REACTION_CASES = ("insp", "classic", "insp-rt", "insp-busy", "kernel", "ovs")


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
def responder(
    mode: str, workdir: Path, daemon: dict[str, list[str]] | None = None
) -> Iterator[tuple[HairpinStar, Any]]:
    """Three hosts around hairpind with `mode`'s app; h2's binding learned (except for the
    PACKET_IN sink) and h2's own ARP off, so only the switch or the controller answers.
    `daemon` holds hairpind's extra arguments and wrapper (see `hairpin_star`)."""
    with hairpin_star(workdir, hosts=3, **(daemon or {})) as switch:
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


@contextmanager
def asker_and_target(case: str, workdir: Path) -> Iterator[tuple[Host, str]]:
    """The host that asks and the address it asks for, with `case`'s answerer in place."""
    if case == "kernel":
        # The floor of the method: one veth, the peer's kernel answers in its softirq.
        prefix = unique_prefix()
        with namespace(f"{prefix}-a") as a, namespace(f"{prefix}-b") as b:
            link(a, "eth0", b, "eth0")
            a.run("ip", "addr", "add", "10.0.0.1/24", "dev", "eth0")
            b.run("ip", "addr", "add", "10.0.0.2/24", "dev", "eth0")
            yield Host(a, "10.0.0.1"), "10.0.0.2"
    elif case == "ovs":
        with star(unique_prefix(), 3) as topo, ovs_instance(topo.switch) as ovs:
            _, h2, h3 = topo.hosts
            ovs.add_bridge("br0", 1, topo.ports)
            ovs.ofctl("add-flow", "br0", ovs_arp_responder(h2.address, mac_of(h2)))
            h2.ns.run("ip", "link", "set", "eth0", "arp", "off")
            yield h3, h2.address
    else:
        mode = "insp" if case in DAEMONS else case
        with responder(mode, workdir, DAEMONS.get(case)) as (switch, _):
            yield switch.hosts[2], switch.hosts[1].address


def ovs_arp_responder(address: str, mac: str) -> str:
    """Open vSwitch's own way to answer ARP in the switch: a flow that turns the request into
    the reply in place and sends it back (the OpenStack / OVN ARP responder)."""
    ip_hex = "0x" + "".join(f"{int(b):02x}" for b in address.split("."))
    return (
        f"priority=100,arp,arp_op=1,arp_tpa={address},actions="
        f"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:{mac},"
        "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],"
        f"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],load:0x{mac.replace(':', '')}->NXM_NX_ARP_SHA[],"
        f"load:{ip_hex}->NXM_OF_ARP_SPA[],in_port"
    )


def reaction(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "count": args.count, "rate": args.rate}
    for case in args.cases.split(","):
        with (
            tempfile.TemporaryDirectory(prefix="insp-bench-") as tmp,
            asker_and_target(case, Path(tmp)) as (asker, target),
        ):
            replies = arp_probe(asker, target, args.count, 1 / args.rate, 1.0)
            times = [int(r["reaction_ns"]) for r in replies if r["reaction_ns"] is not None]
            wrong = [r for r in replies if r["reaction_ns"] is not None and r["spa"] != target]
            if wrong or not times:
                raise RuntimeError(f"{case}: wrong or missing replies: {wrong or replies[:3]}")
            results[case] = {
                "lost": len(replies) - len(times),
                **summary_us(times),
                "loadavg": Path("/proc/loadavg").read_text().split()[:3],
                "samples_us": [t / 1000 for t in times],
            }
        shown = {k: v for k, v in results[case].items() if k != "samples_us"}
        print(f"{case:9} {json.dumps(shown)}")
    if "insp" in results and "classic" in results:
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
    r.add_argument("--cases", default=",".join(REACTION_CASES), help="comma-separated")
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
