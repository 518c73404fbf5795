"""``bench embedding``: what a query's embedding costs, at each query precision, and how
far the int8 graph's vectors are from the float32 model's.

Both models are built as the server builds them (``Embedder.from_settings``, the
cache off) and embed the LoCoMo questions one at a time through ``embed_query`` (the
server's path: tokenized in the caller, encoded on the worker thread, answered on the
event loop). CPU is the whole process's (``time.process_time``: ONNX Runtime's
threads included), per embedding, over at least 500 calls a round; the precisions
take turns, round after round, and each figure is the median of its rounds, so a
neighbour's load falls on both alike. Also timed, in the same rounds: the forward
pass alone, on one thread and on all, and a cache hit.

The vectors are compared on every LoCoMo question and dialog turn: the cosine between
the int8 and float32 vectors of each text (they are unit length), its mean, first
percentile and minimum.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import common
from bench.locomo import DATA, turns_of
from server.embedding import Embedder, Precision
from server.embedding_forward import onnx_pass

PRECISIONS: tuple[Precision, ...] = ("float32", "int8")


def _texts(quick: bool) -> tuple[list[str], list[str]]:
    """The LoCoMo questions (unique) and dialog turns."""
    questions: dict[str, None] = {}
    turns: list[str] = []
    for path in sorted(DATA.glob("*.json"))[: 1 if quick else None]:
        conv = json.loads(path.read_text())
        questions.update(dict.fromkeys(q["question"] for q in conv["qa"]))
        turns += [t["text"] for t in turns_of(conv)]
    return list(questions), turns


def _cpu_ms(run: Callable[[], int]) -> float:
    """CPU of the whole process per call of ``run`` (which returns its calls)."""
    started = time.process_time()
    calls = run()
    return (time.process_time() - started) * 1000 / calls


def _queries(model: Embedder, texts: list[str], tag: str) -> int:
    async def go() -> None:
        for text in texts:
            await model.embed_query(f"{text} {tag}")  # never seen before: no cache hit

    asyncio.run(go())
    return len(texts)


def _passes(model: Embedder, ids: list[list[int]], session: Any) -> int:
    for one in ids:
        onnx_pass(session, [one], 0)
    return len(ids)


def _hits(model: Embedder, text: str, calls: int) -> int:
    async def go() -> None:
        for _ in range(calls):
            await model.embed_query(text)

    asyncio.run(go())
    return calls


def run(quick: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    questions, turns = _texts(quick)
    calls = min(len(questions), 200 if quick else 500)
    rounds = 2 if quick else 5
    settings = common.settings()
    models = {
        p: Embedder.from_settings(
            settings.model_copy(update={"embedding_query_precision": p, "embedding_cache_size": 0})
        )
        for p in PRECISIONS
    }
    for model in models.values():
        model.load()
    cached = Embedder.from_settings(settings.model_copy(update={"embedding_cache_size": 16}))
    cached.load()
    asyncio.run(cached.embed_query("a cached query"))
    ids = models["int8"].input_ids(questions[:calls])
    cpu: dict[str, list[float]] = {}
    for r in range(rounds):
        texts = questions[:calls]
        for p, model in models.items():
            cpu.setdefault(f"{p} query", []).append(
                _cpu_ms(lambda m=model, t=texts, r=r: _queries(m, t, f"r{r}"))
            )
            cpu.setdefault(f"{p} pass, all threads", []).append(
                _cpu_ms(lambda m=model: _passes(m, ids, m._query))
            )
            cpu.setdefault(f"{p} pass, one thread", []).append(
                _cpu_ms(lambda m=model: _passes(m, ids, m._query_one))
            )
        cpu.setdefault("cache hit", []).append(
            _cpu_ms(lambda: _hits(cached, "a cached query", calls))
        )
    tokens = [len(i) for i in ids]
    median = {k: statistics.median(v) for k, v in cpu.items()}
    common.table(
        f"CPU per embedding, ms (median of {rounds} alternating rounds of {calls} LoCoMo "
        f"questions, {statistics.mean(tokens):.1f} tokens on average)",
        ["what", "CPU ms", "rounds"],
        [(k, v, " ".join(f"{x:.2f}" for x in cpu[k])) for k, v in median.items()],
    )

    texts = questions + turns
    full = np.array([v for v, _ in models["float32"].encode_now(texts)], dtype=np.float32)
    small = np.array([v for v, _ in models["int8"].encode_now(texts, query=True)], dtype=np.float32)
    cosine = (full * small).sum(axis=1)
    common.table(
        f"int8 against float32 vectors, {len(texts)} LoCoMo texts (cosine)",
        ["mean", "p1", "min"],
        [(float(cosine.mean()), float(np.percentile(cosine, 1)), float(cosine.min()))],
    )
    for model in (*models.values(), cached):
        model.close()
    query_ratio = median["int8 query"] / median["float32 query"]
    return {
        "model": Path(models["int8"].model_name).name,
        "calls_per_round": calls,
        "rounds": rounds,
        "mean_tokens": statistics.mean(tokens),
        "cpu_ms": median,
        "query_cpu_int8_over_float32": query_ratio,
        "pass_cpu_int8_over_float32": median["int8 pass, all threads"]
        / median["float32 pass, all threads"],
        "cosine_int8_float32": {
            "texts": len(texts),
            "mean": float(cosine.mean()),
            "p1": float(np.percentile(cosine, 1)),
            "min": float(cosine.min()),
        },
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
    }
