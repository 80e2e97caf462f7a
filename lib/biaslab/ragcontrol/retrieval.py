"""The ``ragcontrol_retrieve`` stage (Kim et al. 2025, App. "Training", "Projecting", "Sampling", "Measuring Utility"):
for every task, the document each setting retrieves for each test question — the base embedder, its projections
and Boltzmann sampling, and every fine-tuned run × WiSE-FT merge weight — with the embedder bias, task accuracy
and TREC DL re-ranking utility of every setting (see :mod:`.evaluate` for the settings and measures).

Everything costly is done once: the base embedder encodes each task's corpus and the TREC DL candidates once (its
projection sweep only changes the query vectors), and each fine-tuned embedder encodes them once — a partial run
(``freeze_layers`` k) and its merges only through their top k layers, on the base's states of the frozen bottom,
computed once per text (:mod:`biaslab.frozen`; the same embeddings up to float summation order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import trec_dl as trec_dl_data
from ..runtime import progress
from . import control, finetune
from . import evaluate as ev


def utility_sets(raw_dir: str | Path, years: Sequence[str], max_queries: int, seed: int) -> dict[str, tuple]:
    """Per TREC DL year: (BM25 candidates, topics, qrels) restricted to a seeded sample of ``max_queries`` judged
    queries (0 = all judged queries)."""
    out = {}
    for y in years:
        cand, qrels = trec_dl_data.load_candidates(y, raw_dir), trec_dl_data.load_qrels(y, raw_dir)
        keep = ev.seeded_subset(trec_dl_data.judged_queries(cand, qrels), max_queries, seed)
        out[y] = (cand[cand["qid"].isin(keep)], trec_dl_data.load_topics(y, raw_dir), qrels[qrels["qid"].isin(keep)])
    return out


@dataclass
class Utility:
    """Mean nDCG@k of one encoder over the configured TREC DL years (its passages encoded once)."""

    benches: list[ev.Reranker]

    @classmethod
    def of(cls, encoder, sets: Mapping[str, tuple], k: int) -> Utility:
        return cls([ev.Reranker(encoder, c, t, q, k=k) for c, t, q in sets.values()])

    def ndcg(self, query_transform=None) -> float:
        return float(np.mean([b.ndcg(query_transform) for b in self.benches]))

    def per_query(self, years, query_transform=None) -> pd.DataFrame:
        """(year, qid, ndcg) of every judged query: the units of paired utility comparisons."""
        return pd.DataFrame([(y, q, v) for y, b in zip(years, self.benches, strict=True)
                             for q, v in b.ndcg_per_query(query_transform).items()], columns=["year", "qid", "ndcg"])


def _projector(direction: np.ndarray, alpha: float):
    return lambda q: control.project(q, direction, alpha)


def study(base_dir, *, tasks: Sequence[str], tasks_dir: Path, models_dir: Path, runs: Mapping, merges: Sequence[float],
          projection, sampling, utility_data: Mapping[str, tuple], utility_k: int, max_questions: int,
          max_seq_length: int, device: str, batch_size: int, seed: int):
    """Every setting of every task. ``base_dir``: the base embedder's folder; ``tasks_dir``: the data stage's
    ``tasks/<task>/`` folders; ``models_dir``: the trained runs; ``runs`` / ``merges``: ragcontrol.train's;
    ``projection`` / ``sampling``: those sections. Returns (retrieved rows, per-setting summary with utility and
    task accuracy, reader subsets {task: [qid]}, nDCG@k per judged query and setting)."""
    from ..embed import Encoder
    from ..frozen import FrozenBottom, shared_bottom_encoder
    from ..models import load_sentence_transformer

    def encoder(model, bottom: FrozenBottom | None = None) -> Encoder:
        model.max_seq_length = max_seq_length
        if bottom is not None and bottom.shares(model):
            return shared_bottom_encoder(bottom, model, batch_size=batch_size)
        return Encoder(model, device=device, batch_size=batch_size)

    base = encoder(load_sentence_transformer(base_dir, device))  # one base embedder for every task
    n_layers = base.n_layers - 1
    bottoms: dict[int, FrozenBottom] = {}  # per number of frozen layers: the base's states, shared by those runs

    def bottom_for(freeze_layers: int) -> FrozenBottom | None:
        """Partial runs (the last ``freeze_layers`` layers' MLPs train) and their merges keep the base's bottom
        n − k layers: their texts run only the top k layers on the base's states (:mod:`biaslab.frozen`)."""
        if not freeze_layers or freeze_layers >= n_layers:
            return None
        n_frozen = n_layers - int(freeze_layers)
        if n_frozen not in bottoms:
            bottoms[n_frozen] = FrozenBottom(base.model, n_frozen, batch_size=batch_size)
        return bottoms[n_frozen]

    base_util = Utility.of(base, utility_data, utility_k)  # computed once
    base_ndcg = base_util.ndcg()
    years = list(utility_data)
    base_per_query = base_util.per_query(years)
    rows, utility_rows, subsets, per_query = [], [], {}, []
    for task in tasks:
        test = pd.read_parquet(tasks_dir / task / "test_questions.parquet")
        corpus = pd.read_parquet(tasks_dir / task / "corpus.parquet")
        qids = test["qid"].tolist()
        subsets[task] = ev.seeded_subset(qids, max_questions, seed)
        qv, dv = base.encode(test["question"].tolist()), base.encode(corpus["text"].tolist(), show_progress=True)
        rows.append(ev.top1_rows(task, "base", "base", qids, qv, dv, corpus))
        utility_rows.append({"task": task, "method": "base", "setting": "base", "ndcg": base_ndcg})
        per_query.append(base_per_query.assign(task=task, method="base", setting="base"))
        # projection (base embedder, queries only)
        direction = base.model.encode([projection.words[task]], normalize_embeddings=False, convert_to_numpy=True)[0]
        rows.append(ev.projection_rows(task, qids, qv, dv, corpus, direction, projection.alphas))
        for a in progress(projection.alphas, desc=f"{task}: projection utility"):
            utility_rows.append({"task": task, "method": "projection", "setting": f"alpha={a:g}",
                                 "ndcg": base_util.ndcg(_projector(direction, a))})
            per_query.append(base_util.per_query(years, _projector(direction, a)).assign(
                task=task, method="projection", setting=f"alpha={a:g}"))
        # sampling (base embedder)
        rows.append(ev.sampling_rows(task, qids, qv, dv, corpus, sampling.top_n, sampling.taus, seed))
        # fine-tuned runs x WiSE-FT merge weights
        for run, spec in runs.items():
            if spec.task != task:
                continue
            bottom = bottom_for(spec.freeze_layers)
            for m, model in finetune.wise_models(base_dir, models_dir / run, merges, device=device):
                enc = encoder(model, bottom)
                setting = f"{run}@m={m:g}"
                rows.append(ev.top1_rows(task, "fine-tune", setting, qids, enc.encode(test["question"].tolist()),
                                         enc.encode(corpus["text"].tolist(), show_progress=True), corpus))
                util = Utility.of(enc, utility_data, utility_k)
                utility_rows.append({"task": task, "method": "fine-tune", "setting": setting, "ndcg": util.ndcg()})
                per_query.append(util.per_query(years).assign(task=task, method="fine-tune", setting=setting))
    retrieved = pd.concat(rows, ignore_index=True)
    summary = pd.concat([ev.summarise(retrieved[retrieved["task"] == t], subsets[t]) for t in tasks],
                        ignore_index=True)
    summary = summary.merge(pd.DataFrame(utility_rows), on=["task", "method", "setting"], how="left")
    summary["reader_subset"] = summary["task"].map({t: len(s) for t, s in subsets.items()})
    cols = ["task", "method", "setting", "year", "qid", "ndcg"]
    return retrieved, summary, subsets, pd.concat(per_query, ignore_index=True)[cols]


def subset_frame(subsets: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """The reader subsets as (task, qid) rows."""
    return pd.DataFrame([(t, q) for t, s in subsets.items() for q in s], columns=["task", "qid"])
