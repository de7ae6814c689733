"""A remote controller's ear on the bus: connects to a NATS server of the cluster (any node),
prints one JSON line for each thing the controllets publish, each controllet that joins or
leaves, and each port change, from every switch; on start it asks each switch named with
``--switch DPID`` for its ports (request/reply). Run beside any OpenFlow controller::

    python -m hairpin.controllet.examples.remote_controller --url nats://10.0.0.1:4222 \\
        --user remote --password-file /etc/hairpin/remote.pw --switch 000000000000002a
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

import nats
from nats.aio.msg import Msg
from os_ken.ofproto import ofproto_v1_3


def describe(msg: Msg) -> dict[str, object]:
    """The JSON line printed for one bus message."""
    parts = msg.subject.split(".")
    line: dict[str, object] = {"subject": msg.subject, "switch": parts[1]}
    if parts[2] == "event":
        # An OpenFlow PORT_STATUS: reason at 8, the port number at 16, state at 16 + 36.
        data = msg.data
        line["port"] = int.from_bytes(data[16:20], "big")
        state = int.from_bytes(data[16 + 36 : 16 + 40], "big")
        line["up"] = not state & ofproto_v1_3.OFPPS_LINK_DOWN
    else:
        text = msg.data.decode(errors="replace")
        try:
            line["data"] = json.loads(text)
        except ValueError:
            line["data"] = text
    return line


async def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--url", default="nats://127.0.0.1:4222")
    args.add_argument("--user")
    args.add_argument("--password-file", type=Path)
    args.add_argument("--switch", action="append", default=[], help="datapath id, 16 hex digits")
    opts = args.parse_args()
    auth = {}
    if opts.user and opts.password_file:
        auth = {"user": opts.user, "password": opts.password_file.read_text().strip()}
    bus = await nats.connect(opts.url, name="remote controller", **auth)

    async def show(msg: Msg) -> None:
        print(json.dumps(describe(msg)), flush=True)

    for subject in ("hairpin.*.c.>", "hairpin.*.controllet.>", "hairpin.*.event.port_status"):
        await bus.subscribe(subject, cb=show)
    for dpid in opts.switch:
        reply = await bus.request(f"hairpin.{dpid}.ask.switch.ports", b"", timeout=5)
        print(json.dumps({"switch": dpid, "ports": json.loads(reply.data)}), flush=True)
    print(json.dumps({"ready": True}), flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await bus.drain()


if __name__ == "__main__":
    asyncio.run(main())
