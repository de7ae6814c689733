"""What a hostile controllet costs the switch: hairpind's OpenFlow echo latency and its
forwarding throughput with a learning-switch controllet alone, and with hostile controllets
beside it (one spinning at its CPU limit, one allocating past its memory limit and being
killed and restarted, one forking at its process limit), in alternating rounds.

Echo latency: a client in the switch namespace sends OFPT_ECHO_REQUESTs one at a time over TCP
and times each reply. Throughput: one iperf3 TCP transfer between two hosts through the flows
the learning switch installed.

``python -m hairpin.bench.infep_isolation [--rounds 3] [--seconds 3] [--json FILE]``
(``... echo PORT COUNT`` is the echo client, run inside the switch namespace.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from hairpin.testing.controllets import (
    OF_PORT,
    find_example,
    hairpind,
    python_controllet,
    shared_tempdir,
)
from hairpin.testing.daemon import OFPT_ECHO_REQUEST, REPO, OfClient
from hairpin.testing.netns import star, unique_prefix
from hairpin.testing.topology import iperf3_tcp_bps, wait_until

PYTHON = str(REPO / ".venv" / "bin" / "python")
HOSTILE = REPO / "python" / "tests" / "data" / "hostile_controllet.py"
HOSTILES = {
    "hostile-cpu": (["cpu"], {"cpu": 0.5}),
    "hostile-mem": (["memory"], {"memory": "64M"}),
    "hostile-fork": (["fork"], {"pids": 32}),
}


def echo_latency(port: int, count: int) -> list[float]:
    """Echo round trips to hairpind on 127.0.0.1:port, in microseconds (run in its namespace)."""
    with OfClient(port) as client:
        client.handshake()
        samples = []
        for _ in range(count):
            start = time.perf_counter_ns()
            client.request(OFPT_ECHO_REQUEST, b"x" * 8)
            samples.append((time.perf_counter_ns() - start) / 1000)
    return samples


def start_hostiles(switch: object) -> None:
    python = python_controllet("x")
    for name, (args, limits) in HOSTILES.items():
        declaration = {
            "name": name,
            "program": python["program"],
            "args": [str(HOSTILE), *args],
            "read_only": python["read_only"],
        } | limits
        switch.call("controllet/start", declaration)  # type: ignore[attr-defined]


def measure(switch: object, topo: object, work: Path, seconds: int, count: int) -> dict[str, float]:
    ns = topo.switch  # type: ignore[attr-defined]
    echo = [PYTHON, "-m", "hairpin.bench.infep_isolation", "echo", str(OF_PORT), str(count)]
    samples = json.loads(ns.run(*echo).stdout)
    h0, h1 = topo.hosts  # type: ignore[attr-defined]
    bps = iperf3_tcp_bps(h0, h1, work, seconds)
    return {
        "echo_median_us": statistics.median(samples),
        "echo_p95_us": sorted(samples)[int(0.95 * (len(samples) - 1))],
        "throughput_gbps": bps / 1e9,
        "loadavg_1m": float(Path("/proc/loadavg").read_text().split()[0]),
    }


def main() -> None:
    if sys.argv[1:2] == ["echo"]:
        print(json.dumps(echo_latency(int(sys.argv[2]), int(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--echoes", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--cpu-weight",
        type=int,
        help="the controllets' CPU weight against hairpind's 100 (default: hairpind's own)",
    )
    args = parser.parse_args()
    lsw = find_example("learning_switch")
    runs: dict[str, list[dict[str, float]]] = {"alone": [], "hostile": []}
    with ExitStack() as stack:
        work = stack.enter_context(shared_tempdir("hp-iso-"))
        topo = stack.enter_context(star(unique_prefix(), 2))
        declared = {"name": "lsw", "program": str(lsw), "read_only": [str(lsw.parent)]}
        host = {} if args.cpu_weight is None else {"cpu_weight": args.cpu_weight}
        switch = stack.enter_context(hairpind(topo.switch, work, topo.ports, [declared], host=host))
        switch.wait_running("lsw")
        h0, h1 = topo.hosts
        assert h0.ns.ping(h1.address, count=2), switch.flows()
        for _ in range(args.rounds):
            runs["alone"].append(measure(switch, topo, work, args.seconds, args.echoes))
            start_hostiles(switch)

            def contained() -> bool:
                usage = {n: switch.status(n) for n in HOSTILES}
                spinning = any("cpu share" in line for line in switch.logs("hostile-cpu"))
                return (
                    usage["hostile-mem"]["restarts"] >= 1  # type: ignore[operator]
                    and usage["hostile-fork"]["usage"]["forks_refused"] > 0  # type: ignore[index]
                    and spinning
                )

            assert wait_until(contained, 30, 0.5), switch.call("controllet/list")
            runs["hostile"].append(measure(switch, topo, work, args.seconds, args.echoes))
            for name in HOSTILES:
                switch.call("controllet/stop", {"name": name})
            assert wait_until(
                lambda: all(switch.status(n)["state"] == "stopped" for n in HOSTILES), 20
            )
    summary: dict[str, object] = {}
    for key in ("echo_median_us", "echo_p95_us", "throughput_gbps"):
        alone = statistics.median(r[key] for r in runs["alone"])
        hostile = statistics.median(r[key] for r in runs["hostile"])
        summary[key] = {
            "alone": alone,
            "hostile": hostile,
            "change_pct": 100 * (hostile - alone) / alone,
            "alone_runs": [r[key] for r in runs["alone"]],
            "hostile_runs": [r[key] for r in runs["hostile"]],
        }
    summary["loadavg_1m"] = [r["loadavg_1m"] for r in runs["alone"] + runs["hostile"]]
    print(json.dumps(summary, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
