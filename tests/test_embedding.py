"""The embedder: offline model, off the event loop, batched, cached (DESIGN.md §3)."""

from __future__ import annotations

import asyncio
import math

import pytest

from server.embedding import Embedder
from server.models import EMBEDDING_DIM


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_are_normalised_and_mean_something(embedder: Embedder) -> None:
    got = await embedder.embed(
        [
            "The customer prefers email.",
            "Client likes to be contacted by e-mail.",
            "The volcano erupted in 1883.",
        ]
    )
    assert [len(v) for v in got.vectors] == [EMBEDDING_DIM] * 3
    assert all(math.isclose(_cosine(v, v), 1.0, abs_tol=1e-4) for v in got.vectors)
    near, far = _cosine(got.vectors[0], got.vectors[1]), _cosine(got.vectors[0], got.vectors[2])
    assert near > far + 0.3
    assert got.tokens > 10


async def test_concurrent_requests_share_forward_passes() -> None:
    model = Embedder(cache_size=0)
    model.load()
    try:
        before = model.forward_passes
        texts = [f"note number {i} about the account" for i in range(40)]
        results = await asyncio.gather(*(model.embed_one(t) for t in texts))
        assert len(results) == 40
        passes = model.forward_passes - before
        # the first request runs alone; everyone who queued meanwhile shares the next pass(es)
        assert passes <= 3, passes
    finally:
        model.close()


async def test_repeated_texts_come_from_the_cache(embedder: Embedder) -> None:
    text = "a sentence seen twice by the cache test"
    first, _ = await embedder.embed_one(text)
    before = embedder.forward_passes
    second, _ = await embedder.embed_one(text)
    assert embedder.forward_passes == before
    assert first == second


async def test_encoding_runs_off_the_event_loop(embedder: Embedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    long_texts = [("word " * 200) + str(i) for i in range(64)]
    await embedder.embed(long_texts)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ticks > 5  # the loop kept running while the model worked


def test_a_missing_model_fails_at_load_without_downloading() -> None:
    model = Embedder("/nonexistent/model/path")
    with pytest.raises(OSError):
        model.load()
