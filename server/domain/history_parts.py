"""Cutting a kept history event into parts (R62): a kept event longer than
``PART_TOKENS`` word pieces of the embedding model is cut into windows of at most
``PART_TOKENS`` tokens that overlap by about ``PART_OVERLAP`` tokens, cut at
whitespace where one is near, so each part fits the model's 256-token input (its
[CLS] and [SEP] included) and a sentence that straddles a cut is whole in one of
the two parts.

Plain Python over plain values: the tokens' character offsets come from the
model's tokenizer (:meth:`server.embedding.Embedder.token_offsets`), applied by
:mod:`server.services.history`.
"""

from __future__ import annotations

from collections.abc import Sequence

# The embedding model reads at most 256 word pieces, [CLS] and [SEP] included.
MODEL_MAX_TOKENS = 256
# A part's size in word pieces, leaving room under MODEL_MAX_TOKENS.
PART_TOKENS = 200
# Word pieces two neighbouring parts share, so a sentence cut by the window is
# whole in one of them.
PART_OVERLAP = 32
# How far back a cut may move to land on whitespace instead of inside a word.
CUT_SLACK = 24


def token_windows(
    word_starts: Sequence[bool],
    *,
    size: int = PART_TOKENS,
    overlap: int = PART_OVERLAP,
    slack: int = CUT_SLACK,
) -> list[tuple[int, int]]:
    """Token ranges ``[start, end)`` covering ``len(word_starts)`` tokens.

    ``word_starts[i]`` is true when token ``i`` begins a word (whitespace before
    it). Each range holds at most ``size`` tokens; each range after the first
    starts about ``overlap`` tokens before the previous one ends. Cuts move back
    by at most ``slack`` tokens to fall where a word begins; a word longer than
    that is cut inside. Always progresses, so the ranges are finite.
    """
    if size < 1 or not 0 <= overlap < size or slack < 0:
        raise ValueError("need size >= 1, 0 <= overlap < size, slack >= 0")
    n = len(word_starts)
    if n <= size:
        return [(0, n)] if n else []
    slack = min(slack, (size - overlap) // 2)
    windows: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + size, n)
        if end < n:
            end = _snap(word_starts, end, floor=max(end - slack, start + 1))
        windows.append((start, end))
        if end >= n:
            return windows
        # the next part starts where a word begins, moving forward so that the
        # overlap never exceeds what was asked
        at = end - overlap
        nxt = next((i for i in range(at, min(at + slack, end) + 1) if word_starts[i]), at)
        start = max(nxt, start + 1)


def _snap(word_starts: Sequence[bool], at: int, *, floor: int) -> int:
    """The nearest index ``<= at`` and ``>= floor`` where a word begins, else ``at``."""
    i = at
    while i >= floor:
        if word_starts[i]:
            return i
        i -= 1
    return at


def fits_one_part(text: str, size: int = PART_TOKENS) -> bool:
    """Whether ``text`` is one part whatever its tokens: it has fewer UTF-8 bytes than a
    part has tokens. A subword tokenizer's every piece covers at least one byte of the
    text (WordPiece a character, byte-level BPE a byte), but for one leading piece of
    none (SentencePiece's word-start mark); special tokens are not counted. Such a text
    needs no tokenizer pass: :func:`split_text` would give ``[text.strip()]``."""
    return len(text.encode("utf-8", "surrogatepass")) < size


def split_text(text: str, offsets: Sequence[tuple[int, int]], **kw: int) -> list[str]:
    """``text`` cut into parts by :func:`token_windows` over its tokens' character offsets."""
    if not offsets:
        return [text.strip()] if text.strip() else []
    starts = [i == 0 or offsets[i][0] > offsets[i - 1][1] for i in range(len(offsets))]
    windows = token_windows(starts, **kw)
    if len(windows) == 1:
        return [text.strip()]
    return [text[offsets[s][0] : offsets[e - 1][1]] for s, e in windows]


__all__ = [
    "CUT_SLACK",
    "MODEL_MAX_TOKENS",
    "PART_OVERLAP",
    "PART_TOKENS",
    "fits_one_part",
    "split_text",
    "token_windows",
]
