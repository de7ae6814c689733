"""Hardware flow table capacities of an OpenFlow 1.3 switch, measured as seed 004 section
5.1.1 measures them, and printed as its Table 2.

For each rule structure (Table 2's rows: one field matched, with the fields OpenFlow 1.3
requires before it), the table is emptied and filled with rules of that structure until the
switch refuses one (an OFPT_ERROR: TABLE_FULL when full, BAD_MATCH or similar when it cannot
hold the structure at all) or stops taking them into hardware. Rules go in chunks, each
chunk followed by a barrier; every chunk carries its own cookie, so a question about where
the chunk's rules live is answered for that chunk alone:

- a switch that answers Hairpin's flow placement experimenter multipart (``ofp::placement``,
  ``crates/ofp/OFFLOAD.md``) says which rules sit in hardware; the first chunk with fewer
  hardware rules than rules gives the capacity (rules go in with falling priority, so a new
  rule never displaces an older one);
- any other switch (Open vSwitch) is asked how many rules its table holds; one that accepts
  a rule without keeping it is caught there, and one that takes every rule is reported as
  having no limit up to the count asked for.

Run: ``python -m hairpin.characterise --port 16900 --table 0 --limit 20000`` against a switch
listening on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from hairpin.testing.daemon import (
    OFPT_ERROR,
    OFPT_FLOW_MOD,
    OFPT_MULTIPART_REQUEST,
    OfClient,
    action_output,
    connected_client,
    flow_mod_body,
    instruction_apply,
    match,
    message,
    oxm,
)

# Table 2's rows: number and the field that names them.
ROWS: tuple[tuple[int, str], ...] = (
    (1, "in_port"),
    (2, "vlan_vid"),
    (3, "vlan_pcp"),
    (4, "eth_src"),
    (5, "eth_dst"),
    (6, "eth_type"),
    (7, "ip_dscp"),
    (8, "ip_src"),
    (9, "ip_dst"),
    (10, "ip_proto"),
    (11, "tcp_src"),
    (12, "tcp_dst"),
)
# Seed 004 Table 2 as published: 2920 v1.0, 3500 v1.0, 3500 v1.3, 5130 EXT, 5130 MAC-IP,
# 5700 EXT (our copy of the paper has no figures in the 5700 MAC-IP column).
PUBLISHED: dict[str, tuple[int, ...]] = {
    "2920 v1.0": (460, 460, 460, 0, 0, 460, 460, 460, 460, 460, 460, 460),
    "3500 v1.0": (381, 381, 0, 0, 0, 1526, 1526, 1526, 1526, 1526, 1526, 1526),
    "3500 v1.3": (0, 0, 0, 0, 0, 1526, 1526, 1526, 1526, 1526, 1526, 1526),
    "5130 EXT": (384, 384, 384, 384, 384, 384, 512, 512, 512, 512, 512, 512),
    "5130 MAC-IP": (0, 0, 0, 0, 16000, 16000, 0, 0, 16000, 0, 0, 0),
    "5700 EXT": (640, 640, 640, 640, 640, 512, 512, 512, 512, 512, 512, 512),
}
# Each column: the Hairpin profile and OpenFlow table that stand for it.
COLUMNS: dict[str, tuple[str, int]] = {
    "2920 v1.0": ("hp-2920", 0),
    "3500 v1.0": ("hp-3500yl-of10", 0),
    "3500 v1.3": ("hp-3500yl-of13", 0),
    "5130 EXT": ("hpe-5130", 0),
    "5130 MAC-IP": ("hpe-5130", 1),
    "5700 EXT": ("hpe-5700", 0),
}

# OpenFlow error (type, code) names a refusal is reported with.
ERROR_NAMES = {
    (5, 1): "TABLE_FULL",
    (4, 6): "BAD_FIELD",
    (4, 9): "BAD_PREREQ",
    (2, 0): "BAD_TYPE",
    (5, 3): "BAD_TABLE_ID",
}

TOP_PRIORITY = 60_000
CHUNK = 256
HAIRPIN_EXPERIMENTER = 0x4850494E
EXP_FLOW_PLACEMENT = 1
OFPMP_EXPERIMENTER = 0xFFFF
OFPMP_AGGREGATE = 2
OFPFC_DELETE = 3
OFPTT_ALL = 0xFF
OFPP_ANY = 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
OFPVID_PRESENT = 0x1000
OUT_PORT = 1

# OXM basic field numbers.
IN_PORT, ETH_DST, ETH_SRC, ETH_TYPE, VLAN_VID, VLAN_PCP, IP_DSCP = 0, 3, 4, 5, 6, 7, 8
IP_PROTO, IPV4_SRC, IPV4_DST, TCP_SRC, TCP_DST = 10, 11, 12, 13, 14


def rule_match(row: int, n: int) -> bytes:
    """The ``n``th rule of ``row``: its field exact (values vary where the field has room)."""
    ipv4 = oxm(ETH_TYPE, struct.pack("!H", 0x0800))
    mac = struct.pack("!Q", 0x0200_0000_0000 | n)[2:]
    fields: dict[int, list[bytes]] = {
        1: [oxm(IN_PORT, struct.pack("!I", 1 + n % 24))],
        2: [oxm(VLAN_VID, struct.pack("!H", OFPVID_PRESENT | (1 + n % 4094)))],
        3: [
            oxm(VLAN_VID, struct.pack("!H", OFPVID_PRESENT), struct.pack("!H", OFPVID_PRESENT)),
            oxm(VLAN_PCP, bytes([n % 8])),
        ],
        4: [oxm(ETH_SRC, mac)],
        5: [oxm(ETH_DST, mac)],
        6: [oxm(ETH_TYPE, struct.pack("!H", 0x1000 + n % 0x7000))],
        7: [ipv4, oxm(IP_DSCP, bytes([n % 64]))],
        8: [ipv4, oxm(IPV4_SRC, struct.pack("!I", 0x0A00_0000 | n))],
        9: [ipv4, oxm(IPV4_DST, struct.pack("!I", 0x0A00_0000 | n))],
        10: [ipv4, oxm(IP_PROTO, bytes([n % 256]))],
        11: [ipv4, oxm(IP_PROTO, b"\x06"), oxm(TCP_SRC, struct.pack("!H", 1 + n % 65535))],
        12: [ipv4, oxm(IP_PROTO, b"\x06"), oxm(TCP_DST, struct.pack("!H", 1 + n % 65535))],
    }
    return match(*fields[row])


def priority(n: int) -> int:
    return TOP_PRIORITY - n % TOP_PRIORITY


def stats_request(table: int, cookie: int) -> bytes:
    """An ofp_flow_stats_request body selecting the rules with exactly this cookie."""
    return struct.pack("!B3xII4xQQ", table, OFPP_ANY, OFPG_ANY, cookie, 2**64 - 1) + match()


@dataclass
class Outcome:
    """Where a fill stopped: how many rules the table holds and why it stopped."""

    count: int
    how: str  # "refused <type>/<code>", "spilled", "ignored", "no limit"


class Prober:
    """A connection to the switch under test."""

    def __init__(self, client: OfClient) -> None:
        self.client = client
        self.placement = self._answers_placement()

    def _answers_placement(self) -> bool:
        replies = self.client.request(OFPT_MULTIPART_REQUEST, self._placement_body(0, 0))
        return all(r.msg_type != OFPT_ERROR for r in replies)

    @staticmethod
    def _placement_body(table: int, cookie: int) -> bytes:
        head = struct.pack("!HH4x", OFPMP_EXPERIMENTER, 0)
        exp = struct.pack("!II", HAIRPIN_EXPERIMENTER, EXP_FLOW_PLACEMENT)
        return head + exp + struct.pack("!I4x", 0) + stats_request(table, cookie)

    def hardware_count(self, table: int, cookie: int) -> int:
        """Rules with this cookie that the switch says sit in hardware."""
        body = self.client.multipart(OFPMP_EXPERIMENTER, self._placement_body(table, cookie)[8:])
        data = body[8:]  # experimenter id and type
        offset, count = 8, 0  # next, pad
        while offset < len(data):
            length, _table, location = struct.unpack_from("!HBB", data, offset)
            if length < 8:
                raise ValueError(f"bad placement entry length {length}")
            count += location != 0
            offset += length
        return count

    def table_count(self, table: int, cookie: int) -> int:
        """Rules with this cookie that the switch's table holds."""
        body = self.client.multipart(OFPMP_AGGREGATE, stats_request(table, cookie))
        _, _, flows = struct.unpack_from("!QQI", body)
        return int(flows)

    def clear(self, table: int) -> None:
        body = flow_mod_body(table_id=table, command=OFPFC_DELETE)
        self.client.send(OFPT_FLOW_MOD, body)
        self.client.barrier()

    def fill(self, table: int, row: int, limit: int) -> Outcome:
        """Fills ``table`` with rules of ``row`` until refused, spilled or ``limit``."""
        self.clear(table)
        action = instruction_apply(action_output(OUT_PORT))
        done = 0
        chunk_no = 0
        while done < limit:
            size = min(CHUNK, limit - done)
            cookie = (row << 32) | chunk_no
            xids = {}
            wire = []
            for i in range(size):
                n = done + i
                xid = self.client.xid()
                xids[xid] = n
                body = flow_mod_body(
                    table_id=table,
                    priority=priority(n),
                    cookie=cookie,
                    match_bytes=rule_match(row, n),
                    instructions=[action],
                )
                wire.append(message(OFPT_FLOW_MOD, body, xid))
            self.client.send_raw(b"".join(wire))
            errors = [m for m in self.client.barrier() if m.msg_type == OFPT_ERROR]
            refused = sorted((xids[m.xid], m.error()) for m in errors if m.xid in xids)
            if refused:
                first, (err_type, code, _) = refused[0]
                self.clear(table)
                name = ERROR_NAMES.get((err_type, code), f"{err_type}/{code}")
                return Outcome(first, f"refused {name}")
            kept = self.table_count(table, cookie)
            if kept < size:
                self.clear(table)
                return Outcome(done + kept, "ignored")
            if self.placement:
                in_hw = self.hardware_count(table, cookie)
                if in_hw < size:
                    self.clear(table)
                    return Outcome(done + in_hw, "spilled")
            done += size
            chunk_no += 1
        self.clear(table)
        return Outcome(done, "no limit")


def parse_rows(text: str) -> list[int]:
    rows: list[int] = []
    for part in text.split(","):
        if "-" in part:
            first, last = part.split("-")
            rows.extend(range(int(first), int(last) + 1))
        else:
            rows.append(int(part))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True, help="OpenFlow port on 127.0.0.1")
    parser.add_argument("--table", type=int, default=0, help="OpenFlow table to fill")
    parser.add_argument("--limit", type=int, default=20_000, help="most rules per structure")
    parser.add_argument("--rows", default="1-12", help="Table 2 rows, e.g. 1-12 or 5,6,9")
    parser.add_argument("--label", default="switch", help="column heading")
    args = parser.parse_args(argv)
    with connected_client(args.port) as client:
        prober = Prober(client)
        knows = "answers" if prober.placement else "does not answer"
        print(f"# {args.label}, table {args.table}: {knows} the flow placement multipart")
        print(f"{'row':<5}{'match field':<12}{args.label:>12}  stopped")
        for row in parse_rows(args.rows):
            name = dict(ROWS)[row]
            outcome = prober.fill(args.table, row, args.limit)
            print(f"#{row:<4}{name:<12}{outcome.count:>12}  {outcome.how}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
