"""An agent version's configuration: validation and the normalised form.

A version's config is JSON. Only ``harness.memory`` and ``harness.history`` belong
to this server; every other key (``model``, other ``harness`` keys) belongs to the
runtime and is ignored. Inside ``harness.memory``, its sub-objects and
``harness.history`` an unknown key is rejected: a typo such as ``scpoe`` would
otherwise fall back to a default without anyone noticing. A JSON ``null`` counts as
an absent key. Every error is an ``InvalidConfigError`` whose ``field`` is the
dotted path of the offending key.

- R1 ``enabled`` (bool, default false) gates everything: a disabled config offers
  no tool. Its other settings are still validated, so a typo is caught when it is
  written, not on the day memory is switched on.
- R2, R20 ``scope.read`` / ``scope.write``: non-empty lists over session and agent,
  both ``["session"]`` by default. An agent without sessions has no session scope,
  so with memory enabled both must be ``["agent"]``.
- R3 ``kinds``: names; by default ``DEFAULT_KINDS``.
- R4 ``labels``: name -> number 5..18 and a description, numbers unique. Stored
  label values are tied to the number, so a later version keeps each label an
  earlier one declared, with its number, and no new label takes a number an
  earlier version gave another (``server.domain.config_versions``).
- R5 ``tools``: the write tools offered; ``search_memory`` is always offered
  when memory is enabled.
- R6 ``search``: ``mode``, ``max_results`` (1..100, default 5), ``min_score``
  (-1..1). The spec gives no default ``min_score``; ``DEFAULT_MIN_SCORE`` (0.3) is
  our choice: low enough that paraphrases still match with MiniLM-class
  embeddings, high enough to keep unrelated records out of meaning-only hits.
- R7, R30, R31 ``pinned.max_tokens`` is the pin budget; without it nothing can
  be pinned.
- R8 ``extraction``: ``prompt`` replaces the review instructions; ``every`` is
  ``"turn"`` or ``{"messages": N}``.
- R60, R64 ``harness.history.index``; an agent without sessions has no history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from server.domain.config_json import (
    NAME_RULE,
    fail,
    is_name,
    json_bool,
    json_choice,
    json_int,
    json_names,
    json_object,
    json_text,
    reject,
    show,
)
from server.domain.record_fields import MAX_LABEL_VALUE
from server.domain.text import check_text
from server.errors import BadInputError, NotAllowedError

Scope = Literal["session", "agent"]
SearchMode = Literal["hybrid", "lexical", "vector"]
HistoryIndex = Literal["messages", "messages_and_tools"]

DEFAULT_KINDS = ("guidance", "fact", "event", "reference")
SEARCH_TOOL = "search_memory"
WRITE_TOOLS = frozenset({"add_memory", "read_memory", "delete_memory"})
DEFAULT_MIN_SCORE = 0.3

_SCOPES: tuple[Scope, ...] = ("session", "agent")
_MODES: tuple[SearchMode, ...] = ("hybrid", "lexical", "vector")
_INDEXES: tuple[HistoryIndex, ...] = ("messages", "messages_and_tools")
_TOOLS = tuple(sorted(WRITE_TOOLS | {SEARCH_TOOL}))
_MEMORY_KEYS = frozenset(
    {"enabled", "scope", "kinds", "labels", "tools", "search", "pinned", "extraction"}
)


@dataclass(frozen=True, slots=True)
class Label:
    number: int
    description: str


@dataclass(frozen=True, slots=True)
class SearchConfig:
    mode: SearchMode = "hybrid"
    max_results: int = 5
    min_score: float = DEFAULT_MIN_SCORE


@dataclass(frozen=True, slots=True)
class ExtractionConfig:
    prompt: str | None = None
    every_messages: int | None = None  # None: review after every turn


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    enabled: bool
    read_scopes: frozenset[Scope] = frozenset({"session"})
    write_scopes: frozenset[Scope] = frozenset({"session"})
    kinds: tuple[str, ...] = DEFAULT_KINDS
    # Read-only; left out of the hash (a mappingproxy has none) but compared by ==.
    labels: Mapping[str, Label] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    tools: frozenset[str] = frozenset()  # what is offered: empty when disabled
    search: SearchConfig = SearchConfig()
    pinned_max_tokens: int | None = None
    extraction: ExtractionConfig = ExtractionConfig()

    def allows_tool(self, name: str) -> bool:
        return name in self.tools

    def check_kind(self, kind: str) -> str:
        """R3, R24: a record's kind must be declared; else NOT_ALLOWED."""
        if kind not in self.kinds:
            raise NotAllowedError(
                f"kind {kind!r} is not declared (harness.memory.kinds: {', '.join(self.kinds)})",
                field="kind",
            )
        return kind

    def check_labels(self, labels: object) -> dict[str, str]:
        """R4, R24: label values by name, each of a declared label (else NOT_ALLOWED), a
        string or an integer of 1 to ``MAX_LABEL_VALUE`` characters (else BAD_INPUT)."""
        if labels is None:
            return {}
        if not isinstance(labels, Mapping):
            raise BadInputError("labels must be an object of name: value", field="labels")
        out: dict[str, str] = {}
        for name, value in labels.items():
            if name not in self.labels:
                raise NotAllowedError(
                    f"label {name!r} is not declared in harness.memory.labels "
                    f"(declared: {', '.join(sorted(self.labels)) or 'none'})",
                    field="labels",
                )
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise BadInputError(f"label {name} must be a string or an integer", field="labels")
            out[name] = check_text(
                str(value), field="labels", maximum=MAX_LABEL_VALUE, name=f"label {name}"
            )
        return out


@dataclass(frozen=True, slots=True)
class HistoryConfig:
    index: HistoryIndex


@dataclass(frozen=True, slots=True)
class HarnessConfig:
    memory: MemoryConfig
    history: HistoryConfig | None


def parse_config(raw: Mapping[str, Any] | None, *, sessionless: bool) -> HarnessConfig:
    """Validate one version's config on its own (R1-R8, R60) and normalise it."""
    harness = json_object(json_object(raw, "", None).get("harness"), "harness", None)
    return HarnessConfig(
        memory=_memory(harness.get("memory"), sessionless=sessionless),
        history=_history(harness.get("history"), sessionless=sessionless),
    )


def memory_config_to_json(cfg: MemoryConfig) -> dict[str, Any]:
    """The effective memory config; ``parse_config`` reads it back to an equal config."""
    every, search, score = cfg.extraction.every_messages, cfg.search, cfg.search.min_score
    return {
        "enabled": cfg.enabled,
        "scope": {"read": _ordered(cfg.read_scopes), "write": _ordered(cfg.write_scopes)},
        "kinds": list(cfg.kinds),
        "labels": {
            name: {"number": label.number, "description": label.description}
            for name, label in sorted(cfg.labels.items(), key=lambda item: item[1].number)
        },
        "tools": sorted(cfg.tools),
        "search": {"mode": search.mode, "max_results": search.max_results, "min_score": score},
        "pinned": None if cfg.pinned_max_tokens is None else {"max_tokens": cfg.pinned_max_tokens},
        "extraction": {
            "prompt": cfg.extraction.prompt,
            "every": "turn" if every is None else {"messages": every},
        },
    }


def _memory(value: Any, *, sessionless: bool) -> MemoryConfig:
    path = "harness.memory"
    obj = json_object(value, path, _MEMORY_KEYS)
    enabled = json_bool(obj.get("enabled"), f"{path}.enabled", default=False)
    scope = json_object(obj.get("scope"), f"{path}.scope", frozenset({"read", "write"}))
    read = _scopes(scope.get("read"), f"{path}.scope.read")
    write = _scopes(scope.get("write"), f"{path}.scope.write")
    if enabled and sessionless and not read == write == {"agent"}:
        key, scopes = ("read", read) if read != {"agent"} else ("write", write)
        reject(
            f"{path}.scope.{key}",
            "an agent without sessions has no session scope, so it must set"
            f' {path}.scope.read and {path}.scope.write to ["agent"];'
            f" {path}.scope.{key} is {show(_ordered(scopes))}",
        )
    listed = json_names(obj.get("tools"), f"{path}.tools", _TOOLS, default=(), empty=True)
    return MemoryConfig(
        enabled=enabled,
        read_scopes=read,
        write_scopes=write,
        kinds=json_names(obj.get("kinds"), f"{path}.kinds", None, default=DEFAULT_KINDS),
        labels=_labels(obj.get("labels"), f"{path}.labels"),
        tools=frozenset({SEARCH_TOOL, *listed}) if enabled else frozenset(),
        search=_search(obj.get("search"), f"{path}.search"),
        pinned_max_tokens=_pinned(obj.get("pinned"), f"{path}.pinned"),
        extraction=_extraction(obj.get("extraction"), f"{path}.extraction"),
    )


def _scopes(value: Any, path: str) -> frozenset[Scope]:
    listed = json_names(value, path, _SCOPES, default=("session",))
    return frozenset(scope for scope in _SCOPES if scope in listed)


def _labels(value: Any, path: str) -> Mapping[str, Label]:
    owners: dict[int, str] = {}
    labels: dict[str, Label] = {}
    for name, spec in json_object(value, path, None).items():
        here = f"{path}.{name}"
        if not is_name(name):
            reject(here, f"label {show(name)} must be {NAME_RULE}")
        obj = json_object(spec, here, frozenset({"number", "description"}))
        number = json_int(obj.get("number"), f"{here}.number", 5, 18)
        if number in owners:
            reject(f"{here}.number", f"{here}.number {number} is taken by label {owners[number]}")
        owners[number] = name
        labels[name] = Label(number, json_text(obj.get("description"), f"{here}.description"))
    return MappingProxyType(labels)


def _search(value: Any, path: str) -> SearchConfig:
    obj = json_object(value, path, frozenset({"mode", "max_results", "min_score"}))
    score = obj.get("min_score")
    score = DEFAULT_MIN_SCORE if score is None else score
    # The range test also rejects NaN and the infinities.
    if isinstance(score, bool) or not isinstance(score, int | float) or not -1 <= score <= 1:
        fail(f"{path}.min_score", "a number from -1 to 1", score)
    return SearchConfig(
        mode=json_choice(obj.get("mode"), f"{path}.mode", _MODES, default="hybrid"),
        max_results=json_int(obj.get("max_results"), f"{path}.max_results", 1, 100, default=5),
        min_score=float(score),
    )


def _pinned(value: Any, path: str) -> int | None:
    if value is None:
        return None
    obj = json_object(value, path, frozenset({"max_tokens"}))
    return json_int(obj.get("max_tokens"), f"{path}.max_tokens", 1, 100_000)


def _extraction(value: Any, path: str) -> ExtractionConfig:
    obj = json_object(value, path, frozenset({"prompt", "every"}))
    prompt = obj.get("prompt")
    every = obj.get("every")
    every_messages = None
    if isinstance(every, Mapping):
        messages = json_object(every, f"{path}.every", frozenset({"messages"})).get("messages")
        every_messages = json_int(messages, f"{path}.every.messages", 1, None)
    elif every is not None and every != "turn":
        fail(f"{path}.every", '"turn" or {"messages": N} with N at least 1', every)
    return ExtractionConfig(
        prompt=None if prompt is None else json_text(prompt, f"{path}.prompt"),
        every_messages=every_messages,
    )


def _history(value: Any, *, sessionless: bool) -> HistoryConfig | None:
    path = "harness.history"
    if value is None:
        return None
    if sessionless:
        reject(path, f"{path} is not allowed: an agent without sessions has no history")
    obj = json_object(value, path, frozenset({"index"}))
    return HistoryConfig(index=json_choice(obj.get("index"), f"{path}.index", _INDEXES))


def _ordered(scopes: frozenset[Scope]) -> list[Scope]:
    return [scope for scope in _SCOPES if scope in scopes]
