"""Names are matched whole: ``$`` in ``re.match`` would let a trailing newline through."""

from __future__ import annotations

import pytest

from tests.api.scenario import CREATE_AGENT
from tests.conftest import Api


@pytest.mark.parametrize(
    ("ns", "name", "field"),
    [("ns-ok", "nl\n", "name"), ("bada\n", "agent", "namespace"), ("ns-ok", "a\nb", "name")],
)
async def test_names_ending_in_a_newline_are_refused(
    api: Api, ns: str, name: str, field: str
) -> None:
    """A name is matched whole: ``$`` would let a trailing newline through."""
    _, ext = await api.error(CREATE_AGENT, ns=ns, name=name, sessionless=False)
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", field)
