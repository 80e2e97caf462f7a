"""``biaslab detect``'s reference index, kept on disk by model and corpus, so that a warm call takes about a second.

A cold call (first use of a retriever with a corpus) embeds the reference sentences with the pipeline's
:class:`~biaslab.embed.Encoder`, chooses the abstention floor on the validation paragraphs
(:func:`biaslab.intersect.detect.abstain_floor`), and saves both under ``<cache>/detect/<key>.npz``. The key is a
SHA-256 over the bytes of the retriever folder's files, of the corpus files the call reads and of the floor's
quantile, so a retrained model or a rebuilt corpus gets a new entry and a stale one is never read. A warm call loads
the entry and embeds only its own texts, with :class:`~biaslab.numpy_encoder.NumpyBert` where the model is a BERT
(no torch import), else with the Encoder. Not a stage dependency: no stage imports it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import atomic_open
from .intersect.detect import Detector, abstain_floor, validation_texts
from .paths import cache_dir


def digest(paths: Sequence[Path], extra: str = "") -> str:
    """SHA-256 over the files (a folder: every file under it, by relative name) and ``extra``."""
    h = hashlib.sha256(extra.encode())
    for path in map(Path, paths):
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            h.update(f"\x00{f.relative_to(path) if path.is_dir() else f.name}\x00".encode())
            with open(f, "rb") as fh:
                h.update(hashlib.file_digest(fh, "sha256").digest())
    return h.hexdigest()


def detector(folder: Path, reference: Path, *, device: str, batch_size: int, floor_from: tuple[Path, Path] | None,
             quantile: float | None) -> tuple[Detector, float | None]:
    """(detector, abstention floor or None) for the retriever ``folder`` and the ``reference`` parquet;
    ``floor_from``: the corpus's (splits, paragraphs) parquets when the floor is to be chosen at ``quantile``."""
    from .numpy_encoder import NumpyBert, supported

    floor_from = floor_from if quantile is not None else None
    key = digest([folder, reference, *(floor_from or ())], extra=f"quantile={quantile if floor_from else None}")
    path = cache_dir() / "detect" / f"{key}.npz"
    ref = pd.read_parquet(reference)
    if path.is_file():
        saved = np.load(path)
        floor = float(saved["floor"]) if floor_from else None
        if supported(folder) is None:
            encoder = NumpyBert(folder, int(saved["max_seq_length"]))
        else:
            from .embed import Encoder
            encoder = Encoder(folder, device=device, batch_size=batch_size)
        return Detector(encoder, ref, saved["vectors"]), floor
    from .embed import Encoder

    encoder = Encoder(folder, device=device, batch_size=batch_size)
    vectors = encoder.encode(ref["text"].tolist(), show_progress=True)
    det = Detector(encoder, ref, vectors)
    floor = None
    if floor_from:
        splits, paragraphs = (pd.read_parquet(p) for p in floor_from)
        floor = abstain_floor(det, validation_texts(splits, paragraphs), quantile)
    with atomic_open(path, "wb") as fh:
        np.savez(fh, vectors=vectors, floor=np.float64(np.nan if floor is None else floor),
                 max_seq_length=np.int64(encoder.model.max_seq_length))
    return det, floor
