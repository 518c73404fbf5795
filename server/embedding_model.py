"""Loading the embedding model: sentence-transformers offline, and its ONNX export.

The forward pass runs in ONNX Runtime by default: the sentence-transformers model
(transformer, mean pooling, normalisation) is exported once to an ONNX graph kept
in a cache directory (:func:`graph_path`) and run there. A model that is not a
mean-pooled transformer, or the ``torch`` backend, runs in PyTorch through
sentence-transformers.

Queries run on the exported graph quantized once more, at ``int8`` query precision
(the default), by ONNX Runtime's own dynamic quantization (:func:`_quantized`: int8
weights, one scale per output channel; activations quantized per pass), kept beside
it. It is made here, from the installed weights, the first time the model loads:
nothing is downloaded, and no install or build step has to know about it. A query
costs half the CPU (its forward pass a third); its vector stays within a cosine of 0.95 of the
float32 model's on the LoCoMo conversations, 0.993 on average (docs/scaling.md,
"The query embedding"). Importing this module imports PyTorch, sentence-transformers
and ONNX Runtime (seconds): :meth:`server.embedding.Embedder.load` imports it when
the model is first needed, after switching the hub off.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnxruntime as ort
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from server.models.memory import EMBEDDING_DIM

_log = logging.getLogger("agent_memory")
OPSET = 17  # the ONNX opset of the exported graph


@dataclass(frozen=True, slots=True)
class Loaded:
    """A loaded model: what :class:`server.embedding.Embedder` runs its passes on."""

    model: Any
    tokenizer: Any  # our own copy: PyTorch's encode uses the model's
    offsets: Any  # the fast tokenizer's own engine, untruncated (None: not a fast one)
    ids: Any  # the same engine truncated to the model's input size (None: not a fast one)
    onnx: Any  # the ONNX Runtime session on all threads (None: PyTorch runs the passes)
    onnx_one: Any  # the same graph on one thread: passes side by side
    query: Any  # the graph queries run on, on all threads (int8, or ``onnx`` itself)
    query_one: Any  # and on one thread
    workers: int


def load_model(
    name: str, *, backend: str, query_precision: str, cache_dir: Path, workers: int | None
) -> Loaded:
    """Load the model (blocking); ``workers``: passes at once (default: one per thread).
    ``query_precision`` is that of the ONNX graph's weights queries run on; PyTorch
    runs everything at float32."""
    model = SentenceTransformer(name, device="cpu")
    dim = (
        model.get_embedding_dimension()
        if hasattr(model, "get_embedding_dimension")
        else (model.get_sentence_embedding_dimension())
    )
    if dim != EMBEDDING_DIM:
        raise ValueError(
            f"embedding model {name} gives {dim} dimensions; the schema stores {EMBEDDING_DIM}"
        )
    onnx = onnx_one = query = query_one = None
    passes = workers or 1
    if backend == "onnx" and _mean_pooled(model):
        try:
            graph = _export(model, name, cache_dir)
            small = _quantized(graph) if query_precision == "int8" else graph
        except OSError as exc:  # no writable cache: the same vectors, from PyTorch
            _log.warning("embedding in PyTorch: no ONNX graph in %s (%s)", cache_dir, exc)
        else:
            threads = torch.get_num_threads()
            passes = max(1, workers or threads)
            onnx = _onnx_session(graph, threads)
            onnx_one = _onnx_session(graph, 1) if passes > 1 else onnx
            query, query_one = onnx, onnx_one
            if small != graph:
                query = _onnx_session(small, threads)
                query_one = _onnx_session(small, 1) if passes > 1 else query
    tokenizer = copy.deepcopy(model.tokenizer)
    # the fast tokenizer's own engine, untruncated for offsets (its wrapper spends more
    # on converting them than the engine on finding them) and truncated for the ids a
    # pass reads (the wrapper sets its truncation again on every call: half a query's
    # tokenizing)
    engine = getattr(tokenizer, "backend_tokenizer", None)
    offsets = ids = None
    if engine is not None:
        offsets = Tokenizer.from_str(engine.to_str())
        offsets.no_truncation()
        offsets.no_padding()
    if engine is not None and model.max_seq_length:
        ids = Tokenizer.from_str(engine.to_str())
        ids.enable_truncation(model.max_seq_length)
        ids.no_padding()
    return Loaded(model, tokenizer, offsets, ids, onnx, onnx_one, query, query_one, passes)


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


def _quantized(graph: Path) -> Path:
    """The exported graph with int8 weights, made on first use and kept beside it (under
    a key of the ONNX Runtime that quantizes it).

    ONNX Runtime's pre-processing first (its graph optimisations; the symbolic shape
    inference is skipped, as it cannot follow this graph's dynamic lengths), then its
    dynamic quantization with one scale per output channel: one scale per tensor loses
    too much (cosine to the float32 vectors 0.955 on average, 0.76 at worst on LoCoMo's
    dialog turns, against 0.993 and 0.97).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415
    from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: PLC0415

    key = hashlib.sha256(f"onnxruntime {ort.__version__}".encode()).hexdigest()[:8]
    target = graph.with_name(f"{graph.stem}.int8-{key}.onnx")
    if target.exists():
        return target
    prepared = graph.with_name(f"{graph.stem}.{os.getpid()}.prepared.tmp")
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    try:
        quant_pre_process(graph, prepared, skip_symbolic_shape=True)
        quantize_dynamic(prepared, partial, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(partial, target)  # whole or absent, as the export
    finally:
        prepared.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    for older in graph.parent.glob(f"{graph.stem}.int8-*.onnx"):
        if older != target:
            older.unlink(missing_ok=True)
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
    naming by the model directory's name alone), and their quantized copies."""
    patterns = {f"{_label(name)}-*.onnx", f"{Path(name).name or 'model'}-*.onnx"}
    return [
        p
        for pattern in patterns
        for p in cache_dir.glob(pattern)
        if p != current and not p.name.startswith(f"{current.stem}.")
    ]


def _onnx_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime session on ``threads`` threads; they sleep between passes rather
    than spin, leaving the cores to request handling and PostgreSQL."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
