"""The tests of the schema on Citus run with ``make test-citus`` (AGENT_MEMORY_TEST_CITUS set:
the shared fixtures then give a database on a coordinator and two workers)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _on_citus() -> None:
    if not os.environ.get("AGENT_MEMORY_TEST_CITUS"):
        pytest.skip("runs on a Citus cluster: make test-citus")
