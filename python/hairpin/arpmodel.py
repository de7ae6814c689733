"""The datacenter ARP message model of seed 001 section 5.2 (Tables 1 and 2, Eq. 1).

A core switch, M aggregation and M edge switches, alpha hosts per edge switch; each of the
three ARP handling approaches (OF-unicast, OF-responder, InSP) costs, per ARP resolution
scenario (requester and target learnt or not), a number of ARP messages on the links and of
control messages between switches and controller. :func:`total` is Eq. 1: every host pings
every other host once, in sequence, starting with nothing learnt.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Approach(Enum):
    OF_UNICAST = "OF-unicast"
    OF_RESPONDER = "OF-responder"
    INSP = "InSP"


class Scenario(Enum):
    """Requester state - target state: L learnt, NL not learnt."""

    NL_NL = "NL-NL"
    NL_L = "NL-L"
    L_NL = "L-NL"
    L_L = "L-L"


@dataclass(frozen=True)
class Topology:
    """Table 1: ``m`` aggregation (and as many edge) switches, ``alpha`` hosts per edge."""

    m: int
    alpha: int

    @property
    def switches(self) -> int:  # S
        return 1 + 2 * self.m

    @property
    def hosts(self) -> int:  # N
        return self.m * self.alpha

    @property
    def links(self) -> int:  # E
        return self.m**2 + self.m * (self.alpha + 3) - 2

    @property
    def distance(self) -> int:  # d, the most switches on a shortest host-to-host path
        return self.m if self.m <= 3 else 3


@dataclass(frozen=True)
class Messages:
    arp: int
    control: int

    def __add__(self, other: Messages) -> Messages:
        return Messages(self.arp + other.arp, self.control + other.control)

    def __mul__(self, factor: int) -> Messages:
        return Messages(self.arp * factor, self.control * factor)


def messages(approach: Approach, scenario: Scenario, t: Topology) -> Messages:
    """Table 2: the messages one ARP resolution costs."""
    n, s, e, d = t.hosts, t.switches, t.links, t.distance
    if approach is Approach.OF_UNICAST:
        flood_arp = e + d + 1
        return {
            Scenario.NL_NL: Messages(flood_arp, 2 * (e - (n - 1) + s) + d + 3),
            Scenario.NL_L: Messages(2 * (d + 1), s + 2),
            Scenario.L_NL: Messages(flood_arp, 2 * (e - (n - 1)) + s + 2),
            Scenario.L_L: Messages(2 * (d + 1), 2),
        }[scenario]
    learnt_control = 2 if approach is Approach.OF_RESPONDER else 0
    return {
        Scenario.NL_NL: Messages(n + 2, n + 2 * s + 3),
        Scenario.NL_L: Messages(2, s + 2),
        Scenario.L_NL: Messages(n + 2, n + s + 3),
        Scenario.L_L: Messages(2, learnt_control),
    }[scenario]


def total(approach: Approach, t: Topology) -> Messages:
    """Eq. 1: one NL-NL resolution, N-2 L-NL, then (N-1)^2 L-L."""
    n = t.hosts
    return (
        messages(approach, Scenario.NL_NL, t)
        + messages(approach, Scenario.L_NL, t) * (n - 2)
        + messages(approach, Scenario.L_L, t) * ((n - 1) ** 2)
    )


def saving(insp: int, other: int) -> float:
    """The fraction of `other`'s messages that InSP saves."""
    return 1.0 - insp / other
