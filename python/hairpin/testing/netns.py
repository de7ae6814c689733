"""Network namespaces as hosts and veth pairs as cables (Python twin of scripts/lib/netns.sh)."""

from __future__ import annotations

import ctypes
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

# setns(2)'s flag for a network namespace.
_CLONE_NEWNET = 0x40000000


def run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing its output as text."""
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


def existing_namespaces() -> set[str]:
    """Names of the network namespaces on this machine."""
    listing = run(["ip", "netns", "list"]).stdout
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


def unique_prefix() -> str:
    """A short prefix ("hp" + 4 hex digits) that no namespace on this machine starts with."""
    taken = existing_namespaces()
    while True:
        prefix = "hp" + secrets.token_hex(2)
        if not any(name.startswith(prefix) for name in taken):
            return prefix


@dataclass(frozen=True)
class Namespace:
    """A network namespace, by name."""

    name: str

    def cmd(self, *args: str) -> list[str]:
        """The command line that runs ``args`` inside this namespace."""
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``args`` inside this namespace and wait for it."""
        return run(self.cmd(*args), check=check)

    def popen(self, *args: str, **kwargs: object) -> subprocess.Popen[bytes]:
        """Start ``args`` inside this namespace without waiting."""
        return subprocess.Popen(self.cmd(*args), **kwargs)  # type: ignore[call-overload]

    def sysctl(self, *settings: str) -> None:
        """Write sysctl settings (``key=value``) inside this namespace."""
        self.run("sysctl", "-qw", *settings)

    def make_socket(self, family: int, kind: int, proto: int = 0) -> socket.socket:
        """A socket made inside this namespace (it stays there, whichever thread uses it)."""
        libc = ctypes.CDLL(None, use_errno=True)

        def enter(ns_fd: int) -> None:
            if libc.setns(ns_fd, _CLONE_NEWNET) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, f"setns into {self.name}: {os.strerror(errno)}")

        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            enter(target)
            try:
                return socket.socket(family, kind, proto)
            finally:
                enter(home)
        finally:
            os.close(home)
            os.close(target)

    def ping(self, address: str, count: int = 3) -> bool:
        """True when at least one of ``count`` pings to ``address`` is answered."""
        result = self.run(
            "ping", "-q", "-c", str(count), "-i", "0.2", "-W", "2", address, check=False
        )
        return result.returncode == 0


@contextmanager
def namespace(name: str) -> Iterator[Namespace]:
    """A namespace with loopback up and IPv6 off; deleted (with its interfaces) on exit."""
    run(["ip", "netns", "add", name])
    try:
        ns = Namespace(name)
        ns.sysctl("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        ns.run("ip", "link", "set", "lo", "up")
        yield ns
    finally:
        run(["ip", "netns", "del", name], check=False)


def link(ns_a: Namespace, if_a: str, ns_b: Namespace, if_b: str) -> None:
    """A veth cable between two namespaces: both ends up, IPv6 off, transmit checksum offload
    off (a switch reading through AF_PACKET would otherwise forward partial checksums). It goes
    away with either namespace."""
    run(
        [
            "ip",
            "link",
            "add",
            if_a,
            "netns",
            ns_a.name,
            "type",
            "veth",
            "peer",
            "name",
            if_b,
            "netns",
            ns_b.name,
        ]
    )
    for ns, iface in ((ns_a, if_a), (ns_b, if_b)):
        ns.sysctl(f"net.ipv6.conf.{iface}.disable_ipv6=1")
        ns.run("ethtool", "-K", iface, "tx", "off", check=False)
        ns.run("ip", "link", "set", iface, "up")


@dataclass
class Host:
    """A host namespace with one interface, eth0, at ``address`` (a /24)."""

    ns: Namespace
    address: str


@dataclass
class Star:
    """A switch namespace with ports p1..pN, each cabled to host i's eth0."""

    switch: Namespace
    hosts: list[Host] = field(default_factory=list)

    @property
    def ports(self) -> list[str]:
        """The switch-side interface names, in OpenFlow port order."""
        return [f"p{i}" for i in range(1, len(self.hosts) + 1)]


@contextmanager
def star(prefix: str, count: int, net: str = "10.0.0") -> Iterator[Star]:
    """``count`` hosts (``prefix``-h1..) at ``net``.i/24 around a switch namespace (``prefix``-sw).
    Every namespace is deleted on exit."""
    with ExitStack() as stack:
        topo = Star(stack.enter_context(namespace(f"{prefix}-sw")))
        for i in range(1, count + 1):
            host = cabled_host(stack, f"{prefix}-h{i}", topo.switch, f"p{i}", f"{net}.{i}")
            topo.hosts.append(host)
        yield topo


def cabled_host(stack: ExitStack, name: str, switch: Namespace, port: str, address: str) -> Host:
    """A host namespace ``name`` whose eth0 (``address``/24) is cabled to ``port`` in
    ``switch``; it is deleted when ``stack`` closes."""
    host_ns = stack.enter_context(namespace(name))
    link(switch, port, host_ns, "eth0")
    host_ns.run("ip", "addr", "add", f"{address}/24", "dev", "eth0")
    return Host(host_ns, address)
