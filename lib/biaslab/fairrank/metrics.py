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


def _positions(terms: pd.DataFrame) -> dict[str, int]:
    """{docid: row} of a per-document table (ids as strings). Measures look documents up through this map and
    index NumPy arrays: a pandas ``.loc`` per query, measure and cut-off made measuring the pipeline's 152 runs
    take 45 s; with this map (and :func:`mrr` passing only ranked documents' judgments) 3.8 s, bit-identical."""
    ids = terms["docid"].astype(str).tolist()
    pos = {d: i for i, d in enumerate(ids)}
    if len(pos) != len(ids):
        dup = pd.Series(ids)[pd.Series(ids).duplicated()].iloc[0]
        raise ValueError(f"the bias-terms table lists document {dup!r} more than once; rerun fairrank_data")
    return pos


def _magnitudes(terms: pd.DataFrame, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Female and male magnitudes per row of ``terms`` (module doc)."""
    f, m = terms["def_f"].to_numpy(np.float64), terms["def_m"].to_numpy(np.float64)
    if kind == "tc":
        pass
    elif kind == "tf":
        f, m = np.log(f + 1), np.log(m + 1)
    elif kind == "bool":
        f, m = (f > 0).astype(np.float64), (m > 0).astype(np.float64)
    else:
        raise ValueError(f"unknown ARaB kind {kind!r}: one of {ARAB_KINDS}")
    return f, m


def _check_known(docids: Sequence[str], known, qid: str) -> None:
    missing = [d for d in docids if d not in known]
    if missing:
        raise KeyError(f"query {qid!r}: document {missing[0]!r} (and {len(missing) - 1} more) has no bias terms — "
                       "the run names a document the data stage did not measure; check the run against the collection")


def arab(rankings: Mapping[str, Sequence[str]], terms: pd.DataFrame, *, cutoff: int, kind: str,
         positions: Mapping[str, int] | None = None) -> dict[str, float]:
    """ARaB@cutoff (male − female) per query; a query with no documents gets NaN. ``positions``: ``terms``'
    docid → row map when the caller has it (:func:`per_query` builds it once for every measure)."""
    f, m = _magnitudes(terms, kind)
    pos = _positions(terms) if positions is None else positions

    def value(docs: list[str]) -> float:
        idx = [pos[d] for d in docs]
        bias = m[idx] - f[idx]
        rab = np.cumsum(bias) / np.arange(1, len(bias) + 1)  # RaB@1..n
        rab = np.concatenate([rab, np.repeat(rab[-1], cutoff - len(rab))])  # a short ranking: RaB@t = RaB@n
        return float(rab.mean())

    return _each_query(rankings, cutoff, pos, value)


def _each_query(rankings: Mapping[str, Sequence[str]], cutoff: int, known, value) -> dict[str, float]:
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
           cutoff: int, positions: Mapping[str, int] | None = None) -> dict[str, float]:
    """NFaiRR@cutoff per query: FaiRR of the ranking / FaiRR of the query's background documents sorted by
    neutrality. A query without background documents, or whose ideal FaiRR is 0, gets NaN."""
    zeta = terms["zeta"].to_numpy()
    pos = _positions(terms) if positions is None else positions
    out = {}
    for qid, docs in rankings.items():
        docs = list(docs)[:cutoff]
        bg = list(background.get(qid, ()))
        _check_known(docs + bg, pos, qid)
        ideal = fairr(sorted(zeta[[pos[d] for d in bg]], reverse=True), cutoff) if bg else 0.0
        out[qid] = fairr(zeta[[pos[d] for d in docs]], cutoff) / ideal if ideal > 0 else float("nan")
    return out


def gender_term_gap(rankings: Mapping[str, Sequence[str]], terms: pd.DataFrame, *, cutoff: int,
                    positions: Mapping[str, int] | None = None) -> dict[str, float]:
    """Mean over the top ``cutoff`` of |female − male| definitional words in percent of the document's tokens
    (a document whose counts are missing is skipped, as pandas' mean skips NaN)."""
    n = terms["n_tokens"].clip(lower=1).to_numpy(np.float64)
    gap = 100.0 * (terms["def_f"] - terms["def_m"]).abs().to_numpy(np.float64) / n
    pos = _positions(terms) if positions is None else positions

    def value(docs: list[str]) -> float:
        g = gap[[pos[d] for d in docs]]
        g = g[~np.isnan(g)]
        return float(g.mean()) if len(g) else float("nan")

    return _each_query(rankings, cutoff, pos, value)


def mrr(run: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str], *, cutoff: int, relevance: int) -> dict[str, float]:
    """RR@cutoff per query of ``qids`` through ``ir_measures`` (sorted by score); a query in ``qids`` with no
    ranked or no relevant document scores 0."""
    import ir_measures
    from ir_measures import RR

    qids = [str(q) for q in qids]
    keep = set(qids)
    q = qrels[qrels["qid"].astype(str).isin(keep)]
    r = run[run["qid"].astype(str).isin(keep)]
    rq, rd = r["qid"].astype(str).tolist(), r["docid"].astype(str).tolist()
    ranked_pairs = set(zip(rq, rd, strict=True))
    # a reciprocal rank reads the judgments of ranked documents only: the others are not passed (a query with no
    # judged ranked document then drops out of ir_measures' output and gets the 0 it would have scored)
    judged = [ir_measures.Qrel(a, b, int(c)) for a, b, c in zip(
        q["qid"].astype(str).tolist(), q["docid"].astype(str).tolist(), q["relevance"].tolist(), strict=True)
        if (a, b) in ranked_pairs]
    measure = RR(rel=relevance) @ cutoff
    found = {m.query_id: float(m.value) for m in ir_measures.iter_calc(
        [measure], judged, [ir_measures.ScoredDoc(a, b, c) for a, b, c in
                            zip(rq, rd, r["score"].astype(float).tolist(), strict=True)])}
    return {qid: found.get(qid, 0.0) for qid in qids}


def ndcg(run: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str], *, cutoff: int) -> dict[str, float]:
    """nDCG@cutoff per query of ``qids`` through ``ir_measures`` (graded gains: the TREC DL grades, the ideal ranking
    over every judged passage of the query); a query with no ranked document scores 0. The competence check's
    second measure (the base ranker against BM25), not one of the paper's."""
    import ir_measures
    from ir_measures import nDCG

    qids = [str(q) for q in qids]
    keep = set(qids)
    q = qrels[qrels["qid"].astype(str).isin(keep)]
    r = run[run["qid"].astype(str).isin(keep)]
    judged = [ir_measures.Qrel(a, b, int(c)) for a, b, c in zip(
        q["qid"].astype(str).tolist(), q["docid"].astype(str).tolist(), q["relevance"].tolist(), strict=True)]
    found = {m.query_id: float(m.value) for m in ir_measures.iter_calc(
        [nDCG @ cutoff], judged, [ir_measures.ScoredDoc(a, b, c) for a, b, c in zip(
            r["qid"].astype(str).tolist(), r["docid"].astype(str).tolist(), r["score"].astype(float).tolist(),
            strict=True)])}
    return {qid: found.get(qid, 0.0) for qid in qids}


def measure_names(cutoffs: Sequence[int], mrr_cutoff: int) -> list[str]:
    """The result tables' measure names, in table order."""
    names = [f"MRR@{mrr_cutoff}", f"nDCG@{mrr_cutoff}"]
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
    values: dict[str, dict[str, float]] = {
        f"MRR@{mrr_cutoff}": mrr(run, qrels, qids, cutoff=mrr_cutoff, relevance=relevance),
        f"nDCG@{mrr_cutoff}": ndcg(run, qrels, qids, cutoff=mrr_cutoff)}
    pos = _positions(terms)
    for kind in ARAB_KINDS:
        for c in cutoffs:
            values[f"ARaB-{kind}@{c}"] = arab(ranks, terms, cutoff=c, kind=kind, positions=pos)
    for c in cutoffs:
        values[f"NFaiRR@{c}"] = nfairr(ranks, terms, background, cutoff=c, positions=pos)
    for c in cutoffs:
        values[f"GenderTerms@{c}"] = gender_term_gap(ranks, terms, cutoff=c, positions=pos)
    rows = [(q, name, vals[q]) for name, vals in values.items() for q in qids]
    return pd.DataFrame(rows, columns=["qid", "measure", "value"])
