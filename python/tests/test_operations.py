"""Operations: the Prometheus metrics page after real traffic through veths, and the
management commands `hairpinctl` sends to the daemon (version, summary, log level), and the
datapath threads' CPU pinning.

Hairpind runs in its switch namespace with ``--metrics``; the test adds two flows with
ovs-ofctl, sends a known number of raw frames of known size from h1, a few more that miss into
a packet-in for an OpenFlow client, scrapes ``/metrics`` from inside the namespace and parses
it with the official Prometheus client's parser; every counter must equal the traffic sent.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hairpin.testing import frames
from hairpin.testing.daemon import OFPT_PACKET_IN, OfClient
from hairpin.testing.topology import SWITCH_OF_PORT, HairpinStar, hairpin_star, wait_until

pytestmark = pytest.mark.usefixtures("root")

METRICS_PORT = 17025
FRAMES = 200
MISSES = 5
FRAME_LEN = 100
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(switch: HairpinStar, path: str = "/metrics") -> tuple[str, str]:
    """One HTTP GET from inside the switch namespace: (status line, body)."""
    sock = switch.switch.make_socket(socket.AF_INET, socket.SOCK_STREAM)
    with sock:
        sock.settimeout(5)
        sock.connect(("127.0.0.1", METRICS_PORT))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: switch\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.decode().partition("\r\n\r\n")
    return head.splitlines()[0], body


def samples(text: str) -> Samples:
    """Every sample of the page, by name and sorted labels, through the official parser."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(page: Samples, metric: str, **labels: str) -> float:
    """The one sample of ``metric`` whose labels include ``labels``."""
    found = [
        v
        for (n, ls), v in page.items()
        if n == metric and all(dict(ls).get(k) == w for k, w in labels.items())
    ]
    assert len(found) == 1, f"{metric}{labels}: {found}"
    return found[0]


def test_metrics_count_the_traffic_sent(tmp_path: Path) -> None:
    args = ["--metrics", f"127.0.0.1:{METRICS_PORT}"]
    with hairpin_star(tmp_path, hosts=2, controller_port=None, extra_args=args) as switch:
        h1 = switch.hosts[0]
        # Traffic from h1 with this source goes to port 2; anything else misses into a
        # packet-in (table-miss to the controller).
        src = bytes.fromhex("02000000aa01")
        switch.ofctl("add-flow", f"table=0,priority=10,in_port=1,dl_src={src.hex(':')},actions=2")
        switch.ofctl("add-flow", "table=0,priority=0,actions=CONTROLLER:128")
        client_sock = switch.switch.make_socket(socket.AF_INET, socket.SOCK_STREAM)
        client_sock.settimeout(10)
        client_sock.connect(("127.0.0.1", SWITCH_OF_PORT))
        with OfClient(sock=client_sock) as client:
            client.handshake()
            client.barrier()
            payload = bytes(FRAME_LEN - 14)
            hits = [frames.frame(b"\xff" * 6, src, 0x88B5, payload)] * FRAMES
            misses = [frames.frame(b"\xff" * 6, bytes.fromhex("02000000bb01"), 0x88B5, payload)]
            frames.send(h1.ns, hits + misses * MISSES)
            packet_ins = []
            deadline = time.monotonic() + 10
            while len(packet_ins) < MISSES and time.monotonic() < deadline:
                msg = client.recv()
                if msg.msg_type == OFPT_PACKET_IN:
                    packet_ins.append(msg)
            assert len(packet_ins) == MISSES

            # Thread counters are published once a second.
            def settled() -> bool:
                page = samples(scrape(switch)[1])
                return value(page, "hairpin_datapath_rounds_total", state="busy") > 0

            assert wait_until(settled, 5.0), switch.log()
            status, body = scrape(switch)
            assert status == "HTTP/1.1 200 OK"
            page = samples(body)
            sent = FRAMES + MISSES
            assert value(page, "hairpin_port_rx_packets_total", port="1", name="p1") == sent
            assert value(page, "hairpin_port_rx_bytes_total", port="1") == sent * FRAME_LEN
            assert value(page, "hairpin_port_tx_packets_total", port="2", name="p2") == FRAMES
            assert value(page, "hairpin_port_tx_bytes_total", port="2") == FRAMES * FRAME_LEN
            assert value(page, "hairpin_port_rx_packets_total", port="2") == 0
            assert value(page, "hairpin_port_rx_dropped_total", port="1") == 0
            assert value(page, "hairpin_port_up", port="1", interface="p1", vlan="") == 1
            assert value(page, "hairpin_table_flows", table="0") == 2
            assert value(page, "hairpin_table_flows", table="1") == 0
            assert value(page, "hairpin_table_lookups_total", table="0") == sent
            assert value(page, "hairpin_table_matches_total", table="0") == sent
            assert value(page, "hairpin_table_misses_total", table="0") == 0
            assert value(page, "hairpin_openflow_packet_ins_total") == MISSES
            assert value(page, "hairpin_openflow_packet_ins_limited_total") == 0
            info = value(page, "hairpin_openflow_connection_info", kind="client", role="equal")
            assert info == 1
            assert value(page, "hairpin_controllers_configured") == 0
            assert value(page, "hairpin_datapath_busy_seconds_total", thread="0") > 0
            assert value(page, "hairpin_build_info", datapath_id="0000000000000001") == 1

            # The summary tells the same story.
            summary = json.loads(switch.ctl("summary", "--json"))
            port1 = next(p for p in summary["ports"] if p["port"] == 1)
            assert port1["rx_packets"] == sent
            assert summary["connections"][0]["packet_ins"] == MISSES
            text = switch.ctl("summary")
            assert f"RX packets:{sent} bytes:{sent * FRAME_LEN}" in text, text
        assert scrape(switch, "/other")[0] == "HTTP/1.1 404 Not Found"
        switch.assert_alive()


def test_version_and_log_level_at_run_time(tmp_path: Path) -> None:
    args = ["--metrics", f"127.0.0.1:{METRICS_PORT}"]
    with hairpin_star(tmp_path, hosts=1, controller_port=None, extra_args=args) as switch:
        version = switch.ctl("version").splitlines()
        assert version[0].startswith("hairpinctl ") and version[1].startswith("hairpind ")
        assert version[0].split()[1] == version[1].split()[1]
        assert switch.ctl("log-level") == "info\n"
        scrape(switch)
        assert "debug: metrics" not in switch.log()
        assert switch.ctl("log-level", "debug") == "log level debug (was info)\n"
        scrape(switch)
        assert wait_until(lambda: "debug: metrics: scrape from" in switch.log(), 5.0)
        bad = switch.ctl_run("log-level", "loud")
        assert bad.returncode != 0 and "not a level" in bad.stderr, bad.stderr
        assert switch.ctl("log-level") == "debug\n"
        switch.assert_alive()


def test_trace_follows_the_live_tables_and_counts_nothing(tmp_path: Path) -> None:
    args = ["--metrics", f"127.0.0.1:{METRICS_PORT}"]
    with hairpin_star(tmp_path, hosts=2, controller_port=None, extra_args=args) as switch:
        switch.ofctl(
            "add-flow",
            "table=0,priority=100,cookie=0x7,in_port=1,ip,nw_dst=10.0.0.2,"
            "actions=set_field:10.0.0.9->ip_dst,goto_table:1",
        )
        switch.ofctl("add-flow", "table=1,priority=10,ip,nw_dst=10.0.0.9,actions=dec_ttl,output:2")
        switch.ofctl("add-flow", "table=1,priority=5,ip,nw_dst=10.0.0.2,actions=output:1")
        text = switch.ctl("trace", "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=53")
        lines = text.splitlines()
        table0 = next(line for line in lines if line.startswith("0. "))
        assert "cookie=0x7" in table0 and "nw_dst=10.0.0.2" in table0, text
        assert "    apply: set_field:0xa000009->Ipv4Dst" in lines, text
        assert "    goto_table:1" in lines, text
        table1 = next(line for line in lines if line.startswith("1. "))
        assert "priority=10" in table1 and "nw_dst=10.0.0.9" in table1, text
        assert lines[-1] == "Datapath actions: output:2", text
        miss = switch.ctl("trace", "in_port=2,arp")
        assert "0. No match: the packet is dropped." in miss, miss
        assert "Datapath actions: drop" in miss, miss
        # A trace sends nothing and counts nothing.
        time.sleep(1.2)
        page = samples(scrape(switch)[1])
        assert value(page, "hairpin_table_lookups_total", table="0") == 0
        assert value(page, "hairpin_port_tx_packets_total", port="2") == 0
        assert all("n_packets=0," in flow for flow in switch.flows()), switch.flows()
        bad = switch.ctl_run("trace", "in_port=9,ip")
        assert bad.returncode != 0 and "no port 9" in bad.stderr, bad.stderr
        switch.assert_alive()


def thread_cpus(pid: int) -> dict[str, str]:
    """Each thread's name and the CPUs it may run on (``Cpus_allowed_list``)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = [line.partition(":") for line in (task / "status").read_text().splitlines()]
        status = {key: value.strip() for key, _, value in fields}
        out[status["Name"]] = status["Cpus_allowed_list"]
    return out


def test_datapath_threads_run_on_the_cpus_given(tmp_path: Path) -> None:
    args = ["--datapath-threads", "3", "--datapath-cpus", "1,0"]
    with hairpin_star(tmp_path, hosts=2, extra_args=args) as switch:
        cpus = thread_cpus(switch.process.pid)
        # Thread i on the list's i-th CPU, round robin; the daemon's other threads untouched.
        pinned = (cpus["hairpin-dp0"], cpus["hairpin-dp1"], cpus["hairpin-dp2"])
        assert pinned == ("1", "0", "1"), cpus
        assert set(os.sched_getaffinity(switch.process.pid)) >= {0, 1}, cpus
        switch.assert_alive()
