"""Shared pytest fixtures for Hairpin's Python tests."""

from __future__ import annotations

import pytest

from hairpin.testing import unavailable_reason


@pytest.fixture
def root() -> None:
    """Skip the test unless it can make network namespaces and run Open vSwitch."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
