"""What hairpind tells a controllet through its environment (twin of the Rust SDK's ``env``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

NAME = "HAIRPIN_CONTROLLET"
DATAPATH_ID = "HAIRPIN_DATAPATH_ID"
OPENFLOW = "HAIRPIN_OPENFLOW"
BUS_URL = "HAIRPIN_BUS_URL"
BUS_USER = "HAIRPIN_BUS_USER"
BUS_PASSWORD = "HAIRPIN_BUS_PASSWORD"


@dataclass(frozen=True)
class Environment:
    """The controllet's name, its switch, its OpenFlow channel and its bus."""

    name: str
    datapath_id: int
    openflow: str
    bus_url: str | None = None
    bus_user: str | None = None
    bus_password: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Environment:
        """Reads the variables hairpind set; raises ValueError naming a missing one."""
        env = os.environ if env is None else env

        def need(key: str) -> str:
            value = env.get(key)
            if not value:
                raise ValueError(f"{key} is not set (a controllet is started by hairpind)")
            return value

        channel = need(OPENFLOW)
        if not channel.startswith(("unix:", "tcp:")):
            raise ValueError(f"{OPENFLOW}={channel!r} is not unix:PATH or tcp:HOST:PORT")
        return cls(
            name=need(NAME),
            datapath_id=int(need(DATAPATH_ID), 16),
            openflow=channel,
            bus_url=env.get(BUS_URL),
            bus_user=env.get(BUS_USER),
            bus_password=env.get(BUS_PASSWORD),
        )

    @property
    def dpid(self) -> str:
        """The datapath id as subjects spell it: 16 hex digits."""
        return f"{self.datapath_id:016x}"

    def own_subject(self, topic: str) -> str:
        """``hairpin.<dpid>.c.<name>.<topic>``: where this controllet may publish."""
        return f"hairpin.{self.dpid}.c.{self.name}.{topic}"

    def event_subject(self, kind: str) -> str:
        """``hairpin.<dpid>.event.<kind>`` (packet_in, port_status, flow_removed)."""
        return f"hairpin.{self.dpid}.event.{kind}"

    def ask_subject(self, service: str, query: str) -> str:
        """``hairpin.<dpid>.ask.<service>.<query>``: a request to a controllet or to the switch."""
        return f"hairpin.{self.dpid}.ask.{service}.{query}"

    @property
    def inbox_prefix(self) -> str:
        """The reply inbox only this controllet may read."""
        return f"_INBOX_{self.dpid}_{self.name}"
