"""Ranking effectiveness and gender-bias measures of a run, per query (fairrank §4.2, "Evaluation Metrics").

A *run* is a frame ``qid, docid, score`` (ids are strings; any id, not only integers). Every measure ranks a
query's documents by ``score`` (descending; ties by docid) — never by file order.

* **MRR@10** (:func:`mrr`) through ``ir_measures`` (RR@10 with a relevance threshold: grade ≥ 2 on TREC DL passages),
  one value per evaluated query, 0 for a query whose run holds no relevant document in the top 10 (or no document).
* **ARaB** (:func:`arab`; Rekabsaz & Schedl 2020, the reference ``GenderBias_IR`` code): per document the female and
  male magnitudes of the definitional words — ``tc`` counts, ``tf`` log(count + 1), ``bool`` count > 0; RaB@t =
  mean magnitude over the top t; ARaB@t = mean of RaB@1..t; reported as **male − female** (the reference
  aggregation's sign), per query. A ranking shorter than t is averaged over the documents it has.
* **NFaiRR** (:func:`nfairr`; Rekabsaz et al. 2021): FaiRR@k = Σ_{i≤k} ω(d_i) / log2(i + 1) with ω the document
  neutrality (:func:`biaslab.fairrank.bias.neutrality`), divided by the ideal FaiRR@k of the query's background
  documents sorted by neutrality (default background: the query's BM25 top-100). No background → NaN.
* **Gendered-term gap** (:func:`gender_term_gap`, ``GenderTerms@k``): the paper's LIWC measure counts female and
  male references in the retrieved text; LIWC's dictionaries are proprietary, so this is the same idea with the
  public definitional word list — per document |100·f / tokens − 100·m / tokens| (percentage points of gendered
  words), averaged over the top k. Not LIWC; named accordingly.

:func:`per_query` computes every measure for one run on one query set and returns long rows
``qid, measure, value`` with the measure names of the results tables (``MRR@10``, ``ARaB-tc@10``, …).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

ARAB_KINDS = ("tc", "tf", "bool")


def ranked(run: pd.DataFrame) -> dict[str, list[str]]:
    """{qid: docids ordered by score (descending), ties by docid} — the ranking every measure reads."""
    need = {"qid", "docid", "score"} - set(run.columns)
    if need:
        raise ValueError(f"a run needs columns qid, docid, score (missing {sorted(need)})")
    r = run.assign(qid=run["qid"].astype(str), docid=run["docid"].astype(str))
    dup = r.duplicated(["qid", "docid"])
    if dup.any():
        row = r[dup].iloc[0]
        raise ValueError(f"the run ranks document {row['docid']!r} twice for query {row['qid']!r}")
    r = r.sort_values(["qid", "score", "docid"], ascending=[True, False, True], kind="stable")
    return {q: g["docid"].tolist() for q, g in r.groupby("qid", sort=False)}


def _magnitudes(terms: pd.DataFrame, kind: str) -> pd.DataFrame:
    f, m = terms["def_f"].astype(np.float64), terms["def_m"].astype(np.float64)
    if kind == "tc":
        pass
    elif kind == "tf":
        f, m = np.log(f + 1), np.log(m + 1)
    elif kind == "bool":
        f, m = (f > 0).astype(np.float64), (m > 0).astype(np.float64)
    else:
        raise ValueError(f"unknown ARaB kind {kind!r}: one of {ARAB_KINDS}")
    return pd.DataFrame({"f": f.to_numpy(), "m": m.to_numpy()}, index=terms["docid"].astype(str).to_numpy())


def _check_known(docids: Sequence[str], index: pd.Index, qid: str) -> None:
    missing = [d for d in docids if d not in index]
    if missing:
        raise KeyError(f"query {qid!r}: document {missing[0]!r} (and {len(missing) - 1} more) has no bias terms — "
                       "the run names a document the data stage did not measure; check the run against the collection")


def arab(rankings: Mapping[str, Sequence[str]], terms: pd.DataFrame, *, cutoff: int, kind: str) -> dict[str, float]:
    """ARaB@cutoff (male − female) per query; a query with no documents gets NaN."""
    mags = _magnitudes(terms, kind)

    def value(docs: list[str]) -> float:
        bias = (mags.loc[docs, "m"] - mags.loc[docs, "f"]).to_numpy()
        rab = np.cumsum(bias) / np.arange(1, len(bias) + 1)  # RaB@1..n
        rab = np.concatenate([rab, np.repeat(rab[-1], cutoff - len(rab))])  # a short ranking: RaB@t = RaB@n
        return float(rab.mean())

    return _each_query(rankings, cutoff, mags.index, value)


def _each_query(rankings: Mapping[str, Sequence[str]], cutoff: int, known: pd.Index, value) -> dict[str, float]:
    """``value(top documents)`` per query (NaN for an empty ranking); unknown documents are an error."""
    out = {}
    for qid, docs in rankings.items():
        docs = list(docs)[:cutoff]
        if not docs:
            out[qid] = float("nan")
            continue
        _check_known(docs, known, qid)
        out[qid] = value(docs)
    return out


def fairr(omegas: Sequence[float], cutoff: int) -> float:
    """FaiRR@cutoff of neutralities in rank order."""
    w = np.asarray(list(omegas)[:cutoff], dtype=np.float64)
    return float((w / np.log2(np.arange(2, len(w) + 2))).sum())


def nfairr(rankings: Mapping[str, Sequence[str]], terms: pd.DataFrame, background: Mapping[str, Sequence[str]], *,
           cutoff: int) -> dict[str, float]:
    """NFaiRR@cutoff per query: FaiRR of the ranking / FaiRR of the query's background documents sorted by
    neutrality. A query without background documents, or whose ideal FaiRR is 0, gets NaN."""
    zeta = terms.set_index(terms["docid"].astype(str))["zeta"]
    out = {}
    for qid, docs in rankings.items():
        docs = list(docs)[:cutoff]
        bg = list(background.get(qid, ()))
        _check_known(docs + bg, zeta.index, qid)
        ideal = fairr(sorted(zeta.loc[bg].to_numpy(), reverse=True), cutoff) if bg else 0.0
        out[qid] = fairr(zeta.loc[docs].to_numpy(), cutoff) / ideal if ideal > 0 else float("nan")
    return out


def gender_term_gap(rankings: Mapping[str, Sequence[str]], terms: pd.DataFrame, *, cutoff: int) -> dict[str, float]:
    """Mean over the top ``cutoff`` of |female − male| definitional words in percent of the document's tokens."""
    t = terms.set_index(terms["docid"].astype(str))
    n = t["n_tokens"].clip(lower=1).astype(np.float64)
    gap = (100.0 * (t["def_f"] - t["def_m"]).abs() / n)
    return _each_query(rankings, cutoff, gap.index, lambda docs: float(gap.loc[docs].mean()))


def mrr(run: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str], *, cutoff: int, relevance: int) -> dict[str, float]:
    """RR@cutoff per query of ``qids`` through ``ir_measures`` (sorted by score); a query in ``qids`` with no
    ranked or no relevant document scores 0."""
    import ir_measures
    from ir_measures import RR

    qids = [str(q) for q in qids]
    keep = set(qids)
    q = qrels[qrels["qid"].astype(str).isin(keep)]
    r = run[run["qid"].astype(str).isin(keep)]
    measure = RR(rel=relevance) @ cutoff
    found = {m.query_id: float(m.value) for m in ir_measures.iter_calc(
        [measure], [ir_measures.Qrel(str(a), str(b), int(c)) for a, b, c in
                    q[["qid", "docid", "relevance"]].itertuples(index=False)],
        [ir_measures.ScoredDoc(str(a), str(b), float(c)) for a, b, c in
         r[["qid", "docid", "score"]].itertuples(index=False)])}
    return {qid: found.get(qid, 0.0) for qid in qids}


def measure_names(cutoffs: Sequence[int], mrr_cutoff: int) -> list[str]:
    """The result tables' measure names, in table order."""
    names = [f"MRR@{mrr_cutoff}"]
    names += [f"ARaB-{k}@{c}" for k in ARAB_KINDS for c in cutoffs]
    names += [f"NFaiRR@{c}" for c in cutoffs]
    names += [f"GenderTerms@{c}" for c in cutoffs]
    return names


def per_query(run: pd.DataFrame, qrels: pd.DataFrame, terms: pd.DataFrame, qids: Sequence[str],
              background: Mapping[str, Sequence[str]], *, cutoffs: Sequence[int], mrr_cutoff: int,
              relevance: int) -> pd.DataFrame:
    """Every measure of ``run`` on the queries ``qids``: long rows ``qid, measure, value``. A query of ``qids``
    the run does not rank gets MRR 0 and NaN bias measures."""
    qids = [str(q) for q in qids]
    ranks = ranked(run[run["qid"].astype(str).isin(set(qids))])
    ranks = {q: ranks.get(q, []) for q in qids}
    values: dict[str, dict[str, float]] = {f"MRR@{mrr_cutoff}": mrr(run, qrels, qids, cutoff=mrr_cutoff,
                                                                     relevance=relevance)}
    for kind in ARAB_KINDS:
        for c in cutoffs:
            values[f"ARaB-{kind}@{c}"] = arab(ranks, terms, cutoff=c, kind=kind)
    for c in cutoffs:
        values[f"NFaiRR@{c}"] = nfairr(ranks, terms, background, cutoff=c)
    for c in cutoffs:
        values[f"GenderTerms@{c}"] = gender_term_gap(ranks, terms, cutoff=c)
    rows = [(q, name, vals[q]) for name, vals in values.items() for q in qids]
    return pd.DataFrame(rows, columns=["qid", "measure", "value"])
