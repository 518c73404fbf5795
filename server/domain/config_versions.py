"""A new version of an agent's configuration against the versions before it (R4).

Stored label values are tied to a label's number: every later version keeps each
label an earlier one declared, with its number, and no new label takes a number an
earlier version gave another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from server.domain.config import HarnessConfig, Label, parse_config
from server.domain.config_json import reject


def validate_new_version(
    raw: Mapping[str, Any] | None, *, sessionless: bool, previous: Sequence[HarnessConfig]
) -> HarnessConfig:
    """``parse_config``, then R4 against every earlier version of the agent."""
    config = parse_config(raw, sessionless=sessionless)
    check_labels_kept(config.memory.labels, previous)
    return config


def check_labels_kept(labels: Mapping[str, Label], previous: Sequence[HarnessConfig]) -> None:
    """R4: ``labels`` keep every label of ``previous`` with its number, and take no
    number one of them gave another label."""
    path = "harness.memory.labels"
    numbers: dict[str, int] = {}  # label -> number, as earlier versions declared them
    owners: dict[int, str] = {}  # number -> the label an earlier version gave it to
    for version in previous:
        for name, label in version.memory.labels.items():
            numbers.setdefault(name, label.number)
            owners.setdefault(label.number, name)
    for name, label in labels.items():
        if name in numbers and label.number != numbers[name]:
            reject(
                f"{path}.{name}.number",
                f"label {name} must keep number {numbers[name]}, which an earlier version"
                f" gave it, not {label.number}",
            )
        if name not in numbers and label.number in owners:
            reject(
                f"{path}.{name}.number",
                f"label {name} cannot take number {label.number}: an earlier version gave"
                f" it to label {owners[label.number]}, and records may still hold its values",
            )
    for name, number in numbers.items():
        if name not in labels:
            reject(
                f"{path}.{name}",
                f"label {name} (number {number}) was declared by an earlier version and must"
                " be kept; a later version may only add labels",
            )
