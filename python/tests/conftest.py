"""Shared pytest fixtures for Hairpin's Python tests."""

from __future__ import annotations

import os

import pytest

from hairpin.testing import unavailable_reason


@pytest.fixture
def root() -> None:
    """Skip the test unless it can make network namespaces and run Open vSwitch.

    With HAIRPIN_TEST_STRICT=1 (scripts/test.sh, so CI) the test fails instead, naming what is
    missing: a test that cannot run never passes quietly.
    """
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("HAIRPIN_TEST_STRICT") == "1":
        pytest.fail(f"cannot run: {reason} (HAIRPIN_TEST_STRICT=1)")
    pytest.skip(reason)
