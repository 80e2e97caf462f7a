"""fairrank's offline data: training pairs, the re-ranking lists, the query sets (what replaces what, §4.2).

The paper trains on 3M MS MARCO pairs and evaluates on MS MARCO dev queries (1,765 gender-neutral, 215 socially
sensitive); the collection is not here. Offline, from real data, in folds of the two TREC DL passage years
(``fairrank.data.folds``, :func:`build_folds`; default: train on DL20 and re-rank DL19, train on DL19 and re-rank
DL20):

* **training** — the judged passages of the training year's BM25 top-100 lists (NIST grades): every
  (relevant, non-relevant) pair of a query, relevant = grade ≥ ``relevance`` (2 on DL passages), non-relevant =
  judged grade 0 (``negatives: judged``) or, in addition, the unjudged candidates (``judged+unjudged``, MS MARCO's
  own convention of sampling negatives from BM25); a seeded sample of ``max_pairs`` (0 = all), spread evenly over
  queries; plus, optionally, the 100 MS MARCO training triples (``toy_triples``). The pointwise rankers read the
  same passages as (q, d, y) rows.
* **evaluation** — re-ranking each judged query of the evaluated year's BM25 top-100 by the rankers of its fold;
  every evaluated query pooled (``trecdl``: DL19's 43 and DL20's 54 by default; DL19's alone measure too little for
  the base ranker to clear its BM25 floor, docs/fairrank.md), and the 30 DL19 queries Rekabsaz et al. (2021)
  annotated as fairness-sensitive (``dl19_fair``, the analogue of the paper's 215 socially sensitive MS MARCO
  queries). The background of NFaiRR is each query's BM25 top-100.

Passages are identified by their MS MARCO pid; the toy triples carry text only and get ``toy:<hash>`` ids.
A fold never evaluates a query it trains on (DL19 and DL20 are disjoint; checked).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from .bias import document_terms

NEGATIVES = ("judged", "judged+unjudged")


def _toy_id(text: str) -> str:
    return "toy:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def judged_pairs(cand: pd.DataFrame, qrels: pd.DataFrame, topics: pd.DataFrame, *, relevance: int,
                 negatives: str) -> pd.DataFrame:
    """Every (query, relevant, non-relevant) pair among the candidates: ``qid, query, pos, neg``."""
    if negatives not in NEGATIVES:
        raise ValueError(f"fairrank.data.negatives must be one of {NEGATIVES}, got {negatives!r}")
    c = cand[["qid", "docid"]].merge(qrels, on=["qid", "docid"], how="left")
    pos = c[c["relevance"] >= relevance]
    neg = c[c["relevance"] == 0] if negatives == "judged" else c[~(c["relevance"] > 0)]
    pairs = pos[["qid", "docid"]].merge(neg[["qid", "docid"]], on="qid", suffixes=("_pos", "_neg"))
    pairs = pairs.rename(columns={"docid_pos": "pos", "docid_neg": "neg"})
    return pairs.merge(topics, on="qid")[["qid", "query", "pos", "neg"]]


def sample_pairs(pairs: pd.DataFrame, max_pairs: int, seed: int) -> pd.DataFrame:
    """A seeded sample of ``max_pairs`` pairs spread evenly over queries (round-robin over each query's shuffled
    pairs); 0 or more than available = all, shuffled."""
    rng = np.random.default_rng(seed)
    shuffled = pairs.iloc[rng.permutation(len(pairs))].reset_index(drop=True)
    if not max_pairs or max_pairs >= len(pairs):
        return shuffled
    turn = shuffled.groupby("qid").cumcount()
    order = np.lexsort((rng.random(len(shuffled)), turn.to_numpy()))
    return shuffled.iloc[order[:max_pairs]].reset_index(drop=True)


def toy_pairs(triples: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs ``qid, query, pos, neg``, passages ``docid, text``) of MS MARCO-style triples."""
    pairs = pd.DataFrame({"qid": [f"toy:q{i}" for i in range(len(triples))], "query": triples["query"].to_numpy(),
                          "pos": triples["positive"].map(_toy_id).to_numpy(),
                          "neg": triples["negative"].map(_toy_id).to_numpy()})
    docs = pd.DataFrame({"docid": [*triples["positive"].map(_toy_id), *triples["negative"].map(_toy_id)],
                         "text": [*triples["positive"], *triples["negative"]]}).drop_duplicates("docid")
    return pairs, docs


def biased_negatives(cand: pd.DataFrame, qrels: pd.DataFrame, topics: pd.DataFrame, terms: pd.DataFrame, qids,
                     *, relevance: int, negatives: str) -> pd.DataFrame:
    """The non-relevant candidates of the training queries ``qids`` that hold any definitional gender word
    (``qid, query, docid``): the pool LWS draws its bias-aware negatives from (``lws_pairs``)."""
    c = cand[cand["qid"].isin(set(qids))][["qid", "docid"]].merge(qrels, on=["qid", "docid"], how="left")
    neg = c[c["relevance"] == 0] if negatives == "judged" else c[~(c["relevance"] >= relevance)]
    gendered = set(terms.loc[(terms["def_f"] + terms["def_m"]) > 0, "docid"])
    neg = neg[neg["docid"].isin(gendered)]
    return neg.merge(topics, on="qid")[["qid", "query", "docid"]].reset_index(drop=True)


def pointwise_rows(pairs: pd.DataFrame) -> pd.DataFrame:
    """The distinct (q, d, y) rows of the pairs: ``qid, query, docid, label``."""
    pos = pairs[["qid", "query", "pos"]].rename(columns={"pos": "docid"}).assign(label=1)
    neg = pairs[["qid", "query", "neg"]].rename(columns={"neg": "docid"}).assign(label=0)
    return pd.concat([pos, neg]).drop_duplicates(["qid", "docid"]).reset_index(drop=True)


def eval_lists(cand: pd.DataFrame, topics: pd.DataFrame, qids: list[str]) -> pd.DataFrame:
    """The BM25 lists to re-rank: ``qid, query, docid, rank, bm25`` for ``qids``."""
    out = cand[cand["qid"].isin(set(qids))].merge(topics, on="qid")
    missing = sorted(set(qids) - set(out["qid"]))
    if missing:
        raise ValueError(f"evaluation queries {missing[:5]} have no BM25 candidates")
    return out[["qid", "query", "docid", "rank", "bm25"]].reset_index(drop=True)


class Folds(NamedTuple):
    """fairrank's data in folds (:func:`build_folds`); every frame but ``docs`` has a ``fold`` column, the evaluated
    year of the fold it belongs to."""

    pairs: pd.DataFrame  # fold, qid, query, pos, neg: training pairs (+ the toy triples in every fold)
    pool: pd.DataFrame  # fold, qid, query, docid: LWS's biased negatives of the training queries
    lists: pd.DataFrame  # fold, qid, query, docid, rank, bm25: the evaluated queries' BM25 top-100
    qrels: pd.DataFrame  # fold, qid, docid, relevance: of the evaluated queries
    docs: pd.DataFrame  # docid, text: every passage of both years (+ the toy triples)
    available: dict[str, dict]  # evaluated year -> its training year, the judged pairs and queries it samples from


def build_folds(cand: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame],
                topics: Mapping[str, pd.DataFrame], judged: Mapping[str, list[str]], folds, *, relevance: int,
                negatives: str, max_pairs: int, seed: int, toy: pd.DataFrame | None,
                wordlists: tuple[pd.DataFrame, pd.DataFrame],
                neutrality_threshold: float) -> tuple[Folds, pd.DataFrame]:
    """(the data of every ``(training year, evaluated year)`` fold, every passage's bias terms): per year, the BM25
    candidates ``cand``, ``qrels``, ``topics`` and ``judged`` queries (:mod:`biaslab.data.trec_dl`); ``toy`` the MS
    MARCO triples or None; ``wordlists`` the (gender-specific, representative) words of
    :func:`biaslab.fairrank.bias.document_terms`.
    Each fold samples its pairs with the same ``seed``, so a fold's data does not depend on the others."""
    toy_p, toy_d = toy_pairs(toy) if toy is not None else (None, None)
    docs = pd.concat([*(cand[y][["docid", "text"]] for y in cand), toy_d])
    docs = docs.drop_duplicates("docid").reset_index(drop=True)
    terms = document_terms(docs, *wordlists, neutrality_threshold=neutrality_threshold)
    parts: dict[str, list] = {k: [] for k in ("pairs", "pool", "lists", "qrels")}
    available = {}
    for train, evaluated in folds:
        every = judged_pairs(cand[train], qrels[train], topics[train], relevance=relevance, negatives=negatives)
        available[evaluated] = {"train": train, "pairs": len(every), "queries": cand[train]["qid"].nunique()}
        pairs = sample_pairs(every, max_pairs, seed)
        if toy_p is not None:
            pairs = pd.concat([pairs, toy_p], ignore_index=True)
        qids = judged[evaluated]
        check_disjoint(pairs["qid"], qids)
        parts["pairs"].append(pairs.assign(fold=evaluated))
        parts["pool"].append(biased_negatives(cand[train], qrels[train], topics[train], terms, pairs["qid"].unique(),
                                              relevance=relevance, negatives=negatives).assign(fold=evaluated))
        parts["lists"].append(eval_lists(cand[evaluated], topics[evaluated], qids).assign(fold=evaluated))
        parts["qrels"].append(qrels[evaluated][qrels[evaluated]["qid"].isin(set(qids))].assign(fold=evaluated))
    out = {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
    out = {k: v[["fold", *(c for c in v.columns if c != "fold")]] for k, v in out.items()}
    return Folds(**out, docs=docs, available=available), terms


def fold_sizes(F: Folds, fair_qids, rerank_depth: int) -> pd.DataFrame:
    """``sizes.csv``: what each fold trains on and re-ranks, against what the paper had (§4.2)."""
    rows = []
    for fold, pairs in F.pairs.groupby("fold", sort=False):
        real = pairs[~pairs["qid"].str.startswith("toy:")]
        a = F.available[fold]
        evaluated = F.lists.loc[F.lists["fold"] == fold, "qid"].nunique()
        rows += [
            {"fold": fold, "what": f"training pairs ({a['train'].upper()} judged, sampled)", "ours": len(real),
             "available": a["pairs"], "paper": "3,000,000 MS MARCO pairs"},
            {"fold": fold, "what": f"training queries ({a['train'].upper()})", "ours": real["qid"].nunique(),
             "available": a["queries"], "paper": "~200,000"},
            {"fold": fold, "what": "MS MARCO training triples", "ours": len(pairs) - len(real), "available": 100,
             "paper": "(part of the 3M pairs)"},
            {"fold": fold, "what": f"evaluation queries ({fold}, in trecdl)", "ours": evaluated,
             "available": evaluated, "paper": "1,765 gender-neutral"}]
    rows += [{"fold": "dl19", "what": "fairness-sensitive queries (dl19_fair)", "ours": len(fair_qids),
              "available": 30, "paper": "215 socially sensitive"},
             {"fold": "all", "what": "passages re-ranked per query", "ours": rerank_depth, "available": 100,
              "paper": "BM25 top-1000 (OpenMatch)"}]
    return pd.DataFrame(rows)


def fold_of(frame: pd.DataFrame, fold: str) -> pd.DataFrame:
    """The rows of ``frame`` (a :class:`Folds` frame) in ``fold`` (its evaluated year), without the column."""
    return frame[frame["fold"] == fold].drop(columns="fold").reset_index(drop=True)


def check_disjoint(train_qids, eval_qids) -> None:
    both = sorted(set(map(str, train_qids)) & set(map(str, eval_qids)))
    if both:
        raise ValueError(f"{len(both)} queries are both trained on and evaluated (first: {both[0]}): the training "
                         "and evaluation query sets must be disjoint")


def pair_key(qid: str, docid: str) -> str:
    """The key of a (query, passage) pair in the state bank."""
    return f"{qid}\x1f{docid}"


def query_key(qid: str) -> str:
    """The key of a query's own states in the bi-encoder's state bank."""
    return f"q\x1e{qid}"


def passage_key(docid: str) -> str:
    """The key of a passage's own states in the bi-encoder's state bank."""
    return f"p\x1e{docid}"


def lws_pairs(pairs: pd.DataFrame, candidates: pd.DataFrame, terms: pd.DataFrame, *, share: float,
              seed: int) -> pd.DataFrame:
    """LWS (Bigdeli et al., ECIR 2022, "a light-weight strategy for restraining gender biases"): the negatives of a
    share of each query's pairs are replaced by that query's most gender-biased non-relevant candidates, so the
    ranker learns to push biased passages down. Our reading of the method (the paper text is not here): bias =
    |log(f + 1) − log(m + 1)| of the definitional words (ARaB-TF's document magnitude); ``candidates``: ``qid,
    docid`` of the non-relevant passages a negative may be drawn from. ``share`` of the pairs whose query has such a
    candidate are chosen at random (``seed``), over all of them at once — not rounded per query, which would swap
    nothing for queries with one pair — and each query's chosen pairs take its candidates by decreasing bias, cycling
    (only passages with bias > 0)."""
    if not 0 <= share <= 1:
        raise ValueError(f"fairrank LWS share = {share}: must be in [0, 1]")
    t = terms.set_index("docid")
    bias = (np.log(t["def_f"] + 1.0) - np.log(t["def_m"] + 1.0)).abs()
    cand = candidates.assign(bias=bias.reindex(candidates["docid"]).to_numpy())
    cand = cand[cand["bias"] > 0].sort_values(["qid", "bias", "docid"], ascending=[True, False, True])
    pools = {q: g["docid"].tolist() for q, g in cand.groupby("qid")}
    out = pairs.copy()
    eligible = out.index[out["qid"].isin(pools.keys())].to_numpy()
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.permutation(eligible)[: round(share * len(eligible))])
    for qid, idx in out.loc[chosen].groupby("qid").groups.items():
        pool = pools[qid]
        for j, i in enumerate(idx):
            out.loc[i, "neg"] = pool[j % len(pool)]
    return out
