"""Multi-label detection metrics (intersect §5.1): Jaccard similarity and exact match of label sets.

``unbiased`` counts as a label, so predicting {"unbiased"} for an unbiased paragraph scores 1.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def jaccard(true: Iterable[str], pred: Iterable[str]) -> float:
    """|T ∩ P| / |T ∪ P| (1.0 when both are empty)."""
    t, p = set(true), set(pred)
    union = t | p
    return 1.0 if not union else len(t & p) / len(union)


def exact_match(true: Iterable[str], pred: Iterable[str]) -> float:
    return float(set(true) == set(pred))


def mean_scores(trues: list[Iterable[str]], preds: list[Iterable[str]]) -> dict[str, float]:
    if len(trues) != len(preds):
        raise ValueError(f"{len(trues)} gold label sets but {len(preds)} predictions")
    return {"jaccard": float(np.mean([jaccard(t, p) for t, p in zip(trues, preds, strict=True)])),
            "exact_match": float(np.mean([exact_match(t, p) for t, p in zip(trues, preds, strict=True)])),
            "n": len(trues)}
