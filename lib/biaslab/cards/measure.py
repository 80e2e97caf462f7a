"""Bias cards across papers: one row per checkpoint, every measure taken the same way for every
checkpoint it applies to, by the function of the paper that owns it.

* **Encoders** (the base encoders and every sentence-transformers checkpoint the pipeline trains: ragfair's LoRA /
  WiSE-FT runs, intersect's contrastive retrievers, ragcontrol's reverse-biased embedders):
  intrinsic — SEAT on the sent-bias tests (mean |effect size|, mean fairness score, significant tests), SEAT on
  BBQ, and the layer-probing summary (ragfair §3.3, :func:`biaslab.ragfair.cards.bias_card`); extrinsic —
  retrieval SPD / EOD / Acc@1 on BBQ (ragfair §3.3.2, same function), embedder bias and task accuracy of top-1
  retrieval on GenderBias-QA / PoliticBias-QA (ragcontrol §3, :func:`biaslab.ragcontrol.evaluate.top1_rows`), and
  the encoder as a bi-encoder re-ranker of fairrank's TREC DL lists (cosine of query and passage), measured with
  fairrank's ARaB / NFaiRR / MRR@10 (:func:`biaslab.fairrank.findings.measure_runs`).
* **Rankers** (fairrank's cross-encoders): the same re-ranking measures, read from fairrank's per-query table (the
  same function on the same lists and queries). The trained cross-encoders are not kept by ``fairrank_train`` (it
  writes their scores), so their intrinsic measures are not taken; the row says so.
* **Classifiers** (cscl's methods): ΔEO and macro F1 from cscl's ``methods.csv``, averaged over seeds. Their
  encoders are trained in memory and not kept, so no intrinsic measure; the row says so.

Changes between cards are in :mod:`biaslab.cards.changes`, the probe data and encoders in
:mod:`biaslab.cards.load`. Bias changes are taken against each row's reference (the base encoder; fairrank's base ranker; cscl's CE
classifier on the same task). Where a measure is a mean over evaluation units — the re-ranking measures over
queries, embedder bias over test questions — the card keeps each unit's value (:class:`Card`), and
:func:`bias_change` gives the change a paired bootstrap interval over the same units (the reference measured on the
same queries or questions) and a paired randomisation test, its p-values adjusted over the whole table (unadjusted, a
test at 5 % would call about 5 % of the unchanged measures moved, by chance alone); BBQ SPD / EOD carry an
arithmetic-noise band instead (:func:`noise_band`); the other changes (SEAT, probing, ΔEO) are point estimates —
the papers' own stages give the intervals for their own comparisons. A change inside its noise band, whose interval
includes 0 or that is not significant after the adjustment is not counted as a movement (:func:`moved`).
"""


from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# measure -> how "less biased" reads: "abs" (|value| closer to 0), "higher" (larger), "lower" (smaller);
# None: a utility measure (reported, never counted as bias)
DIRECTION: dict[str, str | None] = {
    "seat_abs_es": "lower", "seat_fairness": "higher", "seat_significant": "lower",
    "bbq_seat_abs_es": "lower", "bbq_seat_fairness": "higher",
    "probe_bias_last": "abs", "probe_r2_last": "lower", "probe_depth_rho": None,
    "spd": "abs", "eod": "abs", "acc_at_1": None,
    "eo_gap": "lower", "macro_f1": None,
}
# the measures with an arithmetic-noise band (noise_band), and its columns
NOISE_BANDS = ("spd_min", "spd_max", "eod_min", "eod_max")
UNIT_COLUMNS = ["checkpoint", "measure", "unit", "value"]  # per-unit values of the measures that are means over units
MITIGATION = {
    "base": "none (base encoder)",
    "ragfair": "fairness fine-tuning: LoRA / WiSE-FT with the SEAT-gap term (ragfair §3)",
    "intersect": "contrastive bias retriever (intersect §3.3) — trained to *find* bias, not to remove it",
    "ragcontrol": "reverse-biasing fine-tune of the embedder (ragcontrol §3)",
    "fairrank": "fairness-regularised ranking loss / LWS / AdvBERT (fairrank §3)",
    "cscl": "conditional supervised contrastive learning / adversarial / INLP (cscl §3-4)",
}


def direction(measure: str) -> str | None:
    """How "less biased" reads for a card column (fairrank and ragcontrol names included)."""
    if measure in DIRECTION:
        return DIRECTION[measure]
    if measure.startswith("embedder_bias["):
        return "abs"
    if measure.startswith("rank:ARaB") or measure.startswith("rank:gender"):
        return "abs"
    if measure.startswith("rank:NFaiRR"):
        return "higher"
    return None


@dataclass(frozen=True)
class Card:
    """One encoder's card: ``summary``, its measures (a ``cards.csv`` row), and ``units``, each evaluation unit's
    value (``measure, unit, value``) for the measures that are means over units: ``rank:<measure>`` per query,
    ``embedder_bias[<task>]`` per test question (100 · (side 1 − side 2) of its top-1 document, whose mean is the
    embedder bias). :func:`bias_change` resamples these for the interval of a change."""
    summary: dict[str, float]
    units: pd.DataFrame


@dataclass(frozen=True)
class Checkpoint:
    name: str  # unique: <paper>/<run>
    paper: str
    kind: str  # encoder | ranker | classifier
    source: str  # a registry name, or a model folder relative to the repository
    mitigation: str


def encoder_checkpoints(root: Path, base_models: Sequence[str], papers: Sequence[str]) -> list[Checkpoint]:
    """The base encoders and every trained sentence-transformers checkpoint of ``papers`` (folders
    ``data/models/<paper>/<run>`` holding ``biaslab_run.json``)."""
    out = [Checkpoint(f"base/{m}", "base", "encoder", m, MITIGATION["base"]) for m in base_models]
    for paper in papers:
        folder = Path(root) / "data" / "models" / paper
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no trained {paper} checkpoints; run `dvc repro` for {paper}'s "
                                    f"training stages first, or drop {paper} from cards.papers")
        for run in sorted(d for d in folder.iterdir() if (d / "biaslab_run.json").is_file()):
            out.append(Checkpoint(f"{paper}/{run.name}", paper, "encoder", run.relative_to(root).as_posix(),
                                  MITIGATION[paper]))
    return out


@dataclass
class Probes:
    """The data every encoder card is measured on (read once per stage)."""

    bbq_rows: pd.DataFrame  # ragfair's evaluation rows
    seat_tests: list  # ragfair's sent-bias SEAT tests
    card_args: Mapping[str, Any]  # ragfair.cards.bias_card's measurement settings
    embedder_tasks: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]]  # task -> (test questions, corpus)
    rank_lists: pd.DataFrame  # fairrank lists (qid, docid) with query and passage text
    rank_args: Mapping[str, Any]  # qrels, terms, query set, background, cutoffs, mrr_cutoff, relevance
    rank_measures: Sequence[str]
    perturbation: Mapping[str, Any]  # ragfair's perturbation check: rounds, cosine, seed (noise_band)


def rank_lists(lists: pd.DataFrame, docs: pd.DataFrame) -> pd.DataFrame:
    """fairrank's candidate lists with passage text (``qid, query, docid, text``)."""
    out = lists[["qid", "query", "docid"]].merge(docs[["docid", "text"]], on="docid", how="left")
    missing = out["text"].isna()
    if missing.any():
        raise ValueError(f"{int(missing.sum())} listed passages have no text in docs.parquet "
                         f"(e.g. {out.loc[missing, 'docid'].iloc[0]}); rerun fairrank_data")
    return out


def biencoder_run(encoder, lists: pd.DataFrame, name: str) -> pd.DataFrame:
    """The encoder as a bi-encoder re-ranker: cosine of the normalised query and passage vectors per listed pair
    (``ranker, seed, qid, docid, score``). Each distinct text is encoded once."""
    queries = lists["query"].drop_duplicates().tolist()
    texts = lists["text"].drop_duplicates().tolist()
    qv = dict(zip(queries, _unit(encoder.encode(queries)), strict=True))
    dv = dict(zip(texts, _unit(encoder.encode(texts)), strict=True))
    q = np.stack([qv[t] for t in lists["query"]])
    d = np.stack([dv[t] for t in lists["text"]])
    return pd.DataFrame({"ranker": name, "seed": 0, "qid": lists["qid"].to_numpy(),
                         "docid": lists["docid"].to_numpy(), "score": np.einsum("ij,ij->i", q, d)})


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def rank_means(per_query: pd.DataFrame, query_set: str, measures: Sequence[str]) -> pd.DataFrame:
    """Mean over the query set's queries of each measure per ranker (of :func:`rank_units`), as ``rank:<measure>``
    columns."""
    units = rank_units(per_query, query_set, measures)
    missing = sorted({f"rank:{m}" for m in measures} - set(units["measure"]))
    if missing:
        raise ValueError(f"cards.rank_measures: {[m.removeprefix('rank:') for m in missing]} not measured by fairrank "
                         f"(known: {sorted(per_query['measure'].unique())})")
    return units.groupby(["ranker", "measure"])["value"].mean().unstack()[[f"rank:{m}" for m in measures]]


def encoder_card(encoder, name: str, probes: Probes) -> Card:
    """Every measure of one encoder (module doc), with the per-unit values of those that are means over units."""
    from ..fairrank.findings import measure_runs
    from ..ragcontrol import evaluate as rc_eval
    from ..ragfair.cards import bias_card

    card = bias_card(encoder, probes.bbq_rows, seat_tests=probes.seat_tests, **probes.card_args)
    row = dict(card.summary) | noise_band(encoder, name, card, probes)
    units = []
    for task, (test, corpus) in probes.embedder_tasks.items():
        qv = encoder.encode(test["question"].tolist())
        dv = encoder.encode(corpus["text"].tolist())
        top1 = rc_eval.top1_rows(task, "card", name, test["qid"].tolist(), qv, dv, corpus)
        s = rc_eval.summarise(top1).iloc[0]
        row[f"embedder_bias[{task}]"] = float(s["embedder_bias"])
        row[f"task_accuracy[{task}]"] = float(s["task_accuracy"])
        units.append(pd.DataFrame({"measure": f"embedder_bias[{task}]", "unit": top1["qid"].astype(str).to_numpy(),
                                   "value": 100.0 * (top1["bias1"].to_numpy(np.float64)
                                                     - top1["bias2"].to_numpy(np.float64))}))
    a = probes.rank_args
    pq = measure_runs(biencoder_run(encoder, probes.rank_lists, name), a["qrels"], a["terms"],
                      {a["query_set"]: a["qids"]}, a["background"], cutoffs=a["cutoffs"],
                      mrr_cutoff=a["mrr_cutoff"], relevance=a["relevance"])
    row.update(rank_means(pq, a["query_set"], probes.rank_measures).iloc[0].to_dict())
    units.append(rank_units(pq, a["query_set"], probes.rank_measures).drop(columns="ranker"))
    return Card(row, pd.concat(units, ignore_index=True)[UNIT_COLUMNS[1:]])


def checkpoint_cards(checkpoints: Sequence[Checkpoint], probes: Probes,
                     load: Callable[[str], Any]) -> tuple[list[tuple[Checkpoint, dict]], list[pd.DataFrame]]:
    """:func:`encoder_card` of every checkpoint, one encoder in memory at a time (``load``: a checkpoint's
    ``source`` → its encoder, :func:`biaslab.cards.load.load_encoder`): the (checkpoint, summary) rows of
    :func:`table` and each card's per-unit values, tagged with the checkpoint."""
    from ..runtime import progress

    rows, units = [], []
    for ck in progress(checkpoints, desc="bias cards", unit="checkpoint"):
        card = encoder_card(load(ck.source), ck.name, probes)
        rows.append((ck, card.summary))
        units.append(card.units.assign(checkpoint=ck.name))
    return rows, units


def noise_band(encoder, name: str, card, probes: Probes) -> dict[str, float]:
    """The range of the card's BBQ SPD and EOD when every vector is moved by the noise of ragfair's perturbation
    check (:func:`biaslab.ragfair.perturb.perturbation_check`, with ragfair.evaluate's knobs): ``spd_min``,
    ``spd_max``, ``eod_min``, ``eod_max``; none with 0 rounds. BBQ's top-1 retrievals flip on cosine differences of
    1e-5, so a change of SPD smaller than this band is arithmetic noise, not a mitigation (:func:`bias_change`)."""
    from ..ragfair.perturb import perturbation_check, probe_texts

    p = probes.perturbation
    if not p["rounds"]:
        return {}
    texts = probe_texts(probes.bbq_rows)
    _, stab = perturbation_check({name: card}, probes.bbq_rows, {name: dict(zip(texts, encoder.encode(texts),
                                                                                strict=True))},
                                 rounds=p["rounds"], cosine=p["cosine"], seed=p["seed"], acc_at_1=p["acc_at_1"])
    return {c: float(stab.iloc[0][c]) for c in NOISE_BANDS}


def rank_units(per_query: pd.DataFrame, query_set: str, measures: Sequence[str]) -> pd.DataFrame:
    """Per ranker, each query's value of each measure (mean over seed rows), ``ranker, measure, unit, value`` with
    ``rank:<measure>`` names: the units :func:`rank_means` averages."""
    pq = per_query[(per_query["query_set"] == query_set) & per_query["measure"].isin(measures)]
    out = pq.groupby(["ranker", "measure", "qid"], sort=False)["value"].mean().reset_index()
    return pd.DataFrame({"ranker": out["ranker"].to_numpy(), "measure": "rank:" + out["measure"].astype(str),
                         "unit": out["qid"].astype(str).to_numpy(), "value": out["value"].to_numpy(np.float64)})


def ranker_units(per_query: pd.DataFrame, query_set: str, measures: Sequence[str]) -> pd.DataFrame:
    """:func:`rank_units` of fairrank's rankers under their card names (:func:`ranker_rows`)."""
    units = rank_units(per_query, query_set, measures)
    return units.assign(checkpoint="fairrank/" + units.pop("ranker"))[UNIT_COLUMNS]


def ranker_rows(per_query: pd.DataFrame, query_set: str, measures: Sequence[str]) -> pd.DataFrame:
    """fairrank's rankers (BM25 and every trained cross-encoder, mean over seeds and queries) as card rows."""
    means = rank_means(per_query, query_set, measures).reset_index()
    means.insert(0, "checkpoint", "fairrank/" + means.pop("ranker"))
    return means.assign(paper="fairrank", kind="ranker", source="reports/fairrank/results/per_query.csv",
                        mitigation=MITIGATION["fairrank"],
                        not_measured="intrinsic, BBQ, embedder bias: fairrank_train keeps scores, not models")


def classifier_rows(methods: pd.DataFrame) -> pd.DataFrame:
    """cscl's classifiers (task, method, λ), ΔEO and macro F1 averaged over seeds, as card rows."""
    value = methods["value"].map(lambda v: "" if pd.isna(v) else f"@{v:g}")
    g = methods.assign(setting=methods["task"] + "/" + methods["method"] + value).groupby("setting", sort=False)
    out = g[["eo_gap", "macro_f1"]].mean().reset_index()
    out.insert(0, "checkpoint", "cscl/" + out.pop("setting"))
    return out.assign(paper="cscl", kind="classifier", source="reports/cscl/results/methods.csv",
                      mitigation=MITIGATION["cscl"],
                      not_measured="intrinsic, BBQ, embedder bias, ranking: cscl_train keeps predictions, not models")


def table(encoder_rows: Sequence[tuple[Checkpoint, Mapping[str, float]]], extra: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``cards.csv``: identity columns, then every measure column (empty where it does not apply)."""
    enc = pd.DataFrame([{"checkpoint": c.name, "paper": c.paper, "kind": c.kind, "source": c.source,
                         "mitigation": c.mitigation, "not_measured": "", **m} for c, m in encoder_rows])
    out = pd.concat([enc, *extra], ignore_index=True)
    ident = ["checkpoint", "paper", "kind", "source", "mitigation", "not_measured"]
    return out[ident + [c for c in out.columns if c not in ident]]
