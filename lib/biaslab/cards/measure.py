"""Bias cards across papers (issue 15 §2): one row per checkpoint, every measure taken the same way for every
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

Bias changes are taken against each row's reference (the base encoder; fairrank's base ranker; cscl's CE
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

from collections.abc import Mapping, Sequence
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
                                 rounds=p["rounds"], cosine=p["cosine"], seed=p["seed"])
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


def references(cards: pd.DataFrame, base_encoder: str) -> pd.Series:
    """Each row's reference: the base encoder (encoders), fairrank's base ranker of the same backbone (rankers;
    BM25 for itself), cscl's CE classifier on the same task (classifiers)."""
    names = set(cards["checkpoint"])
    ref = {}
    for name, kind in zip(cards["checkpoint"], cards["kind"], strict=True):
        if kind == "encoder":
            ref[name] = f"base/{base_encoder}"
        elif kind == "ranker":
            backbone = name.split("/", 1)[1].split("|")[0]
            cand = f"fairrank/{backbone}|base@0"
            ref[name] = cand if cand in names else name
        else:
            task = name.split("/")[1]
            ref[name] = f"cscl/{task}/ce"
    missing = sorted(set(ref.values()) - names)
    if missing:
        raise ValueError(f"reference rows {missing} are not in the cards table")
    return pd.Series(ref)


CHANGE_COLUMNS = ["checkpoint", "paper", "measure", "reference", "value", "reference_value", "bias_change", "ci_low",
                  "ci_high", "p_value", "q_value", "significant", "beyond_noise"]


def bias_change(cards: pd.DataFrame, base_encoder: str, units: pd.DataFrame | None, *, rounds: int,
                confidence: float, seed: int, test_rounds: int, p_adjust: str) -> pd.DataFrame:
    """Long table: per checkpoint and bias measure, its value, its reference's value and the change in bias
    (negative = less biased than the reference, in the measure's own units). Where both have per-unit values of the
    measure in ``units`` (``checkpoint, measure, unit, value``; :class:`Card`) on the same units: ``ci_low`` /
    ``ci_high``, the paired bootstrap interval of the change over those units (``rounds`` resamples, each drawn once
    for both; :func:`biaslab.stats.paired_statistic`); ``p_value``, the two-sided paired randomisation test of the
    change (``test_rounds`` random swaps of a unit's two values; :func:`biaslab.stats.permutation_p`); ``q_value``,
    the p-values adjusted over every test in the table (``p_adjust``, :func:`biaslab.stats.adjust_p`: the table asks
    one question — which mitigation moved which measure — so its tests are one family); ``significant``:
    ``q_value`` ≤ 1 − ``confidence``, the false discovery rate the intervals' level implies. Empty otherwise.
    ``beyond_noise`` where the measure has a noise band (BBQ SPD / EOD, :func:`noise_band`): whether the
    checkpoint's band and its reference's are disjoint (as bands of bias: of |value| for a measure read by
    magnitude); empty for the other measures. ``rounds``, ``confidence``, ``seed``: ``common.uncertainty`` and
    ``common.seed`` (``units`` None or ``rounds`` 0: point estimates only); ``test_rounds``, ``p_adjust``:
    ``cards.permutation_rounds`` and ``cards.p_adjust``."""
    from .. import stats

    ref = references(cards, base_encoder)
    by_name = cards.set_index("checkpoint")
    per_unit = {} if units is None or not rounds else {
        key: g.set_index("unit")["value"] for key, g in units.groupby(["checkpoint", "measure"], sort=False)}
    rows = []
    for measure in [c for c in cards.columns if direction(c)]:
        how = direction(measure)
        band = [f"{measure}_min", f"{measure}_max"]
        for name, value in by_name[measure].dropna().items():
            r = ref[name]
            base = by_name.at[r, measure]
            if r == name or pd.isna(base):
                continue
            change = float(_BIAS[how](value) - _BIAS[how](base))
            beyond = None
            if set(band) <= set(by_name.columns) and by_name.loc[[name, r], band].notna().all(axis=None):
                (lo, hi), (rlo, rhi) = (_bias_range(*by_name.loc[n, band], how) for n in (name, r))
                beyond = bool(hi < rlo or lo > rhi)
            est = _paired_change(per_unit.get((name, measure)), per_unit.get((r, measure)), how, rounds=rounds,
                                 confidence=confidence, seed=seed, test_rounds=test_rounds)
            rows.append({"checkpoint": name, "paper": by_name.at[name, "paper"], "measure": measure,
                         "reference": r, "value": value, "reference_value": base, "bias_change": change,
                         "ci_low": est[0], "ci_high": est[1], "p_value": est[2], "beyond_noise": beyond})
    out = pd.DataFrame(rows, columns=CHANGE_COLUMNS)
    out["q_value"] = stats.adjust_p(out["p_value"].astype(float), p_adjust)
    out["significant"] = [None if np.isnan(q) else bool(q <= 1 - confidence) for q in out["q_value"]]
    return out


# a measure's value as a level of bias (larger = more biased), per reading (direction): one definition for the
# change between two cards and for its interval and test over units
_BIAS = {"abs": np.abs, "lower": np.positive, "higher": np.negative}


def _paired_change(mine: pd.Series | None, ref: pd.Series | None, how: str, *, rounds: int, confidence: float,
                   seed: int, test_rounds: int) -> tuple[float, float, float]:
    """(low, high, p) of the change in bias between two systems' per-unit values (unit → value; the measure is
    their mean, read as ``how``) over the units both were measured on: the paired bootstrap interval and the paired
    randomisation test's p-value. NaN when either has no units or they were measured on different units (the change
    would not be paired)."""
    from .. import stats

    nan = (float("nan"),) * 3
    if mine is None or ref is None or len(mine) < 2 or set(mine.index) != set(ref.index) or not mine.index.is_unique:
        return nan
    a, b = mine.to_numpy(np.float64), ref.loc[mine.index].to_numpy(np.float64)

    def bias(v, axis=0):  # the level of bias of the mean over units (axis 0 of [units] or [units, swaps])
        return _BIAS[how](np.mean(v, axis=axis))

    est = stats.paired_statistic(len(a), lambda ix: bias(a[ix]), lambda ix: bias(b[ix]), rounds=rounds,
                                 confidence=confidence, seed=seed)
    p = stats.permutation_p(a, b, lambda x, y, axis: bias(x, axis) - bias(y, axis), rounds=test_rounds, seed=seed)
    return est.ci_low, est.ci_high, p


def compare(card: Card, name: str, reference: Card, reference_name: str, *, rounds: int, confidence: float,
            seed: int, test_rounds: int, p_adjust: str) -> pd.DataFrame:
    """One encoder's card against another's (``biaslab card MODEL --against REF``): :func:`bias_change` of the pair,
    read as the cards stage reads every encoder against its base — the change in bias per measure, its paired
    interval and test where the measure has per-unit values (adjusted over this pair's tests), and for BBQ SPD /
    EOD whether the two noise bands are disjoint (``beyond_noise``)."""
    if name == reference_name:
        raise ValueError(f"{name!r} is compared with itself; name another encoder to compare against")
    ref_row = f"base/{reference_name}"
    pair = pd.DataFrame([{"checkpoint": ref_row, "paper": "base", "kind": "encoder", **reference.summary},
                         {"checkpoint": name, "paper": "", "kind": "encoder", **card.summary}])
    units = pd.concat([reference.units.assign(checkpoint=ref_row), card.units.assign(checkpoint=name)],
                      ignore_index=True)[UNIT_COLUMNS]
    return bias_change(pair, reference_name, units, rounds=rounds, confidence=confidence, seed=seed,
                       test_rounds=test_rounds, p_adjust=p_adjust).drop(columns=["paper"])


def _bias_range(lo: float, hi: float, how: str) -> tuple[float, float]:
    """A band of values as a band of bias: of |value| for ``abs`` measures (0 when the band spans 0)."""
    if how != "abs":
        return lo, hi
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def unresolved(changes: pd.DataFrame) -> pd.Series:
    """Rows of :func:`bias_change` whose change the data cannot tell from none: inside the arithmetic noise band
    (``beyond_noise`` False), with a paired interval that includes 0, or not significant once the table's tests are
    adjusted for their number (``significant`` False). Empty bands, intervals and tests count as resolved (point
    estimates)."""
    inside = changes["beyond_noise"].map(lambda b: b is False)
    lo, hi = changes["ci_low"].astype(float), changes["ci_high"].astype(float)
    return inside | ((lo <= 0) & (hi >= 0)) | changes["significant"].map(lambda b: b is False)


def moved(changes: pd.DataFrame, top: int) -> pd.DataFrame:
    """Per bias measure, the ``top`` checkpoints that lowered it most against their reference (ties kept in
    table order), with the paper the mitigation comes from: does a mitigation from one paper reduce the bias
    measured by another? A reduction the data cannot resolve (:func:`unresolved`: inside the noise band of BBQ
    SPD / EOD, a paired interval over queries / questions that includes 0, or not significant once adjusted for the
    table's number of tests) is not a movement and is left out."""
    less = changes[(changes["bias_change"] < 0) & ~unresolved(changes)].sort_values(["measure", "bias_change"], kind="stable")
    return less.groupby("measure", sort=True).head(top).reset_index(drop=True)


def unresolved_cells(changes: pd.DataFrame, grid: pd.DataFrame) -> list[tuple[int, int]]:
    """(row, column) positions in ``grid`` (:func:`heatmap_frame`) of :func:`unresolved` changes."""
    rows, cols = {n: i for i, n in enumerate(grid.index)}, {m: j for j, m in enumerate(grid.columns)}
    flat = changes[unresolved(changes)]
    return [(rows[c], cols[m]) for c, m in zip(flat["checkpoint"], flat["measure"], strict=True)]


def heatmap_frame(changes: pd.DataFrame) -> pd.DataFrame:
    """Checkpoint × measure, each column's bias change divided by its largest |change| (so columns in different
    units share one colour scale): −1 = the largest reduction in that column, +1 = the largest increase."""
    wide = changes.pivot_table(index="checkpoint", columns="measure", values="bias_change", sort=False)
    scale = wide.abs().max().replace(0, 1.0)  # a column with no change stays 0 (measured), not blank
    return wide / scale


def load_probes(root: Path, P) -> Probes:
    """The stage's probe data from the pipeline's processed data, with the owning papers' settings in ``P`` (the
    stage's typed params: ``common``, ``data``, ``ragfair``, ``fairrank``, ``cards``)."""
    from ..ragfair.cards import evaluation_setup

    root = Path(root)
    need = {"ragfair_bbq": root / "data/processed/ragfair/bbq.parquet",
            "fairrank_data": root / "data/processed/fairrank/lists.parquet"}
    need.update({f"ragcontrol_data@{t}": root / "data/processed/ragcontrol/tasks" / t / "corpus.parquet"
                 for t in P.cards.embedder_tasks})
    for stage, path in need.items():
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: a bias card needs it; run `dvc repro {stage}` first")
    bbq_rows, seat_tests, card_args = evaluation_setup(pd.read_parquet(need["ragfair_bbq"]), P, root)
    fr = root / "data/processed/fairrank"
    queries = pd.read_parquet(fr / "queries.parquet")
    lists = pd.read_parquet(fr / "lists.parquet")
    tasks_dir = root / "data/processed/ragcontrol/tasks"
    return Probes(
        bbq_rows=bbq_rows, seat_tests=seat_tests, card_args=card_args,  # as ragfair_evaluate measures its own
        embedder_tasks={t: (pd.read_parquet(tasks_dir / t / "test_questions.parquet"),
                            pd.read_parquet(tasks_dir / t / "corpus.parquet")) for t in P.cards.embedder_tasks},
        # what fairrank's rankers re-rank: each query's BM25 top-k, for the queries measured (NFaiRR's background
        # stays the whole list, as in fairrank_analysis)
        rank_lists=rank_lists(lists[(lists["rank"] <= P.fairrank.data.rerank_depth)
                                    & lists["qid"].isin(queries.loc[queries["query_set"] == P.cards.rank_query_set,
                                                                    "qid"])], pd.read_parquet(fr / "docs.parquet")),
        rank_args={"qrels": pd.read_parquet(fr / "qrels.parquet"), "terms": pd.read_parquet(fr / "terms.parquet"),
                   "query_set": P.cards.rank_query_set,
                   "qids": queries.loc[queries["query_set"] == P.cards.rank_query_set, "qid"].tolist(),
                   "background": {q: g["docid"].tolist() for q, g in lists.groupby("qid")},
                   "cutoffs": P.fairrank.eval.cutoffs, "mrr_cutoff": P.fairrank.eval.mrr_cutoff,
                   "relevance": P.fairrank.data.relevance},
        rank_measures=P.cards.rank_measures,
        perturbation={"rounds": P.ragfair.evaluate.perturbation_rounds, "cosine": P.ragfair.evaluate.perturbation_cosine,
                      "seed": P.common.seed})


# per process, (base registry name, device, batch size, length) -> that base encoder's frozen bottoms, made the first
# time load_encoder loads it and kept (loading it again does not add another copy of the model and its states)
_BOTTOMS: dict[tuple, object] = {}


def load_encoder(source: str, root: Path, models_settings, *, device: str, batch_size: int, max_seq_length: int):
    """An :class:`biaslab.embed.Encoder` (cached embeddings) for a registry name or a model folder, truncating at
    ``max_seq_length`` tokens whatever length the checkpoint was saved with (``cards.max_seq_length``: every card
    is measured at one length, so a change against the base encoder is not a change of truncation).

    Work is shared between the checkpoints of one process: a base encoder (a registry name) loaded here lends its
    bottom layers to every model folder loaded after it that kept its embeddings and first layers bit for bit
    (ragfair's WiSE-FT runs train only the top ``wiseft_layers``, ragcontrol's last-k runs only the top k layers'
    MLPs). Such a checkpoint's encoder runs only its layers above that bottom, on the base's states of it, computed
    once per text for all of them (:class:`biaslab.frozen.Bottoms`): the full forward pass's vectors bit for bit,
    in a third of the time for the default cards; its layer-wise encodings (probing) run the full model."""
    from ..embed import Encoder
    from ..frozen import Bottoms
    from ..models import load_sentence_transformer, preflight

    folder = Path(source) if Path(source).is_absolute() else Path(root) / source
    model = load_sentence_transformer(folder if folder.is_dir() else preflight([source], models_settings)[source],
                                      device)
    model.max_seq_length = int(max_seq_length)
    setting = (device, int(batch_size), int(max_seq_length))
    if not folder.is_dir():
        _BOTTOMS.setdefault((source, *setting), Bottoms(model, batch_size=batch_size))
    else:
        for bottoms in (b for key, b in _BOTTOMS.items() if key[1:] == setting):
            shared = bottoms.encoder(model)
            if shared is not None:
                return shared
    return Encoder(model, device=device, batch_size=batch_size)
