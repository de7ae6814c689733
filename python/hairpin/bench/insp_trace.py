"""Where an InSP ARP answer's time goes, from kernel tracepoints (docs/bench/insp.md).

``python -m hairpin.bench.insp_trace [--count 40] [--rate 10] [--busy-poll]`` (root, perf):
the InSP responder's setup of ``hairpin.bench.insp reaction``, with ``perf record`` on the
scheduler, network and system-call tracepoints while the probe asks. Each request is
followed through the kernel from the probe's ``sendto`` to the reply reaching the probe's
interface, and the median of every step is printed:

1. the probe's send, up to the request arriving at the switch's port (veth);
2. the softirq that copies it into hairpind's receive ring and wakes the datapath thread;
3. the woken thread waiting for a core;
4. the kernel returning the thread from its sleep in ppoll(2);
5. hairpind in user space: ring, pipeline, InSP, transmit ring, up to its ``sendto`` kick;
6. the reply crossing the veth to the probe's interface.

With ``--busy-poll`` the thread never sleeps, so the wake-up, the wait for a core and the
return from ppoll vanish, and user space runs from the request's arrival at the port.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hairpin.bench.insp import BUSY_POLL, machine, responder

EVENTS = (
    "sched:sched_wakeup",
    "sched:sched_switch",
    "net:netif_rx",
    "syscalls:sys_enter_sendto",
    "syscalls:sys_exit_ppoll",
)
THREAD = "hairpin-dp0"
LINE = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
STEPS = (
    ("probe send -> request at the switch port", "sent", "at_port"),
    ("softirq into the ring -> thread woken", "at_port", "woken"),
    ("woken -> thread on a core", "woken", "running"),
    ("on a core -> back from ppoll", "running", "returned"),
    ("back from ppoll -> reply handed to the kernel", "returned", "kicked"),
    ("request at the port -> reply handed to the kernel", "at_port", "kicked"),
    ("reply handed to the kernel -> at the probe", "kicked", "replied"),
    ("total: probe send -> reply at the probe", "sent", "replied"),
)


def events(script: str) -> Iterator[tuple[float, str, int, str, str]]:
    """(time in us, comm, pid, event, details) of each line of ``perf script``."""
    for line in script.splitlines():
        m = LINE.match(line)
        if m:
            comm, pid, ts, event, rest = m.groups()
            yield float(ts) * 1e6, comm.strip(), int(pid), event, rest


def requests(script: str, probe_pid: int, port: str) -> list[dict[str, float]]:
    """Each request's milestones, in the order the kernel saw them."""
    done: list[dict[str, float]] = []
    req: dict[str, float] | None = None
    for t, comm, pid, event, rest in events(script):
        if pid == probe_pid and event == "syscalls:sys_enter_sendto":
            req = {"sent": t}
        elif req is None:
            continue
        elif event == "net:netif_rx" and pid == probe_pid and f"dev={port} " in rest:
            req.setdefault("at_port", t)
        elif event == "sched:sched_wakeup" and f"comm={THREAD} " in rest and "at_port" in req:
            req.setdefault("woken", t)
        elif event == "sched:sched_switch" and f"next_comm={THREAD} " in rest and "woken" in req:
            req.setdefault("running", t)
        elif event == "syscalls:sys_exit_ppoll" and comm == THREAD and "running" in req:
            req.setdefault("returned", t)
        elif event == "syscalls:sys_enter_sendto" and comm == THREAD and "at_port" in req:
            req.setdefault("kicked", t)
        elif event == "net:netif_rx" and comm == THREAD and "dev=eth0 " in rest and "kicked" in req:
            req["replied"] = t
            done.append(req)
            req = None
    return done


def breakdown(reqs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """The median and minimum of each step that most requests went through (a busy-polling
    thread is rarely woken, so its wake-up steps are left out)."""
    out = {}
    for name, start, end in STEPS:
        spans = sorted(r[end] - r[start] for r in reqs if start in r and end in r)
        if len(spans) * 2 > len(reqs):
            out[name] = {"n": len(spans), "p50": statistics.median(spans), "min": spans[0]}
    return out


def trace(args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="insp-trace-") as tmp,
        responder("insp", Path(tmp), BUSY_POLL if args.busy_poll else None) as (switch, _),
    ):
        _, h2, h3 = switch.hosts
        data = Path(tmp) / "perf.data"
        record = ["perf", "record", "-q", "-a", "-o", str(data)]
        for event in EVENTS:
            record += ["-e", event]
        perf = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # perf's buffers are set up
        probe = subprocess.Popen(
            h3.ns.cmd(
                sys.executable, "-m", "hairpin.testing.probe", "eth0", h2.address,
                "--count", str(args.count), "--interval", str(1 / args.rate),
            ),
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        out, _ = probe.communicate()
        time.sleep(0.2)
        perf.send_signal(2)
        perf.wait()
        script = subprocess.run(
            ["perf", "script", "-i", str(data)], capture_output=True, text=True, check=True
        ).stdout
    replies = [json.loads(line) for line in out.splitlines()]
    reaction = [r["reaction_ns"] / 1000 for r in replies if r["reaction_ns"] is not None]
    reqs = requests(script, probe.pid, "p3")
    results = {
        "machine": machine(),
        "busy_poll": args.busy_poll,
        "count": args.count,
        "probe_reaction_p50_us": statistics.median(reaction),
        "traced": len(reqs),
        "steps_us": breakdown(reqs),
    }
    p50 = results["probe_reaction_p50_us"]
    print(f"probe's reaction time p50 {p50:.1f} us, {len(reqs)} requests traced")
    for name, step in results["steps_us"].items():
        print(f"  {name:50} p50 {step['p50']:6.1f} us  min {step['min']:6.1f}  n {step['n']}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--busy-poll", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = trace(args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
