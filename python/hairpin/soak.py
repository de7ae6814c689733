"""Soak: hairpind under everything an operator's network does to it at once, for N minutes.

    python -m hairpin.soak --minutes 30 [--hosts 4] [--json FILE]

Hairpind runs in a switch namespace with a host on each port, its binary from $HAIRPIN_BIN
(else target/release). This program is its controller (the switch connects to it) and, at
the same time:

- churns flows in table 2 (adds, strict modifies, strict deletes, flows with hard and idle
  timeouts that expire) and groups (adds, deletes), each batch closed by a barrier, keeping
  its own model of what the switch should hold;
- sends raw frames from every host, which table 0 forwards to the next port, and counts them;
- drops its controller connection now and then and takes the reconnection;
- flaps every port's link in turn (no traffic touches a port while its link is down);
- runs `hairpinctl` queries (summary, dump-flows, trace) and scrapes the metrics page;
- samples hairpind's resident memory and open descriptors.

Afterwards: the flows and groups the switch dumps equal the model (none lost, none
duplicated), every port's packet counters equal the frames sent (none counted twice or not at
all), and memory and descriptors are flat after the warm-up. Exits 0 when every check holds
and prints the figures; 1 with the failed checks otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hairpin.testing.daemon import (
    OFPFC_ADD,
    OFPT_FLOW_MOD,
    OfClient,
    action_output,
    find_hairpind,
    flow_mod_body,
    group_mod_body,
    instruction_apply,
    match,
    oxm,
)
from hairpin.testing.topology import SWITCH_OF_PORT, HairpinStar, hairpin_star

# Inside the switch namespace: where this controller listens, and the metrics page.
CONTROLLER_PORT = 17026
METRICS_PORT = 17027
OFPT_GROUP_MOD = 15
OFPFC_MODIFY_STRICT = 2
OFPFC_DELETE_STRICT = 4
OFPGC_ADD = 0
OFPGC_DELETE = 2
OXM_ETH_TYPE = 5
OXM_IPV4_DST = 12
CHURN_TABLE = 2
TRAFFIC_ETHERTYPE = 0x88B5
FRAME_LEN = 100
# A churned flow and a group as `hairpinctl dump-flows` / `dump-groups` print them.
FLOW_LINE = re.compile(r"priority=(\d+),ip,nw_dst=([\d.]+) actions=output(?::|\(port=)(\d+)")
GROUP_LINE = re.compile(r"group_id=(\d+),.*output(?::|\(port=)(\d+)")
# Memory may grow by this much after the warm-up (allocator arenas settle), descriptors not.
RSS_SLACK_KIB = 8 * 1024
FD_SLACK = 2


def log(message: str) -> None:
    print(f"soak: {message}", file=sys.stderr, flush=True)


@dataclass
class Figures:
    """What the soak did and saw."""

    seconds: float = 0.0
    flow_mods: int = 0
    group_mods: int = 0
    timed_flows: int = 0
    reconnects: int = 0
    flaps: int = 0
    queries: int = 0
    frames_sent: dict[int, int] = field(default_factory=dict)
    port_counters: dict[int, dict[str, int]] = field(default_factory=dict)
    rss_kib: list[int] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Model:
    """What the controller believes the switch holds in the churn table and the groups."""

    def __init__(self) -> None:
        self.flows: dict[tuple[int, str], int] = {}  # (priority, nw_dst) -> output port
        self.groups: dict[int, int] = {}  # group id -> output port


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def churn_flow(command: int, priority: int, dst: str, port: int, **timeouts: int) -> bytes:
    fields = match(
        oxm(OXM_ETH_TYPE, struct.pack("!H", 0x0800)), oxm(OXM_IPV4_DST, struct.pack("!I", ip(dst)))
    )
    return flow_mod_body(
        table_id=CHURN_TABLE,
        command=command,
        priority=priority,
        match_bytes=fields,
        instructions=[instruction_apply(action_output(port))],
        **timeouts,
    )


class Soak:
    def __init__(self, switch: HairpinStar, seconds: float, seed: int) -> None:
        self.switch = switch
        self.seconds = seconds
        self.rng = random.Random(seed)
        self.n = len(switch.hosts)
        self.model = Model()
        self.figures = Figures(frames_sent={p: 0 for p in range(1, self.n + 1)})
        self.stop = threading.Event()
        # A port's lock is held by whoever sends through it and by the flapper.
        self.port_locks = {p: threading.Lock() for p in range(1, self.n + 1)}
        self.errors: list[str] = []
        self.hairpinctl = str(find_hairpind().parent / "hairpinctl")
        self.pid = switch.process.pid
        self.kernel_start: dict[int, tuple[int, int]] = {}

    def out_port(self, port: int) -> int:
        return port % self.n + 1

    # --- the controller -------------------------------------------------------------------

    def accept(self, listener: socket.socket) -> OfClient:
        conn, _ = listener.accept()
        client = OfClient(sock=conn, timeout=10.0)
        client.handshake()
        return client

    def controller(self, listener: socket.socket) -> None:
        client = self.accept(listener)
        next_disconnect = time.monotonic() + self.rng.uniform(5, 15)
        serial = 0
        while not self.stop.is_set():
            for _ in range(self.rng.randint(1, 8)):
                serial += 1
                self.one_change(client, serial)
            for msg in client.barrier():
                if msg.msg_type == 1:
                    self.errors.append(f"switch error on churn: {msg.body.hex()}")
            if time.monotonic() > next_disconnect:
                client.close()
                client = self.accept(listener)
                self.figures.reconnects += 1
                next_disconnect = time.monotonic() + self.rng.uniform(5, 15)
            time.sleep(0.02)
        client.close()

    def one_change(self, client: OfClient, serial: int) -> None:
        rng, flows = self.rng, self.model.flows
        kind = rng.random()
        if kind < 0.15:
            # A flow that times out: its own address, never touched again.
            timeout = {"hard_timeout": rng.randint(1, 3)} if rng.random() < 0.5 else {}
            timeout = timeout or {"idle_timeout": rng.randint(1, 2)}
            dst = f"10.2.{(serial >> 8) & 0xFF}.{serial & 0xFF}"
            client.send(OFPT_FLOW_MOD, churn_flow(OFPFC_ADD, 50, dst, 1, **timeout))
            self.figures.timed_flows += 1
        elif kind < 0.25:
            group_id = rng.randint(1, 32)
            if group_id in self.model.groups:
                client.send(OFPT_GROUP_MOD, group_mod_body(OFPGC_DELETE, 0, group_id))
                del self.model.groups[group_id]
            else:
                port = rng.randint(1, self.n)
                bucket = struct.pack("!HHII4x", 32, 0, 0xFFFFFFFF, 0xFFFFFFFF) + action_output(port)
                client.send(OFPT_GROUP_MOD, group_mod_body(OFPGC_ADD, 0, group_id, bucket))
                self.model.groups[group_id] = port
            self.figures.group_mods += 1
            return
        else:
            key = (rng.choice((10, 20, 30)), f"10.1.{rng.randint(0, 3)}.{rng.randint(0, 63)}")
            port = rng.randint(1, self.n)
            if key not in flows:
                client.send(OFPT_FLOW_MOD, churn_flow(OFPFC_ADD, key[0], key[1], port))
                flows[key] = port
            elif rng.random() < 0.5:
                client.send(OFPT_FLOW_MOD, churn_flow(OFPFC_MODIFY_STRICT, key[0], key[1], port))
                flows[key] = port
            else:
                client.send(OFPT_FLOW_MOD, churn_flow(OFPFC_DELETE_STRICT, key[0], key[1], port))
                del flows[key]
        self.figures.flow_mods += 1

    # --- traffic and link flaps -----------------------------------------------------------

    def traffic(self, port: int) -> None:
        host = self.switch.hosts[port - 1]
        sock = host.ns.make_socket(socket.AF_PACKET, socket.SOCK_RAW)
        sock.bind(("eth0", 0))
        src = bytes([2, 0, 0, 0, 0xAA, port])
        frame = b"\xff" * 6 + src + struct.pack("!H", TRAFFIC_ETHERTYPE)
        frame += bytes(FRAME_LEN - len(frame))
        first, second = sorted((port, self.out_port(port)))
        with sock:
            while not self.stop.is_set():
                with self.port_locks[first], self.port_locks[second]:
                    for _ in range(20):
                        sock.send(frame)
                    self.figures.frames_sent[port] += 20
                time.sleep(0.01)

    def flapper(self) -> None:
        while not self.stop.wait(self.rng.uniform(2, 5)):
            port = self.rng.randint(1, self.n)
            with self.port_locks[port]:
                time.sleep(0.3)  # frames in flight reach their port first
                iface = f"p{port}"
                self.switch.switch.run("ip", "link", "set", iface, "down")
                time.sleep(self.rng.uniform(0.1, 0.5))
                self.switch.switch.run("ip", "link", "set", iface, "up")
                self.wait_carrier(iface)
                time.sleep(0.3)
            self.figures.flaps += 1

    def wait_carrier(self, iface: str) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            state = self.switch.switch.run("cat", f"/sys/class/net/{iface}/operstate").stdout
            if state.strip() == "up":
                return
            time.sleep(0.05)
        self.errors.append(f"{iface} did not come back up")

    # --- operators' queries and the process's resources ----------------------------------

    def ctl(self, *args: str) -> str:
        result = self.switch.switch.run(
            self.hairpinctl,
            "--control",
            str(self.switch.control_path),
            "--target",
            f"tcp:127.0.0.1:{SWITCH_OF_PORT}",
            *args,
            check=False,
        )
        if result.returncode != 0:
            self.errors.append(f"hairpinctl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def scrape(self) -> str:
        sock = self.switch.switch.make_socket(socket.AF_INET, socket.SOCK_STREAM)
        with sock:
            sock.settimeout(5)
            sock.connect(("127.0.0.1", METRICS_PORT))
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: soak\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        return data.decode().partition("\r\n\r\n")[2]

    def queries(self) -> None:
        queries: list[Callable[[], object]] = [
            lambda: self.ctl("summary"),
            lambda: self.ctl("dump-flows"),
            lambda: self.ctl("dump-groups"),
            lambda: self.ctl("trace", "in_port=1,ip,nw_dst=10.1.0.1"),
            self.scrape,
        ]
        i = 0
        while not self.stop.wait(0.3):
            try:
                queries[i % len(queries)]()
            except OSError as e:
                self.errors.append(f"query failed: {e}")
            i += 1
            self.figures.queries += 1

    def sampler(self) -> None:
        while not self.stop.wait(2.0):
            status = Path(f"/proc/{self.pid}/status").read_text()
            rss = re.search(r"VmRSS:\s+(\d+) kB", status)
            self.figures.rss_kib.append(int(rss.group(1)) if rss else 0)
            self.figures.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))

    # --- the run and the checks -----------------------------------------------------------

    def install_forwarding(self) -> None:
        for port in range(1, self.n + 1):
            self.switch.ofctl(
                "add-flow",
                f"table=0,priority=100,in_port={port},dl_type={TRAFFIC_ETHERTYPE:#x},"
                f"actions=output:{self.out_port(port)}",
            )

    def run(self) -> Figures:
        self.install_forwarding()
        self.kernel_start = self.kernel_counters()
        listener = self.switch.switch.make_socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", CONTROLLER_PORT))
        listener.listen(4)
        listener.settimeout(20)
        workers = [threading.Thread(target=self.traffic, args=(p,)) for p in range(1, self.n + 1)]
        workers += [threading.Thread(target=f) for f in (self.flapper, self.queries, self.sampler)]
        controller = threading.Thread(target=self.guarded, args=(self.controller, listener))
        started = time.monotonic()
        for worker in [controller, *workers]:
            worker.start()
        while time.monotonic() - started < self.seconds and controller.is_alive():
            time.sleep(0.5)
            self.switch.assert_alive()
        self.stop.set()
        for worker in [controller, *workers]:
            worker.join(60)
        listener.close()
        self.figures.seconds = round(time.monotonic() - started, 1)
        # Timed flows expire, the datapath threads publish their counters.
        time.sleep(4.5)
        self.check()
        return self.figures

    def guarded(self, body: Callable[..., None], *args: object) -> None:
        try:
            body(*args)
        except Exception as e:  # the check reports it; the run must end cleanly
            self.errors.append(f"{body.__name__}: {e!r}")
            self.stop.set()

    def check(self) -> None:
        failures = self.figures.failures
        failures.extend(self.errors)
        dumped = set()
        for line in self.ctl("dump-flows", f"table={CHURN_TABLE}").splitlines():
            found = FLOW_LINE.search(line)
            if found:
                dumped.add((int(found[1]), found[2], int(found[3])))
            elif "actions=" in line:
                failures.append(f"unexpected flow: {line.strip()}")
        believed = {(p, d, port) for (p, d), port in self.model.flows.items()}
        if dumped != believed:
            failures.append(
                f"flows: {len(believed - dumped)} lost {sorted(believed - dumped)[:5]}, "
                f"{len(dumped - believed)} unexpected {sorted(dumped - believed)[:5]}"
            )
        groups = {}
        for line in self.ctl("dump-groups").splitlines():
            found = GROUP_LINE.search(line)
            if found:
                groups[int(found[1])] = int(found[2])
        if groups != self.model.groups:
            failures.append(f"groups: switch {groups}, controller {self.model.groups}")
        self.check_counters(failures)
        self.check_flat(failures)

    def kernel_counters(self) -> dict[int, tuple[int, int]]:
        """Each switch-side interface's (rx, tx) packets as the kernel counts them."""
        counters = {}
        for port in range(1, self.n + 1):
            stats = f"/sys/class/net/p{port}/statistics"
            text = self.switch.switch.run("cat", f"{stats}/rx_packets", f"{stats}/tx_packets")
            rx, tx = (int(v) for v in text.stdout.split())
            counters[port] = (rx, tx)
        return counters

    def check_counters(self, failures: list[str]) -> None:
        """Every frame the kernel handed a port's socket is counted once, received or
        dropped; every frame forwarded is counted once, sent or dropped, and the kernel saw
        each one sent."""
        kernel = self.kernel_counters()
        ports = {p["port"]: p for p in json.loads(self.ctl("summary", "--json"))["ports"]}
        self.figures.port_counters = {
            n: {k: v for k, v in p.items() if "_" in k} for n, p in ports.items()
        }
        for number, port in ports.items():
            arrived = kernel[number][0] - self.kernel_start[number][0]
            left = kernel[number][1] - self.kernel_start[number][1]
            if port["rx_packets"] + port["rx_dropped"] != arrived:
                failures.append(
                    f"port {number}: received {port['rx_packets']} + dropped {port['rx_dropped']}"
                    f", the kernel delivered {arrived}"
                    f" (hosts sent {self.figures.frames_sent[number]})"
                )
            forwarded = sum(ports[p]["rx_packets"] for p in ports if self.out_port(p) == number)
            if port["tx_packets"] + port["tx_dropped"] + port["tx_errors"] != forwarded:
                failures.append(
                    f"port {number}: sent {port['tx_packets']} of {forwarded} forwarded"
                )
            if port["tx_packets"] != left:
                failures.append(f"port {number}: sent {port['tx_packets']}, the kernel saw {left}")

    def check_flat(self, failures: list[str]) -> None:
        rss, fds = self.figures.rss_kib, self.figures.fds
        warm = len(rss) // 4
        after = rss[warm:]
        if len(after) < 4:
            failures.append(f"too few resource samples ({len(rss)}) to judge")
            return
        quarter = max(1, len(after) // 4)
        rss_growth = min(after[-quarter:]) - min(after[:quarter])
        if rss_growth > RSS_SLACK_KIB:
            failures.append(f"RSS grew {rss_growth} KiB after the warm-up: {after}")
        fd_after = fds[warm:]
        fd_growth = min(fd_after[-quarter:]) - min(fd_after[:quarter])
        if fd_growth > FD_SLACK:
            failures.append(f"descriptors grew by {fd_growth} after the warm-up: {fd_after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hairpin.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hairpin-soak-") as workdir:
        extra = ["--metrics", f"127.0.0.1:{METRICS_PORT}"]
        with hairpin_star(
            Path(workdir), hosts=args.hosts, controller_port=CONTROLLER_PORT, extra_args=extra
        ) as switch:
            log(f"{args.minutes} minutes, {args.hosts} ports, hairpind pid {switch.process.pid}")
            figures = Soak(switch, args.minutes * 60, args.seed).run()
            if figures.failures:
                log("hairpind log tail:\n" + switch.log()[-3000:])
    report = asdict(figures)
    report["rss_kib"] = {"first": figures.rss_kib[:3], "last": figures.rss_kib[-3:]}
    report["fds"] = {"first": figures.fds[:3], "last": figures.fds[-3:]}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    for failure in figures.failures:
        log(f"FAILED: {failure}")
    log("passed" if not figures.failures else f"{len(figures.failures)} checks failed")
    return 1 if figures.failures else 0


if __name__ == "__main__":
    sys.exit(main())
