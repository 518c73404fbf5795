"""The ``agent-memory`` command's own surface: ``--version``, help on every option,
settings errors as one line (docs/operations.md, "Commands")."""

from __future__ import annotations

import argparse
from importlib.metadata import version

import pytest

from server.cli import build_parser, main


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_every_command_and_option_has_help() -> None:
    missing = [
        f"{parser.prog} {action.dest}"
        for parser in _parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert missing == []
    for parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                assert all(helps.get(name) for name in action.choices), parser.prog


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"agent-memory {version('agent-memory')}"


def test_a_bad_setting_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_LOG_LEVEL", "loud")
    assert main(["schema", "--check"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error (INVALID_SETTING): log_level: Input should be ")


@pytest.mark.parametrize("command", [["migrate"], ["serve"], ["db-url"]])
def test_a_database_url_that_is_not_one_is_one_line(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 8 of issue 22: DATABASE_URL=not-a-url is refused in one line, exit 1, like
    every other misconfiguration (it printed a 22-line traceback); the URL is not echoed."""
    monkeypatch.setenv("DATABASE_URL", "not-a-url")
    assert main(command) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error (INVALID_SETTING): ")
    assert "DATABASE_URL is not a PostgreSQL URL" in line and "not-a-url" not in line
