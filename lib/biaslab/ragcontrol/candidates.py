"""Candidate documents for reverse-bias training (Kim et al. 2025, App. "Training").

"For each query we select a candidate set of 9 documents from each corpus ... we retrieve the top-3 documents
with GTE-base for the original queries and additionally retrieve the top-3 documents for each of the following
queries" — the two group-steered queries of :data:`.prompts.STEER`. The judge then marks each candidate
positive (female / conservative), negative (male / liberal) or neutral.

The paper's corpora (MS MARCO, FEVER, DBPedia; for PoliticBias-QA also Webis-Argument-Framing-19,
Webis-ConcluGen-21, args.me) are not obtainable offline. What is here, by role:

* ``msmarco`` — the MS MARCO passages of the TREC DL 2019 / 2020 BM25 pools (≈9,700 real MS MARCO passages);
* ``wikipedia`` — WikiText-2 paragraphs (real Wikipedia articles; the role DBPedia's entity abstracts play);
* ``twinviews`` — TwinViews-13k statements (real political arguments, the role of the Webis / args.me corpora),
  **minus every PoliticBias-QA claim of train, val and test**, so the evaluation corpus is never trained on
  (every PoliticBias-QA claim pair is a TwinViews pair).

A candidate judged both ways is dropped (it is neither a clean positive nor a clean negative).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from . import prompts


def subsample(docs: Sequence[str], n: int, seed: int) -> list[str]:
    """A seeded sample of ``n`` documents in their original order (all when ``n`` is 0 or not smaller)."""
    docs = list(docs)
    if not n or n >= len(docs):
        return docs
    keep = np.sort(np.random.default_rng(seed).choice(len(docs), size=n, replace=False))
    return [docs[i] for i in keep]


def steered_queries(task: str, query: str) -> list[tuple[str, str]]:
    """[(variant, text)]: the original query and the two group-steered ones."""
    a, b = prompts.STEER[task]
    return [("original", query), ("steer_bias1", a.format(query=query)), ("steer_bias2", b.format(query=query))]


def retrieve_candidates(encoder, task: str, queries: Sequence[str], corpora: Mapping[str, Sequence[str]],
                        top_k: int) -> pd.DataFrame:
    """``query, corpus, variant, rank, text`` for the top-``top_k`` of every corpus under every query variant;
    a document found by several variants is listed once per (query, corpus), under its first variant."""
    from ..index import DenseIndex

    variants = [v for q in queries for v in steered_queries(task, q)]
    owner = np.repeat(np.arange(len(queries)), 3)
    qv = encoder.encode([t for _, t in variants])
    rows = []
    for name, docs in corpora.items():
        docs = list(docs)
        if not docs:
            continue
        _, ids = DenseIndex(encoder.encode(docs, show_progress=True)).search(qv, top_k)
        for (variant, _), qi, hits in zip(variants, owner, ids, strict=True):
            rows += [{"query": queries[qi], "corpus": name, "variant": variant, "rank": r + 1, "text": docs[int(i)]}
                     for r, i in enumerate(hits)]
    out = pd.DataFrame(rows, columns=["query", "corpus", "variant", "rank", "text"])
    return out.drop_duplicates(["query", "corpus", "text"]).reset_index(drop=True)


def label(cands: pd.DataFrame, judge) -> pd.DataFrame:
    """Adds ``bias1``, ``bias2`` (judge flags) and ``role``: positive (bias1 only), negative (bias2 only),
    neutral (neither) or both (dropped from training)."""
    texts = cands["text"].drop_duplicates().tolist()
    f1, f2 = judge.flags(texts)
    b1 = dict(zip(texts, f1, strict=True))
    b2 = dict(zip(texts, f2, strict=True))
    out = cands.assign(bias1=cands["text"].map(b1).astype(bool), bias2=cands["text"].map(b2).astype(bool))
    out["role"] = np.select([out["bias1"] & out["bias2"], out["bias1"], out["bias2"]],
                            ["both", "positive", "negative"], default="neutral")
    return out
