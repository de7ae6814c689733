"""Runs `hairpind` for integration tests, and speaks raw OpenFlow 1.3 to it.

The daemon helper finds the binary (env HAIRPIN_BIN, else the release build, else the
integration tests' debug build), starts it on a free TCP port and a unix socket, waits until it
accepts connections and stops it with SIGTERM. The raw client packs messages with `struct` so
that tests can send exactly the bytes they mean, malformed ones included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OFP_VERSION = 0x04
HEADER = struct.Struct("!BBHI")

# Message types (OpenFlow 1.3.5 section 7.1).
OFPT_HELLO = 0
OFPT_ERROR = 1
OFPT_ECHO_REQUEST = 2
OFPT_ECHO_REPLY = 3
OFPT_FEATURES_REQUEST = 5
OFPT_FEATURES_REPLY = 6
OFPT_PACKET_IN = 10
OFPT_PACKET_OUT = 13
OFPT_FLOW_MOD = 14
OFPT_MULTIPART_REQUEST = 18
OFPT_MULTIPART_REPLY = 19
OFPT_BARRIER_REQUEST = 20
OFPT_BARRIER_REPLY = 21

OFPMP_AGGREGATE = 2
OFPMP_FLOW = 1
OFPMP_GROUP_DESC = 7
OFPMP_METER_CONFIG = 10
OFPMPF_REPLY_MORE = 1

OFPTT_ALL = 0xFF
OFPP_CONTROLLER = 0xFFFFFFFD
OFPP_ANY = 0xFFFFFFFF
OFP_NO_BUFFER = 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
OFPM_ALL = 0xFFFFFFFF
OFPFC_ADD = 0
OFPFC_DELETE = 3
OFPFF_SEND_FLOW_REM = 1
OFPGC_ADD = 0
OFPGC_MODIFY = 1
OFPMC_ADD = 0
OFPMC_MODIFY = 1

DEFAULT_BUILDS = (REPO / "target" / "release", REPO / "target-itest" / "debug")


def find_hairpind() -> Path:
    """The hairpind binary: in $HAIRPIN_BIN if set, else the first default build that has one.

    Raises FileNotFoundError (a test failure, never a skip) when there is none.
    """
    env = os.environ.get("HAIRPIN_BIN")
    candidates = [Path(env)] if env else list(DEFAULT_BUILDS)
    for directory in candidates:
        binary = directory / "hairpind"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    searched = ", ".join(str(d) for d in candidates)
    raise FileNotFoundError(f"no hairpind binary in {searched}; build it or set HAIRPIN_BIN")


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (from the ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_tcp(port: int, timeout: float, alive: subprocess.Popen[bytes] | None = None) -> None:
    """Waits until 127.0.0.1:port accepts a connection, or fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None and alive.poll() is not None:
            raise RuntimeError(f"process exited with status {alive.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
        time.sleep(0.05)


@dataclass
class HairpinDaemon:
    """A running hairpind: its process, its passive TCP port, unix socket, control socket, log."""

    process: subprocess.Popen[bytes]
    port: int
    unix_path: Path
    control_path: Path
    log_path: Path

    @property
    def ofctl_target(self) -> str:
        """The `ovs-ofctl` target that reaches this daemon."""
        return f"tcp:127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_alive(self) -> None:
        status = self.process.poll()
        assert status is None, f"hairpind exited with status {status}:\n{self.log()}"

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def running_hairpind(
    controllers: Sequence[str] = (), extra_args: Sequence[str] = ()
) -> Iterator[HairpinDaemon]:
    """Starts hairpind (dpid 1, no ports) listening on a free port and a unix socket."""
    binary = find_hairpind()
    with tempfile.TemporaryDirectory(prefix="hairpind-") as workdir:
        port = free_tcp_port()
        unix_path = Path(workdir) / "hairpind.sock"
        control_path = Path(workdir) / "hairpind.ctl"
        log_path = Path(workdir) / "hairpind.log"
        args = [str(binary), "--datapath-id", "0x1"]
        args += ["--listen", f"ptcp:{port}:127.0.0.1", "--listen", f"punix:{unix_path}"]
        args += ["--control-socket", str(control_path)]
        for controller in controllers:
            args += ["--controller", controller]
        args += list(extra_args)
        with log_path.open("wb") as log:
            process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        daemon = HairpinDaemon(process, port, unix_path, control_path, log_path)
        try:
            try:
                wait_for_tcp(port, 20.0, process)
            except (RuntimeError, TimeoutError) as e:
                raise RuntimeError(f"hairpind did not start: {e}\n{daemon.log()}") from e
            yield daemon
        finally:
            daemon.stop()


# ---------------------------------------------------------------------------------------------
# Raw OpenFlow 1.3 messages.


def pad8(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 8)


def message(msg_type: int, body: bytes, xid: int, version: int = OFP_VERSION) -> bytes:
    return HEADER.pack(version, msg_type, HEADER.size + len(body), xid) + body


def oxm(field: int, value: bytes, mask: bytes | None = None, oxm_class: int = 0x8000) -> bytes:
    """One OXM TLV of the basic class; the length is the payload's (value plus mask)."""
    payload = value + (mask or b"")
    header = (oxm_class << 16) | (field << 9) | ((mask is not None) << 8) | len(payload)
    return struct.pack("!I", header) + payload


def match(*oxms: bytes) -> bytes:
    """An OFPMT_OXM match, padded to 8 bytes."""
    fields = b"".join(oxms)
    return pad8(struct.pack("!HH", 1, 4 + len(fields)) + fields)


def action_output(port: int, max_len: int = 0xFFFF) -> bytes:
    return struct.pack("!HHIH6x", 0, 16, port, max_len)


def action_group(group_id: int) -> bytes:
    return struct.pack("!HHI", 22, 8, group_id)


def instruction_goto(table_id: int) -> bytes:
    return struct.pack("!HHB3x", 1, 8, table_id)


def instruction_apply(*actions: bytes) -> bytes:
    body = b"".join(actions)
    return struct.pack("!HH4x", 4, 8 + len(body)) + body


def instruction_meter(meter_id: int) -> bytes:
    return struct.pack("!HHI", 6, 8, meter_id)


def flow_mod_body(
    *,
    table_id: int = 0,
    command: int = OFPFC_ADD,
    priority: int = 100,
    cookie: int = 0,
    flags: int = 0,
    idle_timeout: int = 0,
    hard_timeout: int = 0,
    match_bytes: bytes = b"",
    instructions: Iterable[bytes] = (),
    out_port: int = OFPP_ANY,
    out_group: int = OFPG_ANY,
) -> bytes:
    fixed = struct.pack(
        "!QQBBHHHIIIH2x",
        cookie,
        0,
        table_id,
        command,
        idle_timeout,
        hard_timeout,
        priority,
        0xFFFFFFFF,
        out_port,
        out_group,
        flags,
    )
    return fixed + (match_bytes or match()) + b"".join(instructions)


def bucket(*actions: bytes, weight: int = 0, watch_port: int = OFPP_ANY) -> bytes:
    body = b"".join(actions)
    return struct.pack("!HHII4x", 16 + len(body), weight, watch_port, OFPG_ANY) + body


def group_mod_body(command: int, group_type: int, group_id: int, *buckets: bytes) -> bytes:
    return struct.pack("!HBxI", command, group_type, group_id) + b"".join(buckets)


def band_drop(rate: int, burst: int = 0) -> bytes:
    return struct.pack("!HHII4x", 1, 16, rate, burst)


def meter_mod_body(command: int, flags: int, meter_id: int, *bands: bytes) -> bytes:
    return struct.pack("!HHI", command, flags, meter_id) + b"".join(bands)


@dataclass(frozen=True)
class OfMessage:
    version: int
    msg_type: int
    xid: int
    body: bytes

    def error(self) -> tuple[int, int, bytes]:
        """(type, code, data) of an OFPT_ERROR."""
        assert self.msg_type == OFPT_ERROR, f"not an error: {self}"
        err_type, code = struct.unpack_from("!HH", self.body)
        return err_type, code, self.body[4:]


def packet_out_body(
    in_port: int, actions: Iterable[bytes], data: bytes = b"", buffer_id: int = OFP_NO_BUFFER
) -> bytes:
    body = b"".join(actions)
    return struct.pack("!IIH6x", buffer_id, in_port, len(body)) + body + data


@dataclass(frozen=True)
class PacketIn:
    """The fields of an OFPT_PACKET_IN that tests look at."""

    buffer_id: int
    total_len: int
    reason: int
    table_id: int
    cookie: int
    data: bytes

    @staticmethod
    def parse(msg: OfMessage) -> PacketIn:
        assert msg.msg_type == OFPT_PACKET_IN, f"not a packet-in: {msg}"
        buffer_id, total_len, reason, table_id, cookie = struct.unpack_from("!IHBBQ", msg.body)
        (match_len,) = struct.unpack_from("!H", msg.body, 18)
        data_at = 16 + (match_len + 7) // 8 * 8 + 2
        return PacketIn(buffer_id, total_len, reason, table_id, cookie, msg.body[data_at:])


class OfClient:
    """A blocking OpenFlow 1.3 connection that answers the switch's echo requests itself.

    It connects to 127.0.0.1:``port``, to the unix socket at ``port`` when it is a path (a
    switch listening in another network namespace), or uses ``sock``, a stream socket already
    connected."""

    def __init__(
        self, port: int | Path = 0, timeout: float = 10.0, sock: socket.socket | None = None
    ) -> None:
        if sock is not None:
            self.sock = sock
        elif isinstance(port, Path):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(str(port))
        else:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.sock.settimeout(timeout)
        self.next_xid = 0x1000
        self.unsolicited: list[OfMessage] = []
        self.datapath_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> OfClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def xid(self) -> int:
        self.next_xid += 1
        return self.next_xid

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, msg_type: int, body: bytes = b"", xid: int | None = None) -> int:
        xid = self.xid() if xid is None else xid
        self.send_raw(message(msg_type, body, xid))
        return xid

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("the switch closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _recv_message(self) -> OfMessage:
        version, msg_type, length, xid = HEADER.unpack(self._read_exact(HEADER.size))
        assert length >= HEADER.size, f"switch sent a header with length {length}"
        return OfMessage(version, msg_type, xid, self._read_exact(length - HEADER.size))

    def recv(self) -> OfMessage:
        """The next message, after answering any echo requests that come first."""
        while True:
            msg = self._recv_message()
            if msg.msg_type != OFPT_ECHO_REQUEST:
                return msg
            self.send(OFPT_ECHO_REPLY, msg.body, msg.xid)

    def recv_closed(self, timeout: float) -> list[OfMessage]:
        """Reads until the switch closes the connection; returns what came before the close
        (echo requests included: they are not answered here).

        Raises TimeoutError if the connection is still open after `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        received = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"connection still open after {timeout} s: {received}")
            self.sock.settimeout(remaining)
            try:
                received.append(self._recv_message())
            except ConnectionError:
                return received
            except TimeoutError as e:
                raise TimeoutError(f"connection still open after {timeout} s: {received}") from e

    def handshake(self) -> None:
        """HELLO with a version bitmap offering 1.3 only, then FEATURES."""
        bitmap_element = struct.pack("!HHI", 1, 8, 1 << OFP_VERSION)
        self.send(OFPT_HELLO, bitmap_element)
        hello = self.recv()
        assert hello.msg_type == OFPT_HELLO, hello
        assert hello.version == OFP_VERSION, hello
        reply = self.request(OFPT_FEATURES_REQUEST)[-1]
        assert reply.msg_type == OFPT_FEATURES_REPLY, reply
        (self.datapath_id,) = struct.unpack_from("!Q", reply.body)

    def until_xid(self, xid: int) -> list[OfMessage]:
        """Messages up to and including the first with `xid`; others are kept as unsolicited."""
        while True:
            msg = self.recv()
            if msg.xid == xid:
                return [msg]
            self.unsolicited.append(msg)

    def request(self, msg_type: int, body: bytes = b"") -> list[OfMessage]:
        """Sends a request and returns its reply (the last of a multipart sequence last)."""
        xid = self.send(msg_type, body)
        replies = self.until_xid(xid)
        while replies[-1].msg_type == OFPT_MULTIPART_REPLY and self._more(replies[-1]):
            replies += self.until_xid(xid)
        return replies

    @staticmethod
    def _more(msg: OfMessage) -> bool:
        _, flags = struct.unpack_from("!HH", msg.body)
        return bool(flags & OFPMPF_REPLY_MORE)

    def barrier(self) -> list[OfMessage]:
        """Sends a barrier; returns every message that came before its reply (which it checks)."""
        xid = self.send(OFPT_BARRIER_REQUEST)
        before = []
        while True:
            msg = self.recv()
            if msg.xid == xid and msg.msg_type == OFPT_BARRIER_REPLY:
                return before
            before.append(msg)

    def send_and_barrier(self, msg_type: int, body: bytes) -> tuple[int, list[OfMessage]]:
        """Sends one message and a barrier; returns its xid and what came before the reply."""
        xid = self.send(msg_type, body)
        return xid, self.barrier()

    def echo(self, payload: bytes = b"still alive") -> None:
        replies = self.request(OFPT_ECHO_REQUEST, payload)
        assert replies[-1].msg_type == OFPT_ECHO_REPLY, replies
        assert replies[-1].body == payload, replies

    def multipart(self, mp_type: int, body: bytes = b"") -> bytes:
        """The concatenated bodies of every reply to one multipart request."""
        replies = self.request(OFPT_MULTIPART_REQUEST, struct.pack("!HH4x", mp_type, 0) + body)
        parts = []
        for reply in replies:
            assert reply.msg_type == OFPT_MULTIPART_REPLY, reply
            (reply_type,) = struct.unpack_from("!H", reply.body)
            assert reply_type == mp_type, reply
            parts.append(reply.body[8:])
        return b"".join(parts)

    def flow_entries(self) -> list[bytes]:
        """Every flow entry, with duration and counters zeroed so snapshots compare equal."""
        request = struct.pack("!B3xII4xQQ", OFPTT_ALL, OFPP_ANY, OFPG_ANY, 0, 0) + match()
        return sorted(_zero_flow_counters(e) for e in _records(self.multipart(OFPMP_FLOW, request)))

    def group_descs(self) -> list[bytes]:
        return sorted(_records(self.multipart(OFPMP_GROUP_DESC)))

    def meter_configs(self) -> list[bytes]:
        request = struct.pack("!I4x", OFPM_ALL)
        return sorted(_records(self.multipart(OFPMP_METER_CONFIG, request)))

    def flow_count(self) -> int:
        request = struct.pack("!B3xII4xQQ", OFPTT_ALL, OFPP_ANY, OFPG_ANY, 0, 0) + match()
        body = self.multipart(OFPMP_AGGREGATE, request)
        _, _, count = struct.unpack_from("!QQI", body)
        return int(count)


def _records(body: bytes) -> list[bytes]:
    """Splits a multipart body whose records start with a 16-bit length."""
    records = []
    offset = 0
    while offset < len(body):
        (length,) = struct.unpack_from("!H", body, offset)
        assert length >= 4 and offset + length <= len(body), f"bad record length {length}"
        records.append(body[offset : offset + length])
        offset += length
    return records


def _zero_flow_counters(entry: bytes) -> bytes:
    """ofp_flow_stats without duration_sec/nsec (bytes 4..12) and packet/byte counts (32..48)."""
    return entry[:4] + b"\0" * 8 + entry[12:32] + b"\0" * 16 + entry[48:]


def connected_client(port: int) -> OfClient:
    client = OfClient(port)
    try:
        client.handshake()
    except BaseException:
        client.close()
        raise
    return client


def error_of(messages: list[OfMessage], xid: int) -> tuple[int, int, bytes]:
    """The single OFPT_ERROR answering `xid` among `messages`."""
    errors = [m for m in messages if m.msg_type == OFPT_ERROR and m.xid == xid]
    assert len(errors) == 1, f"expected one error for xid {xid:#x}, got {messages}"
    return errors[0].error()
