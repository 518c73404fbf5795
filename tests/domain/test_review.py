"""The review's pure rules (R8, R50): when due, the instructions, the decisions."""

from __future__ import annotations

import uuid

from server.domain import review as rules
from server.domain.config import MemoryConfig, parse_config


def _memory(**memory: object) -> MemoryConfig:
    raw = {"harness": {"memory": {"enabled": True, **memory}}}
    return parse_config(raw, sessionless=False).memory


def test_every_turn_is_due_and_every_n_messages_counts_them() -> None:
    assert rules.due(None, 0).due
    assert rules.due(6, 3) == rules.Due(False, "3 of 6 messages since the last review")
    assert rules.due(6, 6).due and rules.due(6, 9).due


def test_messages_are_what_the_user_said_and_the_agent_replied() -> None:
    entries = [
        rules.Entry(1, "user", None, "hi"),
        rules.Entry(1, "agent", None, "hello"),
        rules.Entry(1, "tool", "weather", "sunny"),
    ]
    assert rules.count_messages(entries) == 2
    assert (
        rules.render(entries)
        == "turn 1, user\nhi\n\nturn 1, agent\nhello\n\nturn 1, tool weather\nsunny"
    )


def test_the_default_instructions_name_the_kinds_labels_and_scopes() -> None:
    memory = _memory(
        kinds=["fact", "preference"],
        labels={"customer_id": {"number": 5, "description": "The customer it is about."}},
        scope={"read": ["session", "agent"], "write": ["session", "agent"]},
    )
    text = rules.instructions(memory)
    assert "- fact: something true" in text and "- preference" in text
    assert "- customer_id: The customer it is about." in text
    assert "scope is agent" in text
    assert text.endswith(rules.DECISIONS_PART)
    session_only = rules.instructions(_memory())
    assert "session scope" in session_only and "scope is agent" not in session_only


def test_extraction_prompt_replaces_what_to_keep_but_not_the_decisions() -> None:
    memory = _memory(extraction={"prompt": "Keep only billing facts."})
    text = rules.instructions(memory)
    assert text == f"Keep only billing facts.\n\n{rules.DECISIONS_PART}"


def test_replace_and_delete_name_a_record_and_add_and_skip_do_not() -> None:
    some = uuid.uuid4()
    assert rules.check_decision(0, "ADD", None) is None
    assert rules.check_decision(1, "REPLACE", some) is None
    assert "decision 2: DELETE names the record it deletes" in str(
        rules.check_decision(2, "DELETE", None)
    )
    assert "decision 3: SKIP names no record" in str(rules.check_decision(3, "SKIP", some))


def test_restates_at_the_threshold() -> None:
    """R50: the same meaning in other words restates from the cosine threshold on."""
    a, b = "Prefers calls after five", "Likes being phoned in the evening"
    assert rules.restates(rules.RESTATEMENT_MIN_COSINE, a, b)
    assert not rules.restates(rules.RESTATEMENT_MIN_COSINE - 0.001, a, b)


def test_lightly_edited_words_restate_below_the_cosine_threshold() -> None:
    """R50: case, punctuation and one word changed still restate the record."""
    record = "Melanie painted a lake sunrise last year."
    edited = "melanie painted the lake sunrise last year!"
    cosine = rules.EDITED_MIN_COSINE + 0.01
    assert rules.restates(cosine, edited, record)
    assert not rules.restates(rules.EDITED_MIN_COSINE - 0.01, edited, record)
    # a different fact that shares few words is not a restatement at that cosine
    assert not rules.restates(cosine, "Melanie went camping with her kids.", record)


def test_a_changed_number_corrects_and_never_restates() -> None:
    """R50: a candidate that changes a number is a correction (REPLACE), never skipped."""
    record = "Has 2 dogs and a cat"
    assert not rules.restates(0.99, "Has 3 dogs and a cat", record)
    assert rules.restates(0.99, "has 2 dogs and a cat.", record)
