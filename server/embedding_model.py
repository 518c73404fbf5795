"""Loading the embedding model: sentence-transformers offline, and its ONNX export.

The forward pass runs in ONNX Runtime by default: the sentence-transformers model
(transformer, mean pooling, normalisation) is exported once to an ONNX graph kept
in a cache directory (:func:`graph_path`) and run there. A model that is not a
mean-pooled transformer, or the ``torch`` backend, runs in PyTorch through
sentence-transformers. Importing this module imports PyTorch, sentence-transformers
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
    onnx: Any  # the ONNX Runtime session on all threads (None: PyTorch runs the passes)
    onnx_one: Any  # the same graph on one thread: passes side by side
    workers: int


def load_model(name: str, *, backend: str, cache_dir: Path, workers: int | None) -> Loaded:
    """Load the model (blocking); ``workers``: passes at once (default: one per thread)."""
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
    onnx = onnx_one = None
    passes = workers or 1
    if backend == "onnx" and _mean_pooled(model):
        try:
            graph = _export(model, name, cache_dir)
        except OSError as exc:  # no writable cache: the same vectors, from PyTorch
            _log.warning("embedding in PyTorch: no ONNX graph in %s (%s)", cache_dir, exc)
        else:
            threads = torch.get_num_threads()
            passes = max(1, workers or threads)
            onnx = _onnx_session(graph, threads)
            onnx_one = _onnx_session(graph, 1) if passes > 1 else onnx
    tokenizer = copy.deepcopy(model.tokenizer)
    # the fast tokenizer's own engine, untruncated, for offsets: its wrapper spends
    # more on converting them than the engine on finding them
    engine = getattr(tokenizer, "backend_tokenizer", None)
    offsets = None
    if engine is not None:
        offsets = Tokenizer.from_str(engine.to_str())
        offsets.no_truncation()
        offsets.no_padding()
    return Loaded(model, tokenizer, offsets, onnx, onnx_one, passes)


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
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
