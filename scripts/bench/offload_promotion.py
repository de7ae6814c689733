#!/usr/bin/env python3
"""Seed 004's rule promotion experiment (section 5.3, Figs. 6-8) on Hairpin's model backend.

The hardware table is cut to what 5% of the policy engine gives (76 rules on the 3500yl, 23
on the 2920, as in the paper) and filled with dummy rules no packet matches, each with a
hard timeout of OFFSET + its order number; as many dummies again go in after them (software,
the table being full), then the two rules of an iperf3 transfer between two hosts, the most
exact of all. As the dummies time out one per second, rules move up to hardware: HP's engine
(`fcfs`) takes them first come, first served, so the iperf rules go up last; the `traffic`
policy moves the hot iperf rules up at once, in place of cold dummies. Every second: the
rules in hardware and in software (`offload/flows`) and the transfer's throughput (iperf3's
intervals). Writes JSON and, with matplotlib, one PNG per device.

Usage (root): scripts/bench/offload_promotion.py [--devices 3500yl,2920]
    [--policies fcfs,traffic] [--offset 10] [--out docs/bench]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from hairpin.testing.daemon import find_hairpind  # noqa: E402
from hairpin.testing.topology import IPERF_PORT, background, hairpin_star, wait_until  # noqa: E402

PROFILES = REPO / "crates" / "offload" / "profiles"
# Device: (shipped profile, hardware rules at 5% of the policy engine, software rate).
DEVICES = {"3500yl": ("hp-3500yl-of10", 76), "2920": ("hp-2920", 23)}


def cut_profile(name: str, scale: float, directory: Path) -> Path:
    """The shipped profile with every capacity scaled (the policy engine's share)."""
    text = (PROFILES / f"{name}.toml").read_text()
    text = re.sub(
        r"^capacity = (\d+)$",
        lambda m: f"capacity = {max(1, round(int(m.group(1)) * scale))}",
        text,
        flags=re.M,
    )
    path = directory / f"{name}-5pct.toml"
    path.write_text(text)
    return path


def hairpinctl(switch: object, *args: str) -> str:
    binary = find_hairpind().parent / "hairpinctl"
    return switch.switch.run(str(binary), *args).stdout  # type: ignore[attr-defined]


def run(device: str, policy: str, offset: int, workdir: Path) -> dict[str, object]:
    profile_name, dummies = DEVICES[device]
    profile = cut_profile(profile_name, 0.05, workdir)
    args = ["--offload", f"{profile}:model", "--promotion", policy]
    duration = offset + dummies + 20 if policy == "fcfs" else offset + 30
    samples: list[dict[str, float]] = []
    with hairpin_star(workdir, hosts=2, controller_port=None, extra_args=args) as switch:
        client, server = switch.hosts
        macs = [h.ns.run("cat", "/sys/class/net/eth0/address").stdout.strip() for h in switch.hosts]
        client.ns.run("ip", "neigh", "replace", server.address, "lladdr", macs[1], "dev", "eth0")
        server.ns.run("ip", "neigh", "replace", client.address, "lladdr", macs[0], "dev", "eth0")
        flows = []
        # Hardware dummies first (the table is empty), then as many in software.
        for k in range(1, 2 * dummies + 1):
            flows.append(
                f"priority=100,hard_timeout={offset + k},ip,nw_dst=192.168.{k // 256}.{k % 256},"
                "actions=output:2"
            )
        for src, dst, out in ((client, server, 2), (server, client, 1)):
            flows.append(
                f"priority=200,ip,in_port={3 - out},nw_src={src.address},nw_dst={dst.address},"
                f"actions=output:{out}"
            )
        path = workdir / "flows.txt"
        path.write_text("\n".join(flows) + "\n")
        start = time.monotonic()
        switch.ofctl("add-flows", str(path))
        server_args = ["iperf3", "--server", "--one-off", "--port", str(IPERF_PORT)]
        with background(server.ns, server_args, workdir / "iperf3-server.log"):
            listening = ["ss", "-Htln", f"sport = :{IPERF_PORT}"]
            wait_until(lambda: bool(server.ns.run(*listening).stdout.strip()), 10.0, 0.05)
            result: dict[str, str] = {}

            def client_run() -> None:
                out = client.ns.run(
                    "iperf3",
                    "--client",
                    server.address,
                    "--port",
                    str(IPERF_PORT),
                    "--time",
                    str(duration),
                    "--interval",
                    "1",
                    "--json",
                    check=False,
                )
                result["json"] = out.stdout

            thread = threading.Thread(target=client_run)
            iperf_start = time.monotonic()
            thread.start()
            while thread.is_alive():
                rules = json.loads(
                    hairpinctl(
                        switch, "--control", str(switch.control_path), "call", "offload/flows"
                    )
                )
                hw = sum(1 for r in rules if r["location"] == "hw")
                samples.append(
                    {
                        "t": time.monotonic() - start,
                        "hw": hw,
                        "sw": len(rules) - hw,
                        "iperf_hw": sum(
                            1 for r in rules if r["priority"] == 200 and r["location"] == "hw"
                        ),
                    }
                )
                time.sleep(1.0)
            thread.join()
        switch.assert_alive()
    report = json.loads(result.get("json") or "{}")
    offset_s = iperf_start - start
    throughput = [
        {"t": offset_s + i["sum"]["end"], "mbps": i["sum"]["bits_per_second"] / 1e6}
        for i in report.get("intervals", [])
    ]
    return {
        "device": device,
        "policy": policy,
        "dummies": dummies,
        "offset": offset,
        "rules": samples,
        "throughput": throughput,
    }


def plot(runs: list[dict[str, object]], device: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = [r for r in runs if r["device"] == device]
    fig, axes = plt.subplots(
        2, len(mine), figsize=(6 * len(mine), 6), sharex="col", sharey="row", squeeze=False
    )
    for col, r in enumerate(mine):
        rules, tput = r["rules"], r["throughput"]
        ax = axes[0][col]
        ax.plot([s["t"] for s in rules], [s["hw"] for s in rules], label="hardware table")
        ax.plot([s["t"] for s in rules], [s["sw"] for s in rules], label="software table")
        ax.set_title(f"{device}, {r['policy']}: rules per table")
        ax.set_ylabel("rules")
        ax.legend()
        ax = axes[1][col]
        ax.plot([s["t"] for s in tput], [s["mbps"] for s in tput], color="tab:green")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(0, 2000)
        ax.set_ylabel("iperf3 throughput (Mbit/s)")
        ax.set_xlabel("time since the flows went in (s)")
    fig.tight_layout()
    fig.savefig(out / f"offload_promotion_{device}.png", dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="3500yl,2920")
    parser.add_argument("--policies", default="fcfs,traffic")
    parser.add_argument("--offset", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "bench")
    parser.add_argument("--plot-only", action="store_true", help="redraw from the JSON in --out")
    args = parser.parse_args()
    if args.plot_only:
        runs = json.loads((args.out / "offload_promotion.json").read_text())["runs"]
        for device in args.devices.split(","):
            plot(runs, device, args.out)
        return 0
    runs = []
    load = Path("/proc/loadavg").read_text().split()[:3]
    for device in args.devices.split(","):
        for policy in args.policies.split(","):
            with tempfile.TemporaryDirectory(prefix="hairpin-promotion-") as tmp:
                r = run(device, policy, args.offset, Path(tmp))
            up = next((s["t"] for s in r["rules"] if s["iperf_hw"] == 2), None)
            tput = [s["mbps"] for s in r["throughput"]]
            before = tput[: max(1, len(tput) // 8)]
            at = "never" if up is None else f"{up:.1f} s"
            print(
                f"{device} {policy}: iperf rules in hardware at {at}; "
                f"throughput first {sum(before) / len(before):.1f} Mbit/s, "
                f"max {max(tput, default=0):.1f} Mbit/s",
                flush=True,
            )
            runs.append(r)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "offload_promotion.json").write_text(
        json.dumps({"loadavg": load, "runs": runs}, indent=1)
    )
    for device in args.devices.split(","):
        plot(runs, device, args.out)
    print(f"loadavg at start {' '.join(load)}; JSON and PNGs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
