"""The embedder: offline model, off the event loop, batched, cached (DESIGN.md §3)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from server.embedding import Embedder, default_model_path
from server.embedding_model import graph_path
from server.embedding_packing import PASS_TOKENS
from server.embedding_packing import passes as _passes
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

    def __init__(self, *, batch_size: int, workers: int = 1) -> None:
        super().__init__(batch_size=batch_size, cache_size=0, workers=workers)
        self.batches: list[list[str]] = []
        self.spans: list[tuple[float, float]] = []  # when each pass started and ended

    def _encode_pass(self, batch: list[Any], *, alone: bool) -> list[tuple[list[float], int]]:
        self.batches.append([p.text for p in batch])
        start = time.perf_counter()
        try:
            return super()._encode_pass(batch, alone=alone)
        finally:
            self.spans.append((start, time.perf_counter()))


async def _queued_at_once(model: Embedder, *requests: Awaitable[Any]) -> list[Any]:
    """Run ``requests`` with all their texts queued before the worker takes its first
    pass (it is held busy until they are), as under load."""
    gate = threading.Event()
    for _ in range(model._executor._max_workers):
        model._executor.submit(gate.wait)
    tasks = [asyncio.ensure_future(r) for r in requests]
    await asyncio.sleep(0)  # each request has queued its texts
    gate.set()
    return await asyncio.gather(*tasks)


async def test_the_worker_starts_a_pass_without_waiting_for_the_event_loop() -> None:
    """The worker chooses each pass itself: a loop busy with other work (here, blocked
    outright) does not hold the model up between passes."""
    model = _Recording(batch_size=2)
    model.load()
    try:
        texts = [f"text number {i}" for i in range(6)]
        request = asyncio.ensure_future(model.embed(texts, bulk=True))
        await asyncio.sleep(0)  # queued; from here the loop is never free until done
        deadline = asyncio.get_running_loop().time() + 30
        while len(model.batches) < 3 and asyncio.get_running_loop().time() < deadline:
            threading.Event().wait(0.01)  # the loop thread is busy, not awaiting
        assert len(model.batches) == 3
        got = await request
        assert len(got.vectors) == 6
    finally:
        model.close()


async def test_bulk_texts_share_passes_with_the_queued_texts_nearest_their_length() -> None:
    """Every pass takes the oldest queued text and the queued ones nearest its length
    (in tokens), whichever request they came from, each only if the padding it adds
    costs less than a pass of its own; each request gets its own texts' vectors and
    tokens."""
    model = _Recording(batch_size=4)
    model.load()
    try:
        requests = [
            [("word " * (3 + (7 * i + 5 * j) % 40)) + f"r{i} t{j}" for j in range(3)]
            for i in range(5)
        ]
        got = await _queued_at_once(model, *(model.embed(texts, bulk=True) for texts in requests))
        arrival = [t for r in requests for t in r]  # everything was queued at once
        tokens = dict(zip(arrival, model.count_tokens(arrival), strict=True))
        queued = list(arrival)
        assert sorted(t for b in model.batches for t in b) == sorted(arrival)
        for batch in model.batches:
            oldest = queued[0]
            assert batch[0] == oldest
            assert 1 <= len(batch) <= 4
            assert all(abs(tokens[t] - tokens[oldest]) <= PASS_TOKENS for t in batch)
            # a queued text as near as the farthest one taken was taken too
            farthest = max(abs(tokens[t] - tokens[oldest]) for t in batch)
            nearer = [t for t in queued if abs(tokens[t] - tokens[oldest]) < farthest]
            assert len(batch) == 4 or set(nearer) <= set(batch)
            queued = [t for t in queued if t not in batch]
        # what the passes cost, in tokens: those they read, padding included, and
        # PASS_TOKENS a pass; less than passes of four in order of arrival
        cost = sum(PASS_TOKENS + len(b) * max(tokens[t] for t in b) for b in model.batches)
        fifo = sum(
            PASS_TOKENS + len(arrival[i : i + 4]) * max(tokens[t] for t in arrival[i : i + 4])
            for i in range(0, len(arrival), 4)
        )
        assert cost < fifo
        assert len(model.batches) < len(arrival)
        for texts, result in zip(requests, got, strict=True):
            alone = model.encode_now(texts)
            assert result.tokens == sum(n for _, n in alone)
            for v, (w, _) in zip(result.vectors, alone, strict=True):
                assert _cosine(v, w) > 0.999
    finally:
        model.close()


def test_a_text_joins_a_pass_when_its_padding_costs_less_than_a_pass_of_its_own() -> None:
    """Batch jobs cut texts in order of length: a text joins the pass before it unless
    it would pad that pass (or itself be padded) by more than ``PASS_TOKENS`` tokens."""
    step = PASS_TOKENS // 2  # padding a pass of two texts by this much is worth it
    lengths = [10, 10, 10 + step, 40, 40, 40, 40, 40, 40, 40 + step + 1, 90]
    got = _passes(lengths[::-1], 4)  # any order in; indexes into what was given
    cut = [sorted(lengths[::-1][i] for i in p) for p in got]
    assert cut == [[10, 10, 10 + step], [40, 40, 40, 40], [40, 40], [40 + step + 1], [90]]
    assert sorted(i for p in got for i in p) == list(range(len(lengths)))


async def test_passes_run_side_by_side_on_the_workers() -> None:
    """With two workers, two passes run at once, each on one thread; every text still
    gets its own vector."""
    model = _Recording(batch_size=4, workers=2)
    model.load()
    try:
        texts = [f"a kept message of about the same length, number {i}" for i in range(24)]
        got = await model.embed(texts, bulk=True)
        spans = sorted(model.spans)
        assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))
        alone = model.encode_now(texts)
        for v, (w, _) in zip(got.vectors, alone, strict=True):
            assert _cosine(v, w) > 0.9999
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
        await _queued_at_once(model, model.embed(long + short, bulk=True), model.embed_one(query))
        assert model.batches[0] == [query, *short[:3]]
        assert sorted(t for b in model.batches for t in b) == sorted([query, *long, *short])
    finally:
        model.close()


async def test_a_text_asked_twice_at_once_is_encoded_once() -> None:
    model = _Recording(batch_size=8)
    model.load()
    try:
        first, second = await _queued_at_once(
            model,
            model.embed(["the same text", "another"], bulk=True),
            model.embed_one("the same text"),
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
    # the spans are the model's tokenizer's own, accents, scripts and symbols included
    mixed = "Café naïve — 東京 🙂 don't re-split e-mail@x.com, ÆØÅ ﬁne " * 30
    (spans,) = embedder.token_offsets([mixed])
    tokenizer = embedder._model.tokenizer
    own = tokenizer(mixed, add_special_tokens=False, return_offsets_mapping=True)
    assert spans == [tuple(span) for span in own["offset_mapping"]]
    # and what a pass reads is the ids the model's tokenizer gives, truncated as it does
    texts = [short, text, mixed, "", "Zürich café, 3 p.m."]
    limit = embedder._model.max_seq_length
    assert embedder.input_ids(texts) == [
        list(ids) for ids in tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    ]


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


def _locomo_texts(every: int) -> list[str]:
    """Every ``every``-th question and dialog turn of the LoCoMo conversations (the dev
    data, ``shared/data/locomo`` beside the checkout or a folder holding it)."""
    root = Path(__file__).resolve().parents[1]
    found = [f / "shared/data/locomo" for f in root.parents if (f / "shared/data/locomo").is_dir()]
    if not found:
        pytest.skip(f"no shared/data/locomo beside {root}")
    texts: list[str] = []
    for path in sorted(found[0].glob("*.json")):
        conv = json.loads(path.read_text())
        texts += [q["question"] for q in conv["qa"]]
        n = 1
        while f"session_{n}" in conv:
            texts += [f"{t['speaker']}: {t['text']}" for t in conv[f"session_{n}"]]
            n += 1
    return texts[::every]


def test_a_querys_int8_vector_stays_near_the_models_own(embedder: Embedder) -> None:
    """A search's query runs on the int8 graph (the default): its vector of each text
    is within a cosine of 0.95 of the model's own, 0.985 on average, over LoCoMo's
    questions and turns (measured: 0.993 on average, 0.970 at worst; with one scale
    per weight tensor 0.955 and 0.76)."""
    assert (embedder.query_precision, embedder.runtime) == ("int8", "onnx")
    texts = _locomo_texts(every=12)
    assert len(texts) > 300
    cosines = [
        _cosine(a, b)
        for (a, _), (b, _) in zip(
            embedder.encode_now(texts, query=True), embedder.encode_now(texts), strict=True
        )
    ]
    assert min(cosines) >= 0.95, min(cosines)
    assert sum(cosines) / len(cosines) >= 0.985
    assert max(cosines) < 0.99999  # not the same graph


async def test_each_query_goes_first_and_alone_whatever_is_queued() -> None:
    """int8 activations share one scale per pass: a query beside other texts would move
    with them. Queries queued with bulk texts and with each other each run in a pass of
    their own, before the bulk texts, and get the vector they get alone."""
    model = _Recording(batch_size=8)
    model.load()
    try:
        queries = [f"where did the parcel {i} go?" for i in range(4)]
        bulk = [f"kept message {i} about the parcel and the depot" for i in range(8)]
        got = await _queued_at_once(
            model, model.embed(bulk, bulk=True), *(model.embed_query(q) for q in queries)
        )
        assert model.batches[:4] == [[q] for q in queries]
        assert sorted(t for b in model.batches[4:] for t in b) == sorted(bulk)
        alone = model.encode_now(queries, query=True)
        assert [v for v, _ in got[1:]] == [v for v, _ in alone]
        # a stored text's vector is the model's own: not the query graph's
        stored = model.encode_now(bulk)
        assert all(_cosine(v, w) > 0.9999 for v, (w, _) in zip(got[0].vectors, stored, strict=True))
    finally:
        model.close()


def test_the_exported_graph_is_kept_and_reused(tmp_path: Path) -> None:
    """One export per model: an earlier one (another PyTorch, the older naming) is
    replaced, and the export is loaded again rather than redone."""
    label = graph_path(default_model_path(), tmp_path, torch_version="0").name.split("-")[0]
    (tmp_path / f"{label}-0123456789abcdef.onnx").write_bytes(b"an older export")
    (tmp_path / "model-fedcba9876543210.onnx").write_bytes(b"the older naming")
    first = Embedder(cache_dir=tmp_path)
    first.load()
    # the graph and its int8 copy (for queries), made from it at first load
    graph, small = sorted(tmp_path.glob("*.onnx"), key=lambda p: len(p.name))
    assert small.name.startswith(f"{graph.stem}.int8-")
    written = graph.stat().st_mtime_ns, small.stat().st_mtime_ns
    second = Embedder(cache_dir=tmp_path)
    second.load()
    try:
        # no partial file left
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([graph.name, small.name])
        # loaded, not exported or quantized again
        assert (graph.stat().st_mtime_ns, small.stat().st_mtime_ns) == written
        assert second.encode_now(["same"])[0][0] == first.encode_now(["same"])[0][0]
    finally:
        first.close()
        second.close()


def test_the_export_is_keyed_by_the_model_not_where_it_is_installed(tmp_path: Path) -> None:
    """The same model installed in another checkout's environment (other path, other
    file times) finds the same export; other weights get another one."""
    import shutil

    import torch

    original = Path(default_model_path())
    copy = tmp_path / "elsewhere" / original.parent.name / original.name
    shutil.copytree(original, copy)  # new modification times
    cache = tmp_path / "cache"
    here = graph_path(str(original), cache, torch_version=torch.__version__)
    assert graph_path(str(copy), cache, torch_version=torch.__version__) == here
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")
    assert graph_path(str(copy), cache, torch_version=torch.__version__) != here
    assert graph_path(str(original), cache, torch_version="0.0") != here


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


async def test_the_first_embed_loads_the_model_off_the_event_loop() -> None:
    """An embedder used before it was loaded loads in its worker thread: the loop keeps
    running meanwhile, and the vectors are the loaded model's."""
    model = Embedder(cache_size=0)
    loop = asyncio.get_running_loop()
    gaps: list[float] = []

    async def ticker() -> None:
        last = loop.time()
        while True:
            await asyncio.sleep(0.001)
            gaps.append(loop.time() - last)
            last = loop.time()

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = loop.time()
    try:
        got = await model.embed(["loaded on first use"])
    finally:
        task.cancel()
        model.close()
    took = loop.time() - started
    assert model.loaded and len(got.vectors[0]) == EMBEDDING_DIM
    assert max(gaps) < took / 2, (max(gaps), took)  # the loop was never held for the load
