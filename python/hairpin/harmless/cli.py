"""``hairpin-harmless``: the HARMLESS manager's command line.

Exit status: 0 done; 1 failed and everything was put back; 2 refused before any change (a bad
deployment file, an unreachable device, an unknown port, a VLAN in use); 3 failed and could
not put everything back (the message says which device and backup).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hairpin.harmless import capex
from hairpin.harmless.config import ConfigError, load
from hairpin.harmless.hairpind import DaemonError
from hairpin.harmless.manager import Failed, Manager, Refused, RevertFailed
from hairpin.harmless.state import StateError

DEFAULT_CONFIG = "harmless.yaml"
CAPEX_PORTS = "12,48,96,144,288,576,1152,2304"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hairpin-harmless",
        description="Migrate legacy 802.1Q switches to SDN with Hairpin (HARMLESS), and back.",
    )
    parser.add_argument(
        "-c",
        "--config",
        type=Path,
        default=Path(os.environ.get("HAIRPIN_HARMLESS_CONFIG", DEFAULT_CONFIG)),
        help="deployment file (default: $HAIRPIN_HARMLESS_CONFIG or ./harmless.yaml)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("plan", help="show the VLAN map and each device's diff; change nothing")
    commands.add_parser("up", help="configure the devices and start hairpind, all or nothing")
    commands.add_parser("down", help="put every device back from its backup, stop hairpind")
    commands.add_parser("status", help="the deployment's health (exit 1 when degraded)")
    add = commands.add_parser("add-port", help="take over one more access port")
    add.add_argument("device")
    add.add_argument("port")
    add.add_argument("--vlan", type=int)
    add.add_argument("--of-port", type=int)
    add.add_argument("--name")
    add.add_argument("--trunk", help="the device's trunk port, when it has several")
    remove = commands.add_parser("remove-port", help="give an access port back to the device")
    remove.add_argument("device")
    remove.add_argument("port")
    watch = commands.add_parser("watch", help="turn legacy link changes into PORT_STATUS")
    watch.add_argument("--once", action="store_true", help="one round, then exit")
    cost = commands.add_parser("capex", help="the paper's CAPEX model: a table and a PNG")
    cost.add_argument("--ports", default=CAPEX_PORTS, help=f"port counts (default {CAPEX_PORTS})")
    cost.add_argument("--png", type=Path, help="draw Fig. 8-style curves to this file")
    cost.add_argument("--max-ports", type=int, default=5000)
    return parser


def _capex(args: argparse.Namespace) -> int:
    try:
        counts = [int(v) for v in args.ports.split(",") if v.strip()]
        print(capex.format_table(capex.table(counts)))
    except ValueError as e:
        print(f"hairpin-harmless: capex: {e}", file=sys.stderr)
        return 2
    if args.png is not None:
        capex.plot(args.png, args.max_ports)
        print(f"curves drawn to {args.png}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Nornir logs each failed task with its traceback; the manager reports failures itself.
    logging.getLogger("nornir").addHandler(logging.NullHandler())
    logging.getLogger("nornir").propagate = False
    if args.command == "capex":
        return _capex(args)
    try:
        deployment = load(args.config)
        manager = Manager(deployment, sys.stdout)
        if args.command == "plan":
            manager.plan()
        elif args.command == "up":
            manager.up()
        elif args.command == "down":
            manager.down()
        elif args.command == "status":
            return 0 if manager.status() else 1
        elif args.command == "add-port":
            manager.add_port(args.device, args.port, args.vlan, args.of_port, args.name, args.trunk)
        elif args.command == "remove-port":
            manager.remove_port(args.device, args.port)
        elif args.command == "watch":
            from hairpin.harmless.watch import Watcher

            Watcher(deployment, sys.stdout).run(once=args.once)
    except (ConfigError, Refused) as e:
        for line in str(e).splitlines():
            print(f"hairpin-harmless: {line}", file=sys.stderr)
        return 2
    except (StateError, DaemonError) as e:
        print(f"hairpin-harmless: {e}", file=sys.stderr)
        return 2
    except Failed as e:
        print(f"hairpin-harmless: {args.command} failed: {e}", file=sys.stderr)
        return 1
    except RevertFailed as e:
        print(f"hairpin-harmless: {args.command} failed, NOT PUT BACK: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
