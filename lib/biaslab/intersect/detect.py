"""Bias detection by retrieval (intersect §5.1) and the ``biaslab detect`` command.

A paragraph is embedded, the top-k sentences of a reference corpus are retrieved (exact FAISS cosine), and
their labels are aggregated into a predicted label set. The paper does not define the aggregation; ours
(:func:`aggregate`, a parameter) is:

* ``share`` (default): a label's share is its count among the k retrieved sentences (or, with ``weighted``,
  its share of the summed similarities). If ``unbiased`` has the largest share, the prediction is
  {"unbiased"} alone (it is exclusive); otherwise every biased label whose share reaches ``threshold``,
  falling back to the most frequent biased label when none does.
* ``top``: the ``top_m`` most frequent labels (``unbiased`` exclusive as above).

Cross-domain detection queries the other corpus's reference set: the method is label-agnostic.

Abstention (the ``biaslab detect`` command only; the paper's evaluation scores its own paragraphs, each of which
resembles the reference corpus): a text whose best reference similarity is below a floor is answered
``unbiased`` with ``abstained`` set — it is unlike anything the reference corpus labels. The floor is a low quantile
(``intersect.detect.abstain_quantile``) of the validation paragraphs' best similarity (:func:`abstain_floor`), so
it is chosen on the validation split, with the encoder in use. With the frozen MiniLM and the Indic reference, 500
neutral WikiText-2 test sentences reach a best similarity of 0.19-0.42 (5th-95th percentile), the validation
paragraphs 0.54-0.82 (docs/intersect.md has the measurement).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..index import DenseIndex


def aggregate(labels: Sequence[str], sims: Sequence[float] | None = None, *, method: str,
              threshold: float, top_m: int, weighted: bool) -> list[str]:
    """Predicted label set from the labels (and similarities) of the retrieved sentences, best first."""
    if not len(labels):
        return ["unbiased"]
    weights = np.asarray(sims, float) if (weighted and sims is not None) else np.ones(len(labels))
    weights = np.clip(weights, 1e-9, None)
    share: Counter = Counter()
    for lab, w in zip(labels, weights, strict=True):
        share[lab] += w / weights.sum()
    ranked = sorted(share, key=lambda lab: (-share[lab], lab))
    if ranked[0] == "unbiased":
        return ["unbiased"]
    biased = [lab for lab in ranked if lab != "unbiased"]
    if method == "share":
        chosen = [lab for lab in biased if share[lab] >= threshold - 1e-12]
        return sorted(chosen or biased[:1])
    if method == "top":
        return sorted(biased[:top_m])
    raise ValueError(f"unknown aggregation {method!r}: use share or top")


@dataclass
class Detection:
    labels: list[str]
    evidence: list[tuple[str, str, float]]  # (sentence, label, cosine)
    abstained: bool = False  # below the similarity floor: "unbiased" because nothing in the reference resembles it


class Detector:
    """Retrieval-based detector: ``Detector(encoder, reference).detect(texts, k)``. ``vectors``: the reference
    sentences' embeddings when already computed (``biaslab detect``'s saved index), else ``encoder`` embeds them."""

    def __init__(self, encoder, reference: pd.DataFrame, vectors: np.ndarray | None = None):
        self.encoder = encoder
        self.reference = reference.reset_index(drop=True)
        if vectors is None:
            vectors = encoder.encode(self.reference["text"].tolist())
        elif len(vectors) != len(self.reference):
            raise ValueError(f"{len(vectors)} saved vectors for {len(self.reference)} reference sentences")
        self.index = DenseIndex(vectors)

    def retrieve(self, texts: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.index.search(self.encoder.encode(list(texts)), k)

    def detect(self, texts: Sequence[str], k: int, min_similarity: float | None = None, **agg) -> list[Detection]:
        """Labels and evidence per text; with ``min_similarity``, a text whose best similarity is below it abstains
        (module doc)."""
        sims, ids = self.retrieve(texts, k)
        labels = self.reference["label"].to_numpy()
        text = self.reference["text"].to_numpy()
        out = []
        for row, s in zip(ids, sims, strict=True):
            evidence = [(str(text[i]), str(labels[i]), float(v)) for i, v in zip(row, s, strict=True)]
            if min_similarity is not None and float(s[0]) < min_similarity:
                out.append(Detection(["unbiased"], evidence, abstained=True))
            else:
                out.append(Detection(aggregate(labels[row].tolist(), s.tolist(), **agg), evidence))
        return out


def validation_texts(splits: pd.DataFrame, paragraphs: pd.DataFrame) -> list[str]:
    """The validation paragraphs of a corpus (``splits.parquet``: any subset's ``val``; ``paragraphs.parquet``), each
    once: what :func:`abstain_floor` is chosen on."""
    ids = splits.loc[splits["val"], "paragraph_id"].drop_duplicates()
    return paragraphs.set_index("paragraph_id").loc[ids, "text"].tolist()


def abstain_floor(detector: Detector, validation_texts: Sequence[str], quantile: float) -> float:
    """The similarity floor below which :meth:`Detector.detect` abstains: the ``quantile`` of the validation
    paragraphs' best reference similarity (so about that share of in-domain text would abstain)."""
    if not len(validation_texts):
        raise ValueError("no validation paragraphs to choose the abstention floor on")
    sims, _ = detector.retrieve(list(validation_texts), 1)
    return float(np.quantile(np.asarray(sims)[:, 0], quantile))


def predictions_over_k(labels_topk: np.ndarray, sims_topk: np.ndarray, ks: Sequence[int], **agg) -> dict:
    """{k: [predicted label set per query]} from one top-max(k) retrieval."""
    return {k: [aggregate(lab[:k].tolist(), s[:k].tolist(), **agg) for lab, s in zip(labels_topk, sims_topk,
                                                                                     strict=True)]
            for k in ks}


def detect_texts(texts: Sequence[str], encoder, reference: pd.DataFrame, k: int, **agg) -> list[Detection]:
    """One call: ``encoder`` an :class:`~biaslab.embed.Encoder` of a trained retriever (or any bi-encoder);
    ``reference`` a frame with ``text`` and ``label``; ``agg`` the aggregation of :func:`aggregate`. Returns labels
    plus the top-k evidence per text."""
    return Detector(encoder, reference).detect(texts, k=k, **agg)
