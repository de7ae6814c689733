"""The CAPEX model of seed 000 (sections II and III-B), checked against values worked out by
hand from the paper's formulas, and the `capex` command's table and figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hairpin.harmless import capex

CLI = Path(sys.executable).parent / "hairpin-harmless"

# (kind, speed, ports, dollars, the arithmetic)
HAND_WORKED = [
    ("HW", "1G", 48, 2200, "2200*ceil(48/48)"),
    ("HW", "1G", 49, 4400, "2200*ceil(49/48)"),
    ("HW", "1G", 1000, 46200, "2200*21"),
    ("HW", "10G", 100, 11700, "3900*ceil(100/48)=3900*3"),
    ("SW", "1G", 12, 1600, "1400*1 + 100*(3-1) + 400*(1-1): 12 mod 16 < 13, no 2nd CPU"),
    ("SW", "1G", 13, 2100, "1400*1 + 100*(4-1) + 400*(1-0): 13 ports need the 3rd slot"),
    ("SW", "1G", 17, 3500, "1400*2 + 100*(5-2) + 400*(2-1)"),
    ("SW", "1G", 100, 14000, "1400*7 + 100*(25-7) + 400*(7-1)"),
    ("SW", "10G", 8, 2200, "1400*1 + 400*2 + 400*(1-1)"),
    ("SW", "10G", 9, 3000, "1400*1 + 400*3 + 400*(1-0)"),
    ("SW", "10G", 100, 25800, "1400*9 + 400*25 + 400*(9-1)"),
    ("HL", "1G", 48, 1800, "1400*1 + 400*1 + 400*(1-1)"),
    ("HL", "1G", 96, 2200, "1400*1 + 400*2 + 400*(1-1): 96 mod 144 < 97"),
    ("HL", "1G", 97, 3000, "1400*1 + 400*3 + 400*(1-0)"),
    ("HL", "1G", 145, 4800, "1400*2 + 400*4 + 400*(2-1)"),
    ("HL", "1G", 1000, 21000, "1400*7 + 400*21 + 400*(7-0): 1000 mod 144 = 136"),
    ("HL", "10G", 24, 1900, "1400*1 + 500*1 + 400*(1-1)"),
    ("HL", "10G", 49, 3300, "1400*1 + 500*3 + 400*(1-0)"),
    ("HL", "10G", 100, 5700, "1400*2 + 500*5 + 400*(2-1)"),
]


@pytest.mark.parametrize(("kind", "speed", "ports", "dollars", "arithmetic"), HAND_WORKED)
def test_formula_matches_hand_worked_value(
    kind: str, speed: str, ports: int, dollars: int, arithmetic: str
) -> None:
    assert capex.cost(kind, ports, speed) == dollars, arithmetic


def test_no_ports_cost_nothing_and_negative_counts_are_refused() -> None:
    assert all(capex.cost(k, 0, s) == 0 for k in capex.KINDS for s in capex.SPEEDS)
    with pytest.raises(ValueError):
        capex.cost("HL", -1, "1G")


def test_harmless_is_cheapest_beyond_a_handful_of_ports() -> None:
    """The paper's reading of its model: HARMLESS costs less than hardware switches at every
    size, and less than software switches once a server's built-in ports are not enough."""
    for speed, few in (("1G", 12), ("10G", 4)):
        for x in range(1, 3001):
            assert capex.harmless(x, speed) < capex.hardware(x, speed), (speed, x)
            if x > few:
                assert capex.harmless(x, speed) < capex.software(x, speed), (speed, x)


def test_command_prints_the_table_and_draws_the_figure(tmp_path: Path) -> None:
    png = tmp_path / "capex.png"
    result = subprocess.run(
        [str(CLI), "capex", "--ports", "48,1000", "--png", str(png), "--max-ports", "300"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "ports",
        "HW",
        "1G",
        "SW",
        "1G",
        "HL",
        "1G",
        "HW",
        "10G",
        "SW",
        "10G",
        "HL",
        "10G",
    ]
    assert lines[1].split() == ["48", "$2,200", "$6,300", "$1,800", "$3,900", "$12,000", "$2,400"]
    assert lines[2].split()[:4] == ["1000", "$46,200", "$131,700", "$21,000"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000
