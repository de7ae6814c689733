"""Controllets in Python with os-ken-style handlers.

A controllet subclasses :class:`Controllet` and marks methods with :func:`on_openflow` (an
os-ken message class: ``OFPPacketIn``, ``OFPPortStatus``, ...) or :func:`on_bus` (a subject
pattern). Messages are os-ken's own parser objects, and ``self.datapath`` answers
``send_msg``, ``ofproto`` and ``ofproto_parser`` as an os-ken datapath does, so os-ken app code
moves over with few changes. The OpenFlow channel is hairpind's unix socket (or TCP in a
network namespace of the controllet's own); the bus is NATS through nats-py.
"""

from __future__ import annotations

import asyncio
import inspect
import struct
import sys
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import nats
from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from os_ken.ofproto import ofproto_parser, ofproto_v1_3, ofproto_v1_3_parser

from hairpin.controllet.env import Environment

HEADER = struct.Struct("!BBHI")
F = TypeVar("F", bound=Callable[..., Awaitable[None]])


def on_openflow(*classes: type) -> Callable[[F], F]:
    """Marks an ``async def handler(self, msg)`` for these os-ken message classes."""

    def mark(handler: F) -> F:
        handler._openflow = classes  # type: ignore[attr-defined]
        return handler

    return mark


def on_bus(pattern: str) -> Callable[[F], F]:
    """Marks an ``async def handler(self, msg)`` for a bus subject pattern; ``{dpid}`` and
    ``{name}`` are replaced by the switch's datapath id and the controllet's name."""

    def mark(handler: F) -> F:
        handler._bus = pattern  # type: ignore[attr-defined]
        return handler

    return mark


class Datapath:
    """The switch as an os-ken app sees it: ``id``, ``ofproto``, ``ofproto_parser``,
    ``send_msg``."""

    ofproto = ofproto_v1_3
    ofproto_parser = ofproto_v1_3_parser

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.id = 0
        self._xid = 0

    def send_msg(self, msg: Any) -> None:
        """Encodes and queues ``msg`` (written without waiting; see :meth:`drain`)."""
        if msg.xid is None:
            self._xid = (self._xid + 1) & 0xFFFFFFFF
            msg.set_xid(self._xid)
        msg.serialize()
        self.writer.write(bytes(msg.buf))

    async def drain(self) -> None:
        await self.writer.drain()


class Controllet:
    """Base class: connects to the switch and the bus, and dispatches to the handlers."""

    OFP_VERSIONS: ClassVar[list[int]] = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.datapath: Datapath
        self.bus: Nats | None = None
        self._openflow: list[tuple[tuple[type, ...], Callable[[Any], Awaitable[None]]]] = []
        for _, method in inspect.getmembers(self, inspect.ismethod):
            classes = getattr(method, "_openflow", None)
            if classes:
                self._openflow.append((classes, method))

    async def started(self) -> None:
        """Called once the switch and the bus are connected; override to install flows."""

    async def publish(self, topic: str, data: bytes | str) -> None:
        """Publishes on this controllet's own subject ``hairpin.<dpid>.c.<name>.<topic>``."""
        if self.bus is None:
            return
        payload = data.encode() if isinstance(data, str) else data
        await self.bus.publish(self.env.own_subject(topic), payload)

    async def ask(self, service: str, query: str, data: bytes = b"", timeout: float = 2.0) -> Msg:
        """Asks ``service`` (a controllet's name, or ``switch``) on this switch."""
        assert self.bus is not None, "this controllet has no bus"
        return await self.bus.request(self.env.ask_subject(service, query), data, timeout=timeout)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        kind, _, where = self.env.openflow.partition(":")
        if kind == "unix":
            return await asyncio.open_unix_connection(where)
        host, _, port = where.rpartition(":")
        return await asyncio.open_connection(host, int(port))

    async def _connect_bus(self) -> None:
        if not self.env.bus_url:
            return
        options: dict[str, Any] = {"inbox_prefix": self.env.inbox_prefix.encode()}
        if self.env.bus_user and self.env.bus_password:
            options["user"] = self.env.bus_user
            options["password"] = self.env.bus_password
        name = f"controllet {self.env.name}"
        self.bus = await nats.connect(self.env.bus_url, name=name, **options)
        for _, method in inspect.getmembers(self, inspect.ismethod):
            pattern = getattr(method, "_bus", None)
            if pattern:
                subject = pattern.format(dpid=self.env.dpid, name=self.env.name)
                await self.bus.subscribe(subject, cb=method)

    async def run(self) -> None:
        """Handshake (HELLO, FEATURES), then dispatch every message until the switch hangs up."""
        reader, writer = await self._connect()
        self.datapath = Datapath(writer)
        hello = ofproto_v1_3_parser.OFPHello(self.datapath)
        self.datapath.send_msg(hello)
        self.datapath.send_msg(ofproto_v1_3_parser.OFPFeaturesRequest(self.datapath))
        await self.datapath.drain()
        await self._connect_bus()
        ready = False
        while True:
            try:
                head = await reader.readexactly(HEADER.size)
            except asyncio.IncompleteReadError:
                return
            version, msg_type, length, xid = HEADER.unpack(head)
            body = await reader.readexactly(length - HEADER.size)
            msg = ofproto_parser.msg(self.datapath, version, msg_type, length, xid, head + body)
            if isinstance(msg, ofproto_v1_3_parser.OFPEchoRequest):
                reply = ofproto_v1_3_parser.OFPEchoReply(self.datapath, data=msg.data)
                reply.set_xid(xid)
                self.datapath.send_msg(reply)
            elif isinstance(msg, ofproto_v1_3_parser.OFPSwitchFeatures) and not ready:
                self.datapath.id = msg.datapath_id
                ready = True
                await self.started()
            for classes, handler in self._openflow:
                if isinstance(msg, classes):
                    await handler(msg)
            await self.datapath.drain()

    @classmethod
    def main(cls) -> None:
        """Runs the controllet with the environment hairpind set; exits 2 without it."""
        try:
            env = Environment.from_env()
        except ValueError as e:
            print(f"{cls.__name__}: {e}", file=sys.stderr)
            raise SystemExit(2) from e
        asyncio.run(cls(env).run())
