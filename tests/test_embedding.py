"""The embedder: offline model, off the event loop, batched, cached (DESIGN.md §3)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

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
        # the first request runs alone; everyone who queued meanwhile shares the next
        # passes: batches of batch_size, not one pass per request
        assert passes <= 2 + math.ceil(39 / model.batch_size) < 40, passes
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


class _Recording(Embedder):
    """The real embedder, noting the batches its worker hands the model."""

    def __init__(self, *, batch_size: int) -> None:
        super().__init__(batch_size=batch_size, cache_size=0)
        self.batches: list[list[str]] = []

    def encode_now(self, texts: list[str]) -> list[tuple[list[float], int]]:
        self.batches.append(list(texts))
        return super().encode_now(texts)


async def test_bulk_texts_share_passes_with_the_queued_texts_nearest_their_length() -> None:
    """Every pass takes the oldest queued text and the queued ones nearest its length,
    whichever request they came from, so a batch is padded little; each request still
    gets its own texts' vectors and tokens."""
    model = _Recording(batch_size=4)
    model.load()
    try:
        requests = [
            [("word " * (3 + (7 * i + 5 * j) % 40)) + f"r{i} t{j}" for j in range(3)]
            for i in range(5)
        ]
        got = await asyncio.gather(*(model.embed(texts, bulk=True) for texts in requests))
        arrival = [t for r in requests for t in r]  # everything was queued at once
        queued = list(arrival)
        assert sorted(t for b in model.batches for t in b) == sorted(arrival)
        for batch in model.batches:
            assert len(batch) == min(4, len(queued))
            oldest = queued[0]
            assert oldest in batch
            others = sorted(abs(len(t) - len(oldest)) for t in queued[1:])
            assert sorted(abs(len(t) - len(oldest)) for t in batch if t != oldest) == others[:3]
            queued = [t for t in queued if t not in batch]
        fifo = sum(4 * max(map(len, arrival[i : i + 4])) for i in range(0, len(arrival), 4))
        assert sum(len(b) * max(map(len, b)) for b in model.batches) < 0.9 * fifo
        for texts, result in zip(requests, got, strict=True):
            alone = model.encode_now(texts)
            assert result.tokens == sum(n for _, n in alone)
            for v, (w, _) in zip(result.vectors, alone, strict=True):
                assert _cosine(v, w) > 0.999
    finally:
        model.close()


async def test_a_query_waits_at_most_for_the_pass_running_when_it_came() -> None:
    """A query (or a memory being written) goes before bulk texts queued earlier: a
    committing turn's history does not hold up a search asked meanwhile."""
    model = _Recording(batch_size=8)
    model.load()
    try:
        done: list[str] = []
        long_texts = [("a long kept message " * 40) + str(i) for i in range(40)]

        async def commit() -> None:
            await model.embed(long_texts, bulk=True)
            done.append("turn")

        async def ask() -> None:
            while not model.batches:  # the turn's first pass is running
                await asyncio.sleep(0.001)
            await model.embed(["when did we meet?"])
            done.append("query")

        await asyncio.gather(commit(), ask())
        assert done == ["query", "turn"]
        assert len(model.batches) == 6
        assert model.batches[1][0] == "when did we meet?"
        # the pass is topped up only with texts that add no padding: none of these
        assert model.batches[1] == ["when did we meet?"]
    finally:
        model.close()


async def test_a_query_shares_its_pass_with_bulk_texts_no_longer_than_it() -> None:
    model = _Recording(batch_size=4)
    model.load()
    try:
        short = [f"ok {i}" for i in range(5)]
        long = [("a long kept message " * 20) + str(i) for i in range(2)]
        query = "what did the customer ask about the invoice?"
        await asyncio.gather(model.embed(long + short, bulk=True), model.embed_one(query))
        assert model.batches[0] == [query, *short[:3]]
        assert sorted(t for b in model.batches for t in b) == sorted([query, *long, *short])
    finally:
        model.close()


async def test_a_text_asked_twice_at_once_is_encoded_once() -> None:
    model = _Recording(batch_size=8)
    model.load()
    try:
        first, second = await asyncio.gather(
            model.embed(["the same text", "another"], bulk=True), model.embed_one("the same text")
        )
        assert first.vectors[0] == second[0]
        assert sorted(t for b in model.batches for t in b) == ["another", "the same text"]
    finally:
        model.close()


def test_token_offsets_are_the_models_word_pieces_untruncated(embedder: Embedder) -> None:
    """R62 cuts long events by these offsets: spans into the text, no special tokens."""
    text = "Kept history splits long events. " * 60
    (spans,) = embedder.token_offsets([text])
    assert len(spans) > 256  # never truncated
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert [text[a:b] for a, b in spans[:5]] == ["Kept", "history", "splits", "long", "events"]
    short = "the customer prefers email"
    (few,) = embedder.token_offsets([short])
    # what the model reads: the word pieces plus [CLS] and [SEP], at most 256 in all
    assert embedder.count_tokens([short, text]) == [len(few) + 2, 256]


def test_the_onnx_runtime_gives_the_models_own_vectors(embedder: Embedder) -> None:
    """The default backend runs the exported graph; its vectors and token counts are
    sentence-transformers' own, for short, long (truncated) and mixed batches."""
    assert embedder.runtime == "onnx"
    reference = Embedder(backend="torch", cache_size=0)
    reference.load()
    try:
        assert reference.runtime == "torch"
        texts = ["ok", "The customer prefers email.", "long " * 400, "Zürich café, 3 p.m."]
        for (got, tokens), (want, want_tokens) in zip(
            embedder.encode_now(texts), reference.encode_now(texts), strict=True
        ):
            assert tokens == want_tokens
            assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-5
        assert [n for _, n in embedder.encode_now(texts)] == reference.count_tokens(texts)
    finally:
        reference.close()


def test_the_exported_graph_is_kept_and_reused(tmp_path: Path) -> None:
    first = Embedder(cache_dir=tmp_path)
    first.load()
    (graph,) = tmp_path.glob("*.onnx")
    written = graph.stat().st_mtime_ns
    second = Embedder(cache_dir=tmp_path)
    second.load()
    try:
        assert [p.name for p in tmp_path.iterdir()] == [graph.name]  # no partial file left
        assert graph.stat().st_mtime_ns == written  # loaded, not exported again
        assert second.encode_now(["same"])[0][0] == first.encode_now(["same"])[0][0]
    finally:
        first.close()
        second.close()


def test_without_a_writable_cache_the_model_runs_in_pytorch(tmp_path: Path) -> None:
    """A server whose cache directory cannot be written still starts, on PyTorch."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    model = Embedder(cache_dir=blocker / "cache")
    model.load()
    try:
        assert model.runtime == "torch"
        ((vector, tokens),) = model.encode_now(["still embedded"])
        assert len(vector) == 384 and tokens > 2
    finally:
        model.close()
