"""fairrank's offline data: training pairs, the re-ranking lists, the query sets (what replaces what, §4.2).

The paper trains on 3M MS MARCO pairs and evaluates on MS MARCO dev queries (1,765 gender-neutral, 215 socially
sensitive); the collection is not here. Offline, from real data:

* **training** — the judged passages of TREC DL20's BM25 top-100 lists (54 queries, NIST grades): every
  (relevant, non-relevant) pair of a query, relevant = grade ≥ ``relevance`` (2 on DL passages), non-relevant =
  judged grade 0 (``negatives: judged``) or, in addition, the unjudged candidates (``judged+unjudged``, MS MARCO's
  own convention of sampling negatives from BM25); a seeded sample of ``max_pairs`` (0 = all), spread evenly over
  queries; plus, optionally, the 100 MS MARCO training triples (``toy_triples``). The pointwise rankers read the
  same passages as (q, d, y) rows.
* **evaluation** — re-ranking each TREC DL19 query's BM25 top-100 (43 queries; ``dl19``) and the 30 of them that
  Rekabsaz et al. (2021) annotated as fairness-sensitive (``dl19_fair``, the analogue of the paper's 215 socially
  sensitive MS MARCO queries). The background of NFaiRR is each query's BM25 top-100.

Passages are identified by their MS MARCO pid; the toy triples carry text only and get ``toy:<hash>`` ids.
A training query never appears among the evaluation queries (DL19 and DL20 are disjoint; checked).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

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
    (``qid, query, docid``): the pool LWS draws its bias-aware negatives from (``biaslab.fairrank.train.lws_pairs``)."""
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


def check_disjoint(train_qids, eval_qids) -> None:
    both = sorted(set(map(str, train_qids)) & set(map(str, eval_qids)))
    if both:
        raise ValueError(f"{len(both)} queries are both trained on and evaluated (first: {both[0]}): the training "
                         "and evaluation query sets must be disjoint")


def pair_key(qid: str, docid: str) -> str:
    """The key of a (query, passage) pair in the state bank."""
    return f"{qid}\x1f{docid}"
