"""One forward pass of the embedding model over a batch of texts, in ONNX Runtime or
in PyTorch: each text's vector (unit length) and the tokens the model read of it."""

from __future__ import annotations

from typing import Any

import numpy as np

from server.embedding_packing import Vector


def onnx_pass(session: Any, ids: list[list[int]], pad_id: int) -> list[tuple[Vector, int]]:
    """A pass in ONNX Runtime over tokenized texts, padded to the longest; the tokens
    read are each text's own."""
    width = max(map(len, ids))
    inputs = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, seq in enumerate(ids):
        inputs[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    (vectors,) = session.run(None, {"input_ids": inputs, "attention_mask": mask})
    return [
        (np.asarray(vector, dtype=np.float32).tolist(), len(seq))
        for vector, seq in zip(vectors, ids, strict=True)
    ]


def torch_pass(
    model: Any, texts: list[str], batch_size: int, counts: list[int]
) -> list[tuple[Vector, int]]:
    """The sentence-transformers model on ``texts``, with the tokens it reads of each
    (``counts``)."""
    vectors = model.encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return [
        (np.asarray(v, dtype=np.float32).tolist(), n) for v, n in zip(vectors, counts, strict=True)
    ]
