"""The embedding store: each text is embedded once per model, its vector kept on disk.

The key is (model fingerprint, text). The fingerprint (:func:`biaslab.embed.fingerprint`) hashes the model's weights
and the settings that change its output, so a fine-tuned checkpoint never reuses its base model's vectors, while a
rerun with the same model costs nothing. The truncation length is in the key of the texts it cuts, not in the
fingerprint (:func:`cached`): a text that the model reads whole has one vector whatever ``max_seq_length`` it is
loaded with (the base encoder at 256 in ragfair's stages and at 128 in the bias cards share their BBQ and SEAT
vectors). Vectors live in one SQLite file per fingerprint under ``<cache>/embeddings/``; the store keeps the first
vector a text gets, which is why a text's vector must not depend on its batch (:mod:`biaslab.embed.batching`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..paths import cache_dir


def _text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _cut_key(text: str, length) -> bytes:
    return _text_key(f"{text}\x00max_seq_length={length}")


def cached(db: EmbeddingCache, model, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The stored vectors of ``texts`` for ``model`` (text -> vector) and the texts not stored. A vector depends on
    the weights and on the tokens the model reads, not on its ``max_seq_length`` setting (equal-length batches, no
    padding: module doc), so a text the model reads whole is stored under its own hash with its token count, and a
    hit is used whenever the count fits the model's length — the same weights loaded at another length (the base
    encoder at 256 in ragfair's stages and at 128 in the bias cards) share it — while a text that a length cuts is
    stored under its hash with that length. Only the misses are tokenized (:func:`store`)."""
    length = model.max_seq_length
    whole = [_text_key(t) for t in texts]  # each key hashed once: this runs on every encode call
    found = db.get(whole)
    out, rest = {}, []
    for t, k in zip(texts, whole, strict=True):
        hit = found.get(k)
        if hit is not None and length is not None and hit[0] <= length:
            out[t] = hit[1]
        else:
            rest.append(t)
    if rest:
        cut = [_cut_key(t, length) for t in rest]
        found = db.get(cut)
        out.update((t, found[k][1]) for t, k in zip(rest, cut, strict=True) if k in found)
    return out, [t for t in texts if t not in out]


def store(db: EmbeddingCache, model, texts: Sequence[str], vectors: np.ndarray, counts: np.ndarray) -> None:
    """Keep the vectors of ``texts`` (just encoded by ``model``; ``counts`` from :func:`read_lengths`) under the keys
    :func:`cached` looks for."""
    length = model.max_seq_length
    if length is None:  # no length of its own: nothing is shared across lengths
        keys = [_cut_key(t, None) for t in texts]
    else:
        keys = [_text_key(t) if c <= length else _cut_key(t, length) for t, c in zip(texts, counts, strict=True)]
    db.put(keys, counts, vectors)


class EmbeddingCache:
    """SQLite store of float32 vectors keyed by text hash, each with the token count it was computed from (see
    :func:`cached`), one file per model fingerprint."""

    def __init__(self, model_fp: str, root: Path | None = None, kind: str = ""):
        folder = (root or cache_dir()) / "embeddings"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{model_fp[:32]}{'-' + kind if kind else ''}.sqlite"
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (k BLOB PRIMARY KEY, n INTEGER NOT NULL, v BLOB NOT NULL)")

    def get(self, keys: list[bytes]) -> dict[bytes, tuple[int, np.ndarray]]:
        found: dict[bytes, tuple[int, np.ndarray]] = {}
        for i in range(0, len(keys), 900):  # SQLite's bound-parameter limit
            chunk = keys[i : i + 900]
            rows = self._db.execute(
                f"SELECT k, n, v FROM vec WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            found.update((k, (n, np.frombuffer(v, dtype=np.float32))) for k, n, v in rows)
        return found

    def put(self, keys: list[bytes], counts: Sequence[int], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                                 zip(keys, (int(c) for c in counts),
                                     (np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors),
                                     strict=True))

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0]

    def close(self) -> None:
        self._db.close()
