"""A controllet that misbehaves, for the containment test. ``MODE`` is one of:

- ``cpu``: spins forever, printing the CPU share it gets;
- ``memory``: allocates and touches memory without end;
- ``fork``: forks until refused, then holds its children;
- ``escape PATH...``: reads each PATH, writes outside its directory, opens raw sockets,
  connects to the host's OpenFlow port, claims the master role on its own OpenFlow channel
  (which would demote a remote master), makes system calls the sandbox's filter refuses (a
  user namespace, io_uring, the kernel keyring: all three work for an unprivileged process
  outside the filter), and publishes on other controllets' and the switch's subjects (and,
  as a control, on its own), printing what happened to each.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import struct
import sys
import time
from pathlib import Path


def spin() -> None:
    """Spins, printing the share of a CPU it got over each half second."""
    print("spinning", flush=True)
    wall, cpu = time.monotonic(), time.process_time()
    while True:
        now = time.monotonic()
        if now - wall >= 0.5:
            used = time.process_time()
            print(f"cpu share {(used - cpu) / (now - wall):.3f}", flush=True)
            wall, cpu = now, used


def hog_memory() -> None:
    chunks = []
    while True:
        chunks.append(b"\x01" * (8 << 20))
        print(f"holding {8 * len(chunks)} MiB", flush=True)


def fork_bomb() -> None:
    children = 0
    while True:
        try:
            pid = os.fork()
        except OSError as e:
            print(f"fork refused after {children} children: {e.strerror}", flush=True)
            break
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
    time.sleep(600)


CLONE_NEWUSER = 0x10000000
SYS_IO_URING_SETUP = 425  # the same number on every architecture
SYS_KEYCTL = 250  # x86_64
KEY_SPEC_SESSION_KEYRING = -3


OFPT_ROLE_REQUEST = 24
OFPCR_ROLE_MASTER = 2


def claim_master() -> str:
    """Claims the master role on the controllet's channel; returns the role reply, or raises
    with the OpenFlow error (type and code) the switch answered with."""
    from hairpin.testing.daemon import OFPT_ERROR, OfClient

    path = Path(os.environ["HAIRPIN_OPENFLOW"].removeprefix("unix:"))
    with OfClient(path, timeout=5) as client:
        client.handshake()
        body = struct.pack("!IIQ", OFPCR_ROLE_MASTER, 0, 1)
        reply = client.request(OFPT_ROLE_REQUEST, body)[-1]
    if reply.msg_type == OFPT_ERROR:
        err_type, code = struct.unpack_from("!HH", reply.body)
        raise OSError(0, f"OpenFlow error type {err_type} code {code}")
    return f"role {struct.unpack_from('!I', reply.body)[0]}"


def checked(rc: int) -> int:
    """``rc`` of a C call, or the OSError its errno names."""
    if rc < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return rc


def attempt(what: str, action: object) -> None:
    try:
        result = action()  # type: ignore[operator]
        print(f"ESCAPED {what}: {result!r:.60}", flush=True)
    except OSError as e:
        print(f"denied {what}: {e.strerror}", flush=True)


async def publish_elsewhere() -> None:
    import nats

    dpid = os.environ["HAIRPIN_DATAPATH_ID"]
    me = os.environ["HAIRPIN_CONTROLLET"]
    errors: list[str] = []

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    bus = await nats.connect(
        os.environ["HAIRPIN_BUS_URL"],
        user=os.environ["HAIRPIN_BUS_USER"],
        password=os.environ["HAIRPIN_BUS_PASSWORD"],
        error_cb=on_error,
        inbox_prefix=f"_INBOX_{dpid}_{me}".encode(),
    )
    for subject in (f"hairpin.{dpid}.c.lsw.learned", f"hairpin.{dpid}.event.port_status"):
        await bus.publish(subject, b"hostile")
        await bus.flush()
    await asyncio.sleep(1)
    for error in errors:
        print(f"bus refused: {error}", flush=True)
    await bus.publish(f"hairpin.{dpid}.c.{me}.alive", b"own subject")
    await bus.flush()
    print("published on its own subject", flush=True)


def escape(paths: list[str]) -> None:
    for path in paths:
        attempt(f"read {path}", lambda p=path: Path(p).read_bytes()[:64])
    attempt("write /usr/hostile", lambda: Path("/usr/hostile").write_text("x"))
    attempt("write /etc/hostile", lambda: Path("/etc/hostile").write_text("x"))
    attempt(
        "raw packet socket",
        lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)),
    )
    attempt(
        "raw ip socket",
        lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    )
    attempt(
        "connect to the host's OpenFlow port",
        lambda: socket.create_connection(("127.0.0.1", 16953), timeout=1),
    )
    attempt("master role", claim_master)
    libc = ctypes.CDLL(None, use_errno=True)
    attempt("new user namespace", lambda: checked(libc.unshare(CLONE_NEWUSER)))
    attempt(
        "io_uring",
        lambda: checked(libc.syscall(SYS_IO_URING_SETUP, 1, ctypes.create_string_buffer(120))),
    )
    attempt(
        "kernel keyring",
        lambda: checked(libc.syscall(SYS_KEYCTL, 0, KEY_SPEC_SESSION_KEYRING, 0)),
    )
    asyncio.run(publish_elsewhere())
    time.sleep(600)


if __name__ == "__main__":
    mode = sys.argv[1]
    {"cpu": spin, "memory": hog_memory, "fork": fork_bomb}.get(mode, lambda: escape(sys.argv[2:]))()
