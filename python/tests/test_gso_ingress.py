"""A GSO super-frame cut into more segments than a receive batch holds: the segments the
batch cannot take are lost (the switch does not resume a frame in the next batch), and that
loss must show in the port's drop counter, not vanish."""

from __future__ import annotations

import re
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from hairpin.testing.netns import star, unique_prefix
from hairpin.testing.topology import (
    CONTROLLER_PORT,
    SWITCH_OF_PORT,
    HairpinStar,
    background,
    hairpind_command,
    wait_until,
)

pytestmark = pytest.mark.usefixtures("root")

PAYLOAD = 60_000
MSS = 100
SEGMENTS = PAYLOAD // MSS
PORT_STATS = re.compile(
    r"port\s+(\d+): rx pkts=(\d+), bytes=\d+, drop=(\d+).*?\n\s+tx pkts=(\d+)", re.S
)


def test_segments_beyond_the_batch_are_counted_as_dropped(tmp_path: Path) -> None:
    with ExitStack() as stack:
        topo = stack.enter_context(star(unique_prefix(), 1))
        sw = topo.switch
        sw.run("ip", "tuntap", "add", "dev", "gso0", "mode", "tap", "vnet_hdr")
        sw.run("ip", "link", "set", "gso0", "up")
        control = tmp_path / "hairpind.ctl"
        args = hairpind_command(SWITCH_OF_PORT, control)
        args += ["--port", "1=p1", "--port", "2=gso0"]
        log = tmp_path / "hairpind.log"
        process = stack.enter_context(background(sw, args, log))
        switch = HairpinStar(sw, process, log, control, SWITCH_OF_PORT, CONTROLLER_PORT, None, topo)
        switch.wait_listening()
        switch.ofctl("add-flow", "in_port=2,actions=output:1")
        inject = [sys.executable, "-m", "hairpin.testing.gso", "gso0", str(PAYLOAD), str(MSS)]
        sw.run(*inject)

        def stats() -> dict[int, tuple[int, int, int]]:
            dump = switch.ofctl("dump-ports")
            return {
                int(p): (int(rx), int(drop), int(tx))
                for p, rx, drop, tx in PORT_STATS.findall(dump)
            }

        # Port losses are reported once a second.
        assert wait_until(lambda: stats()[2][1] > 0, 5.0), stats()
        time.sleep(0.2)
        rx, dropped, _ = stats()[2]
        _, _, sent = stats()[1]
        assert 0 < sent < SEGMENTS, "the batch took some segments, not all"
        assert (rx, sent + dropped) == (sent, SEGMENTS), stats()
