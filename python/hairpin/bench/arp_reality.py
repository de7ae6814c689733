"""Seed 001's datacenter ARP model (Table 2, Eq. 1) against a fabric of hairpind instances.

``python -m hairpin.bench.arp_reality [--m 2] [--alpha 2] [--json FILE]`` (root) builds Table
1's topology (:mod:`hairpin.testing.fabric`), runs the model's controller
(:mod:`hairpin.apps.arp_fabric`) as OF-responder and then as InSP, and plays Eq. 1: every host
resolves every other host's address once, host after host, starting with nothing learnt. It
counts what really happened and sets it beside what :mod:`hairpin.arpmodel` predicts:

- ARP messages: frames on the cables, by the kernel's interface counters;
- control messages: PACKET_IN, PACKET_OUT, FLOW_MOD and the InSP experimenter messages, cut
  from a capture of the control channel (:mod:`hairpin.testing.ofwire`).

What the model leaves out is counted and named: the flow entries and templates InSP adds per
learnt host, the barriers our controller sends; and the model's one PACKET_OUT too many per
learning resolution (its footnote 3: N-1 hosts to flood to, not N).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hairpin.arpmodel import Approach, Scenario, Topology, messages, total
from hairpin.testing.apps import arp_probe
from hairpin.testing.fabric import CONTROLLER_PORT, Fabric, controller, fabric
from hairpin.testing.ofwire import captured, count_messages

MODES = {"responder": Approach.OF_RESPONDER, "insp": Approach.INSP}


def play_eq1(net: Fabric) -> list[dict[str, object]]:
    """Every host asks for every other host's address once, host after host."""
    replies = []
    addresses = [h.address for h in net.hosts]
    for host in net.hosts:
        others = [a for a in addresses if a != host.address]
        replies += arp_probe(host, others, interval=0.05, timeout=1.0)
    return replies


def counted(net: Fabric, mode: str, workdir: Path) -> dict[str, Any]:
    """Runs the model's controller in `mode` on `net`, plays Eq. 1 and counts."""
    topology = workdir / "fabric.json"
    topology.write_text(json.dumps(net.describe()))
    env = {**os.environ, "HAIRPIN_FABRIC": str(topology), "HAIRPIN_ARP_MODE": mode}
    log = workdir / f"osken-{mode}.log"
    with controller(net, "hairpin.apps.arp_fabric", log, env):
        time.sleep(1.0)  # each switch has its table cleared and ARP sent to the controller
        before = net.link_packets()
        pcap = workdir / f"control-{mode}.pcap"
        with captured(net.ns, CONTROLLER_PORT, pcap):
            replies = play_eq1(net)
            time.sleep(0.5)  # the last barrier replies
        after = net.link_packets()
    answered = sum(r["reaction_ns"] is not None for r in replies)
    cables = {name: after[name] - before[name] for name in after}
    control = count_messages(pcap, CONTROLLER_PORT)
    return {
        "requests": len(replies),
        "answered": answered,
        "arp_messages": sum(cables.values()),
        "arp_on_switch_cables": sum(n for name, n in cables.items() if ":" not in name),
        "control": dict(control),
    }


def expected(approach: Approach, t: Topology) -> dict[str, int]:
    """What the model predicts, and what it leaves out, for our controller on `t`."""
    n, m = t.hosts, t.m
    model = total(approach, t)
    learning = 1 + (n - 2)  # resolutions of Eq. 1 that learn a host: NL-NL and L-NL
    insp = approach is Approach.INSP
    return {
        "model_arp": model.arp,
        "model_control": model.control,
        # Footnote 3: a flood goes to N-1 hosts, the model's control formulas count N.
        "control_without_footnote_3": model.control - learning,
        # Every learnt host gets a template and an answering entry on every edge switch.
        "insp_templates": m * n if insp else 0,
        "insp_flow_mods": m * n if insp else 0,
        "l_l_control": messages(approach, Scenario.L_L, t).control * (n - 1) ** 2,
    }


def check(m: int, alpha: int, workdir: Path) -> dict[str, Any]:
    """Counts of both modes on one fabric (OF-responder first: it installs no templates, so
    the InSP run starts from a clean switch), beside the model's."""
    t = Topology(m, alpha)
    results: dict[str, Any] = {"m": m, "alpha": alpha, "switches": t.switches, "hosts": t.hosts}
    with fabric(workdir, m, alpha) as net:
        for mode, approach in MODES.items():
            results[mode] = {
                "counted": counted(net, mode, workdir),
                "expected": expected(approach, t),
            }
    return results


def summary(results: dict[str, Any]) -> str:
    lines = [
        f"M={results['m']} alpha={results['alpha']}: S={results['switches']} switches, "
        f"N={results['hosts']} hosts"
    ]
    for mode in MODES:
        c, e = results[mode]["counted"], results[mode]["expected"]
        ctl = c["control"]
        of_messages = ctl.get("PACKET_IN", 0) + ctl.get("PACKET_OUT", 0) + ctl.get("FLOW_MOD", 0)
        lines.append(
            f"{mode:9} ARP on cables {c['arp_messages']} (model {e['model_arp']}, "
            f"{c['arp_on_switch_cables']} between switches); PACKET_IN {ctl.get('PACKET_IN', 0)}"
            f" PACKET_OUT {ctl.get('PACKET_OUT', 0)} FLOW_MOD {ctl.get('FLOW_MOD', 0)}"
            f" = {of_messages} (model {e['model_control']}, less footnote 3: "
            f"{e['control_without_footnote_3']}, plus InSP's entries {e['insp_flow_mods']}); "
            f"templates {ctl.get('EXPERIMENTER', 0)} (model: none, ours {e['insp_templates']}); "
            f"barriers {ctl.get('BARRIER_REQUEST', 0)}; answered {c['answered']}/{c['requests']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--alpha", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arp-reality-") as tmp:
        results = check(args.m, args.alpha, Path(tmp))
    print(summary(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
