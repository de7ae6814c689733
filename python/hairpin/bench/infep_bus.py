"""The bus's cost: publish-to-receive delay of a switch event to a local and a remote
subscriber.

hairpind runs its embedded NATS server in the switch namespace, clustered over a control link
with a second ``nats-server`` in another namespace (the "remote" node). Every packet from h0
misses the flow table and becomes a packet-in, which hairpind publishes on
``hairpin.<dpid>.event.packet_in`` stamped with the publication time. One subscriber on each
node (``bus_latency``, the Rust SDK's probe) reads the stamp on arrival; both clocks are this
machine's.

``python -m hairpin.bench.infep_bus [--rate 1000] [--seconds 5] [--json FILE] [--plot FILE]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

from hairpin.testing.controllets import find_example, hairpind, shared_tempdir
from hairpin.testing.daemon import REPO
from hairpin.testing.netns import link, namespace, star, unique_prefix
from hairpin.testing.topology import background, wait_until

PYTHON = str(REPO / ".venv" / "bin" / "python")
ROUTE_PORT = 16956
REMOTE_CLIENT_PORT = 16957
LOCAL_URL = "nats://127.0.0.1:16954"


def remote_server_config(password: str) -> dict[str, object]:
    return {
        "server_name": "remote",
        "listen": f"127.0.0.1:{REMOTE_CLIENT_PORT}",
        "cluster": {
            "name": "hairpin",
            "listen": f"10.98.0.2:{ROUTE_PORT}",
            "routes": [f"nats-route://10.98.0.1:{ROUTE_PORT}"],
        },
        "authorization": {
            "users": [
                {
                    "user": "bench",
                    "password": password,
                    "permissions": {"subscribe": {"allow": ["hairpin.>"]}},
                }
            ]
        },
    }


def plot(results: dict[str, object], path: Path) -> None:
    """Percentiles of the delay, local and remote subscriber side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["p5_us", "p50_us", "p95_us", "p99_us"]
    fig, ax = plt.subplots(figsize=(6, 3))
    for i, where in enumerate(("local", "remote")):
        values = [results[where][k] for k in keys]  # type: ignore[index]
        ax.bar([x + 0.4 * i for x in range(len(keys))], values, width=0.4, label=where)
    ax.set_xticks([x + 0.2 for x in range(len(keys))], [k.split("_")[0] for k in keys])
    ax.set_yscale("log")
    ax.set_ylabel("publish to receive (µs, log)")
    ax.legend()
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    count = int(args.rate * args.seconds)
    probe = str(find_example("bus_latency"))
    with ExitStack() as stack:
        work = stack.enter_context(shared_tempdir("hp-bus-"))
        topo = stack.enter_context(star(unique_prefix(), 2))
        far = stack.enter_context(namespace(f"{topo.switch.name[:-3]}-far"))
        link(topo.switch, "ctl0", far, "ctl0")
        topo.switch.run("ip", "addr", "add", "10.98.0.1/30", "dev", "ctl0")
        far.run("ip", "addr", "add", "10.98.0.2/30", "dev", "ctl0")
        password = "bench-secret"
        (work / "bench.pw").write_text(password)
        (work / "remote.json").write_text(json.dumps(remote_server_config(password)))
        stack.enter_context(
            background(far, ["nats-server", "-c", str(work / "remote.json")], work / "remote.log")
        )
        cluster = {
            "listen": f"10.98.0.1:{ROUTE_PORT}",
            "routes": [f"nats-route://10.98.0.2:{ROUTE_PORT}"],
        }
        users = [{"name": "bench", "password_file": str(work / "bench.pw")}]
        switch = stack.enter_context(
            hairpind(topo.switch, work, topo.ports, [], bus={"cluster": cluster, "users": users})
        )
        switch.ofctl("add-flow", "priority=0,actions=CONTROLLER:65535")

        def routed() -> bool:
            log = switch.call("bus/status")["server_log"]  # type: ignore[index]
            return any("Route connection created" in line for line in log)

        assert wait_until(routed, 20), switch.call("bus/status")
        subscribers = {}
        for where, ns, url in (
            ("local", topo.switch, LOCAL_URL),
            ("remote", far, f"nats://127.0.0.1:{REMOTE_CLIENT_PORT}"),
        ):
            command = [probe, "--url", url, "--user", "bench"]
            command += ["--password-file", str(work / "bench.pw"), "--count", str(count)]
            command += ["--seconds", str(int(args.seconds) + 30)]
            subscribers[where] = ns.popen(
                *command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            assert subscribers[where].stdout is not None
            first = subscribers[where].stdout.readline()
            assert "ready" in first, f"{where}: {first}"
        time.sleep(1.0)  # the remote subscription crosses the route
        h0, h1 = topo.hosts
        # Nothing answers ARP here (no flows, no controller): h0 knows h1's address already.
        mac = h1.ns.run("cat", "/sys/class/net/eth0/address").stdout.strip()
        h0.ns.run("ip", "neigh", "replace", h1.address, "lladdr", mac, "dev", "eth0")
        load = Path("/proc/loadavg").read_text().split()[0]
        send = [PYTHON, "-m", "hairpin.bench.udp_echo", "send", "--to", f"{h1.address}:9"]
        send += ["--rate", str(args.rate), "--seconds", str(args.seconds), "--wait", "0"]
        h0.ns.run(*send)
        results = {"rate": args.rate, "seconds": args.seconds, "loadavg_1m": float(load)}
        for where, process in subscribers.items():
            out, _ = process.communicate(timeout=60)
            results[where] = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(results), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results))
        if args.plot:
            plot(results, args.plot)


if __name__ == "__main__":
    main()
