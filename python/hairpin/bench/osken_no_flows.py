"""The os-ken learning switch that installs no flows but its table-miss entry, so that every
packet crosses the controller: the remote baseline of the InFEP latency benchmark. Run with
``osken-manager --ofp-tcp-listen-port PORT hairpin.bench.osken_no_flows``."""

from __future__ import annotations

from typing import Any

from hairpin.apps.learning_switch import TABLE_MISS_PRIORITY, LearningSwitch


class NoFlowsLearningSwitch(LearningSwitch):
    """Learns and forwards by packet-out only."""

    @staticmethod
    def _add_flow(datapath: Any, priority: int, match: Any, actions: list[Any], **kw: Any) -> None:
        if priority == TABLE_MISS_PRIORITY:
            LearningSwitch._add_flow(datapath, priority, match, actions, **kw)
