"""From embedders to bias numbers (Kim et al. 2025): which document each setting retrieves for each test question,
the embedder bias of those documents, the reader's answers and the RAG bias, and retrieval utility.

Settings (one "embedder" each in the paper's plots):

* ``base`` — the base embedder, top-1 (the paper's ``rag_type top1``);
* ``fine-tune`` — every trained run × WiSE-FT merge weight, top-1;
* ``projection`` — the base embedder with projected queries, one setting per α (App. "Projecting");
* ``sampling`` — the base embedder's top-N with Boltzmann sampling, one setting per (N, τ) (App. "Sampling").
  The reader sees one seeded draw per question; the embedder bias is reported both for those draws and as the
  exact expectation under the sampling distribution.

Utility: nDCG@k of the embedder re-ranking the TREC DL BM25 top-100 (graded NIST judgments, ``ir_measures``)
— the offline stand-in for the paper's BEIR NDCG@1 (BEIR is not obtainable here; :func:`load_beir` reads BEIR's
format for use where it is) — and task accuracy: the top-1 document is one of the question's own released
documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import control

COLUMNS = ["task", "method", "setting", "qid", "doc_id", "bias1", "bias2", "p_bias1", "p_bias2", "answers_own"]


def seeded_subset(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """A seeded subset of ``n`` ids (all when ``n`` is 0 or not smaller than the set), in input order."""
    ids = list(ids)
    if not n or n >= len(ids):
        return ids
    keep = set(np.random.default_rng(seed).choice(len(ids), size=n, replace=False).tolist())
    return [q for i, q in enumerate(ids) if i in keep]


def _rows(task, method, setting, qids, doc_ids, corpus, p1=None, p2=None) -> pd.DataFrame:
    flags1 = corpus["bias1"].to_numpy()[doc_ids]
    flags2 = corpus["bias2"].to_numpy()[doc_ids]
    own = [q in set(qs) for q, qs in zip(qids, corpus["qids"].to_numpy()[doc_ids], strict=True)]
    return pd.DataFrame({"task": task, "method": method, "setting": setting, "qid": list(qids),
                         "doc_id": np.asarray(doc_ids, dtype=int), "bias1": flags1, "bias2": flags2,
                         "p_bias1": flags1.astype(float) if p1 is None else p1,
                         "p_bias2": flags2.astype(float) if p2 is None else p2, "answers_own": own})


def top1_rows(task: str, method: str, setting: str, qids, query_vecs, doc_vecs, corpus) -> pd.DataFrame:
    from ..index import DenseIndex

    _, ids = DenseIndex(doc_vecs).search(query_vecs, 1)
    return _rows(task, method, setting, qids, ids[:, 0], corpus)


def projection_rows(task, qids, query_vecs, doc_vecs, corpus, direction, alphas) -> pd.DataFrame:
    from ..index import DenseIndex

    index = DenseIndex(doc_vecs)
    parts = []
    for a in alphas:
        _, ids = index.search(control.project(query_vecs, direction, a), 1)
        parts.append(_rows(task, "projection", f"alpha={a:g}", qids, ids[:, 0], corpus))
    return pd.concat(parts, ignore_index=True)


def sampling_rows(task, qids, query_vecs, doc_vecs, corpus, top_n, taus, seed: int) -> pd.DataFrame:
    from ..index import DenseIndex

    scores, ids = DenseIndex(doc_vecs).search(query_vecs, max(top_n))
    f1 = corpus["bias1"].to_numpy()[ids].astype(float)
    f2 = corpus["bias2"].to_numpy()[ids].astype(float)
    parts = []
    for n in top_n:
        for k, tau in enumerate(taus):
            probs = control.boltzmann(scores[:, :n], tau)
            draw = control.sample(probs, seed=seed + 1000 * n + k)
            parts.append(_rows(task, "sampling", f"N={n},tau={tau:g}", qids, ids[np.arange(len(ids)), draw], corpus,
                               p1=(probs * f1[:, :n]).sum(1), p2=(probs * f2[:, :n]).sum(1)))
    return pd.concat(parts, ignore_index=True)


def summarise(rows: pd.DataFrame, subset: Sequence[str] | None = None) -> pd.DataFrame:
    """Per (task, method, setting): embedder bias of the retrieved documents (all questions), its expectation
    (sampling), the same on the reader subset, and task accuracy."""
    def agg(g: pd.DataFrame) -> pd.Series:
        sub = g[g["qid"].isin(subset)] if subset is not None else g
        return pd.Series({
            "n_questions": len(g),
            "embedder_bias": control.bias_percent(g["bias1"], g["bias2"]),
            "embedder_bias_expected": control.bias_percent(g["p_bias1"], g["p_bias2"]),
            "embedder_bias_subset": control.bias_percent(sub["bias1"], sub["bias2"]),
            "task_accuracy": float(g["answers_own"].mean()),
        })

    return rows.groupby(["task", "method", "setting"], sort=False).apply(agg, include_groups=False).reset_index()


# ------------------------------------------------------------------------------------------------ utility
class Reranker:
    """Re-ranking utility of one encoder on one judged candidate set (TREC DL's BM25 top-100, or a BEIR folder via
    :func:`load_beir`): passages and queries are encoded once, and :meth:`ndcg` scores any number of query maps
    (the projection sweep changes only the queries) with ``ir_measures``' nDCG@k over the judged queries."""

    def __init__(self, encoder, candidates: pd.DataFrame, topics: pd.DataFrame, qrels: pd.DataFrame, k: int):
        judged = set(qrels["qid"])
        cand = candidates[candidates["qid"].isin(judged)]
        if cand.empty:
            raise ValueError("no candidate list has judgments")
        qtext = topics.set_index("qid")["query"]
        qids = sorted(cand["qid"].unique(), key=lambda q: (len(q), q))
        self.k = k
        self.qv = encoder.encode([qtext[q] for q in qids])
        dv = encoder.encode(cand["text"].tolist(), show_progress=True)
        self.dv = dv / np.linalg.norm(dv, axis=1, keepdims=True)
        self.rows = cand["qid"].map({q: i for i, q in enumerate(qids)}).to_numpy()
        self.run_ids = (cand["qid"].to_numpy(), cand["docid"].to_numpy())
        self.qrels = qrels.rename(columns={"qid": "query_id", "docid": "doc_id"})[["query_id", "doc_id", "relevance"]]

    def _run(self, query_transform) -> pd.DataFrame:
        qv = self.qv if query_transform is None else query_transform(self.qv)
        qv = qv / np.linalg.norm(qv, axis=1, keepdims=True)
        score = np.einsum("nd,nd->n", self.dv, qv[self.rows])
        return pd.DataFrame({"query_id": self.run_ids[0], "doc_id": self.run_ids[1], "score": score})

    def ndcg(self, query_transform: Callable[[np.ndarray], np.ndarray] | None = None) -> float:
        """nDCG@k of ranking each query's candidates by cosine similarity; ``query_transform`` maps the query
        vectors (e.g. a projection) first."""
        import ir_measures
        from ir_measures import nDCG

        return float(ir_measures.calc_aggregate([nDCG @ self.k], self.qrels, self._run(query_transform))[nDCG @ self.k])

    def ndcg_per_query(self, query_transform: Callable[[np.ndarray], np.ndarray] | None = None) -> dict[str, float]:
        """{query id: nDCG@k} — the units of a paired comparison between two embedders or query maps."""
        import ir_measures
        from ir_measures import nDCG

        return {m.query_id: float(m.value)
                for m in ir_measures.iter_calc([nDCG @ self.k], self.qrels, self._run(query_transform))}


def rerank_ndcg(encoder, candidates: pd.DataFrame, topics: pd.DataFrame, qrels: pd.DataFrame, k: int,
                query_transform: Callable[[np.ndarray], np.ndarray] | None = None) -> float:
    """nDCG@k of one encoder (and optional query map) re-ranking ``candidates``; see :class:`Reranker`, which
    encodes once for several query maps."""
    return Reranker(encoder, candidates, topics, qrels, k).ndcg(query_transform)


def load_beir(folder: str | Path, split: str = "test") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A BEIR data set folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) as (corpus: docid,
    text; topics: qid, query; qrels: qid, docid, relevance) — for :func:`rerank_ndcg`-style evaluation where
    BEIR is available (it is not offline here). The title is prepended to the text, as BEIR's evaluation does."""
    folder = Path(folder)
    for f in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / f).is_file():
            raise FileNotFoundError(f"{folder / f} not found: a BEIR folder has corpus.jsonl, queries.jsonl and "
                                    f"qrels/{split}.tsv")
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    corpus = pd.DataFrame({"docid": [str(d["_id"]) for d in docs],
                           "text": [(d.get("title", "") + " " + d.get("text", "")).strip() for d in docs]})
    qs = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]
    topics = pd.DataFrame({"qid": [str(q["_id"]) for q in qs], "query": [q["text"] for q in qs]})
    qrels = pd.read_csv(folder / f"qrels/{split}.tsv", sep="\t", dtype={"query-id": str, "corpus-id": str})
    qrels = qrels.rename(columns={"query-id": "qid", "corpus-id": "docid", "score": "relevance"})
    return corpus, topics, qrels[["qid", "docid", "relevance"]]


# ------------------------------------------------------------------------------------------------- RAG bias
def rag_bias(sides: Sequence[str | None], groups: tuple[str, str]) -> tuple[float, int]:
    """(bias1 − bias2 in percent over the answered questions, number answered). ``sides`` holds each answer's
    side (a group name), None for an answer on neither side."""
    s = np.array([x if x is not None else "" for x in sides], dtype=object)
    n = len(s)
    if n == 0:
        return float("nan"), 0
    return control.bias_percent(s == groups[0], s == groups[1]), int(((s == groups[0]) | (s == groups[1])).sum())
