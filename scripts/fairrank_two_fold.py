"""Would fairrank's base ranker clear its competence floor with a two-fold design? (docs/fairrank.md)

    python scripts/fairrank_two_fold.py [--seeds 0,1,2,3,4] [--claims]

The pipeline trains on TREC DL20's judged pairs and re-ranks DL19's 43 judged queries, too few for the MRR@10 floor
(base ranker beats BM25, paired t interval above 0). This trains the base ranker (``fairrank.rankers.base``, every
other knob from params.yaml) in both folds, DL20 → DL19 and DL19 → DL20, with ``fairrank_data``'s and
``fairrank_train``'s own functions, and prints base − BM25 per fold and pooled over the 97 queries. Per-query values
are averaged over seeds, as in ``per_query.csv``. Needs data/raw/trecdl_passage_bm25_top100_text,
msmarco_train_triples_splade_toy and the Rekabsaz word lists (``biaslab fetch``); writes nothing but a temporary
folder of frozen states. About 5 minutes on 2 cores.

With ``--claims``, every ranker of ``fairrank.rankers`` is trained in the DL19 → DL20 fold (about 26 minutes), its
per-query measures join the pipeline's DL20 → DL19 ones (the committed ``per_query.csv``, ``mitigation.csv``), and
fairrank's competence and claims tables are printed as ``fairrank_analysis`` would compute them with the ``dl19``
query set holding both years' 97 queries (``dl19_fair`` stays DL19's 30: DL20 has no fairness query list here).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from biaslab import config, models
from biaslab.claims import Evidence
from biaslab.data import msmarco, rekabsaz, trec_dl
from biaslab.fairrank import bias, findings, prepare
from biaslab.fairrank import runs as fruns
from biaslab.fairrank import train as ft
from biaslab.frozen import StateBank
from biaslab.paths import repo_root, resolve

MEASURES = ("MRR@10", "nDCG@10")


def fold(P, raw: Path, train_year: str, eval_year: str, seeds: list[int], work: Path, rankers) -> pd.DataFrame:
    """Per-query measures (mean over ``seeds``) of BM25 and ``rankers`` (name → ``fairrank.rankers`` entry) trained
    on ``train_year``, re-ranking ``eval_year``'s judged queries: ``ranker, query_set, qid, measure, value``."""
    C, D, T = P.fairrank, P.fairrank.data, P.fairrank.train
    dirs = models.preflight(C.backbones, P.models)
    cand, qrels, topics = ({y: load(y, raw) for y in trec_dl.YEARS}
                           for load in (trec_dl.load_candidates, trec_dl.load_qrels, trec_dl.load_topics))
    pairs = prepare.sample_pairs(prepare.judged_pairs(cand[train_year], qrels[train_year], topics[train_year],
                                                      relevance=D.relevance, negatives=D.negatives),
                                 D.max_pairs, P.common.seed)
    docs = pd.concat([cand[y][["docid", "text"]] for y in trec_dl.YEARS])
    if D.toy_triples:
        toy, toy_docs = prepare.toy_pairs(msmarco.load_toy_triples(raw))
        pairs, docs = pd.concat([pairs, toy], ignore_index=True), pd.concat([docs, toy_docs])
    docs = docs.drop_duplicates("docid").reset_index(drop=True)
    qids = trec_dl.judged_queries(cand[eval_year], qrels[eval_year])
    prepare.check_disjoint(pairs["qid"], qids)
    full = prepare.eval_lists(cand[eval_year], topics[eval_year], qids)
    lists = full[full["rank"] <= D.rerank_depth].reset_index(drop=True)
    terms = bias.document_terms(docs, rekabsaz.load_wordlist("genderspecific", raw),
                                rekabsaz.load_wordlist("representative", raw),
                                neutrality_threshold=C.loss.neutrality_threshold)
    pool = prepare.biased_negatives(cand[train_year], qrels[train_year], topics[train_year], terms,
                                    pairs["qid"].unique(), relevance=D.relevance, negatives=D.negatives)
    texts = dict(zip(docs["docid"], docs["text"], strict=True))
    rows = pd.concat([prepare.pointwise_rows(pairs)[["qid", "query", "docid"]], pool, lists[["qid", "query", "docid"]]])
    ft.save_state_banks(dirs, C.backbones, rows, texts, trainable_layers=T.trainable_layers, family=T.family,
                        max_length=T.max_length, batch_size=T.score_batch_size, device=P.common.device, out_dir=work)
    banks = {b: StateBank.load(work / f"{b}.npz") for b in C.backbones}
    runs = [findings.bm25_run(full).assign(ranker="bm25", seed=-1)]
    for seed in seeds:
        scores, _ = fruns.train_seed(C.backbones, rankers, T, dirs, banks, psi_mode=C.loss.psi,
                                     zeta_pos=C.loss.zeta_pos, pairs=pairs, lists=lists, terms=terms, pool=pool,
                                     texts=texts, seed=seed, device=P.common.device)
        runs.append(scores[scores["split"] == "eval"])
    cols = ["ranker", "seed", "qid", "docid", "score"]
    per_seed = findings.measure_runs(pd.concat([r[cols] for r in runs], ignore_index=True),
                                     qrels[eval_year][qrels[eval_year]["qid"].isin(set(qids))], terms,
                                     {eval_year: qids}, {q: g["docid"].tolist() for q, g in full.groupby("qid")},
                                     cutoffs=P.fairrank.eval.cutoffs, mrr_cutoff=P.fairrank.eval.mrr_cutoff,
                                     relevance=D.relevance)
    return findings.over_seeds(per_seed)


def gain_line(label: str, diffs: pd.Series, measure: str, level: float) -> str:
    """``label (n queries) measure: base - BM25 mean [low, high]`` with the paired t interval at ``level``."""
    ev = Evidence.of(diffs.to_numpy(), "queries")
    low, high = ev.interval(level)
    return f"{label} ({ev.n} queries) {measure}: base - BM25 {ev.value:+.3f} [{low:+.3f}, {high:+.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default=None, help="comma-separated (default: fairrank.seeds)")
    ap.add_argument("--claims", action="store_true", help="every ranker in the DL19 -> DL20 fold; the claims pooled")
    args = ap.parse_args()
    P = config.load_params()
    C = P.fairrank
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(C.seeds)
    raw = resolve(P.data.raw_dir, repo_root())
    with tempfile.TemporaryDirectory() as tmp:
        if args.claims:
            pooled_claims(P, fold(P, raw, "dl19", "dl20", seeds, Path(tmp), C.rankers))
            return
        spec = C.rankers["base"]
        base = findings.qualified_id(C.backbones[0], "base", spec.mode, spec.lambdas[0])
        level = P.common.uncertainty.confidence
        gains = {m: [] for m in MEASURES}
        for train_year, eval_year in (("dl20", "dl19"), ("dl19", "dl20")):
            pq = fold(P, raw, train_year, eval_year, seeds, Path(tmp) / eval_year, {"base": spec})
            for m in MEASURES:
                wide = pq[pq["measure"] == m].pivot_table(index="qid", columns="ranker", values="value")
                gains[m].append(wide[base] - wide["bm25"])
                print(gain_line(f"{train_year} -> {eval_year}", gains[m][-1], m, level), flush=True)
        for m in MEASURES:
            print(gain_line("pooled", pd.concat(gains[m]), m, level))


def pooled_claims(P, dl20: pd.DataFrame) -> None:
    """fairrank's competence and claims tables with ``dl20`` (the DL19 → DL20 fold's per-query measures) added to the
    committed DL20 → DL19 fold's in the ``dl19`` query set."""
    import yaml

    from biaslab import claims as cl

    results = repo_root() / "reports/fairrank/results"
    pq = pd.read_csv(results / "per_query.csv", dtype={"qid": str})
    if set(pq.loc[pq["query_set"] == "dl19", "qid"]) & set(dl20["qid"]):
        raise ValueError("DL19 and DL20 query ids overlap: the pooled query set would pair different queries")
    pq = pd.concat([pq, dl20.assign(query_set="dl19")[pq.columns]], ignore_index=True)
    order = pq.drop_duplicates(["query_set", "qid"])
    query_sets = {qs: g["qid"].tolist() for qs, g in order.groupby("query_set", sort=False)}
    values = yaml.safe_load((repo_root() / "reports/paper_values/fairrank.yaml").read_text())
    mitigation = pd.read_csv(results / "mitigation.csv", dtype={"qid": str, "docid": str})
    rows, comp = findings.paper_claims(pq, query_sets, P, values, mitigation=mitigation)
    print(f"[dl19] below = DL19 and DL20, two folds: {len(query_sets['dl19'])} queries")
    print(comp.to_string(index=False))
    table = cl.table(rows)
    print(table["verdict"].value_counts().to_string())
    with pd.option_context("display.width", 250, "display.max_colwidth", 110):
        print(table[["claim", "our_value", "ci_low", "ci_high", "paper_effect", "verdict"]].to_string(index=False))


if __name__ == "__main__":
    main()
