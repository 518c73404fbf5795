"""The MCP set-ups of docs/mcp.md and the README are the ones the tests run: their Python
examples are the files tests/mcp/test_agent_frameworks.py runs (and `make check`
type-checks strictly), and each client's configuration is JSON that points at /mcp with
the runtime token."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "mcp.md").read_text()
README = (ROOT / "README.md").read_text().split("## MCP", 1)[1].split("\n## ", 1)[0]
EXAMPLES = ("mcp_langgraph.py", "mcp_openai_agents.py")


def test_the_python_set_ups_are_the_examples_that_run() -> None:
    examples = {(ROOT / "examples" / name).read_text() for name in EXAMPLES}
    for text in (DOC, README):
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        assert len(blocks) == 2 and set(blocks) == examples


def test_the_client_configurations_are_json_for_mcp_with_the_token() -> None:
    blocks = [
        json.loads(b) for t in (DOC, README) for b in re.findall(r"```json\n(.*?)```", t, re.S)
    ]
    assert len(blocks) == 5
    for block in blocks:
        (server,) = block["mcpServers"].values()
        shown = json.dumps(server)
        assert "127.0.0.1:8000/mcp" in shown and "Authorization: Bearer" in shown.replace(
            '"Authorization": "Bearer', "Authorization: Bearer"
        )
