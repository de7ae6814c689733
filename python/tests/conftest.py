"""Shared pytest fixtures for Hairpin's Python tests."""

from __future__ import annotations

import pytest

from hairpin.testing import require_root_reason


@pytest.fixture
def root() -> None:
    """Skip the test unless it can make network namespaces."""
    reason = require_root_reason()
    if reason is not None:
        pytest.skip(reason)
