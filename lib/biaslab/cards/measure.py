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

Bias changes are point estimates against each row's reference (the base encoder; fairrank's base ranker; cscl's
CE classifier on the same task) — the papers' own stages give the intervals for their own comparisons.
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
    """Mean over the query set's queries of each measure per ranker, as ``rank:<measure>`` columns."""
    pq = per_query[(per_query["query_set"] == query_set) & per_query["measure"].isin(measures)]
    missing = sorted(set(measures) - set(pq["measure"]))
    if missing:
        raise ValueError(f"cards.rank_measures: {missing} not measured by fairrank "
                         f"(known: {sorted(per_query['measure'].unique())})")
    wide = pq.groupby(["ranker", "measure"])["value"].mean().unstack()[list(measures)]
    return wide.rename(columns=lambda m: f"rank:{m}")


def encoder_card(encoder, name: str, probes: Probes) -> dict[str, float]:
    """Every measure of one encoder (module doc)."""
    from ..fairrank.findings import measure_runs
    from ..ragcontrol import evaluate as rc_eval
    from ..ragfair.cards import bias_card

    card = bias_card(encoder, probes.bbq_rows, seat_tests=probes.seat_tests, **probes.card_args)
    row = dict(card.summary) | noise_band(encoder, name, card, probes)
    for task, (test, corpus) in probes.embedder_tasks.items():
        qv = encoder.encode(test["question"].tolist())
        dv = encoder.encode(corpus["text"].tolist())
        s = rc_eval.summarise(rc_eval.top1_rows(task, "card", name, test["qid"].tolist(), qv, dv, corpus)).iloc[0]
        row[f"embedder_bias[{task}]"] = float(s["embedder_bias"])
        row[f"task_accuracy[{task}]"] = float(s["task_accuracy"])
    a = probes.rank_args
    pq = measure_runs(biencoder_run(encoder, probes.rank_lists, name), a["qrels"], a["terms"],
                      {a["query_set"]: a["qids"]}, a["background"], cutoffs=a["cutoffs"],
                      mrr_cutoff=a["mrr_cutoff"], relevance=a["relevance"])
    row.update(rank_means(pq, a["query_set"], probes.rank_measures).iloc[0].to_dict())
    return row


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


def bias_change(cards: pd.DataFrame, base_encoder: str) -> pd.DataFrame:
    """Long table: per checkpoint and bias measure, its value, its reference's value and the change in bias
    (negative = less biased than the reference, in the measure's own units). ``beyond_noise`` where the measure
    has a noise band (BBQ SPD / EOD, :func:`noise_band`): whether the checkpoint's band and its reference's are
    disjoint (as bands of bias: of |value| for a measure read by magnitude); empty for the other measures."""
    ref = references(cards, base_encoder)
    by_name = cards.set_index("checkpoint")
    rows = []
    for measure in [c for c in cards.columns if direction(c)]:
        how = direction(measure)
        band = [f"{measure}_min", f"{measure}_max"]
        for name, value in by_name[measure].dropna().items():
            r = ref[name]
            base = by_name.at[r, measure]
            if r == name or pd.isna(base):
                continue
            change = {"abs": abs(value) - abs(base), "lower": value - base, "higher": base - value}[how]
            beyond = None
            if set(band) <= set(by_name.columns) and by_name.loc[[name, r], band].notna().all(axis=None):
                (lo, hi), (rlo, rhi) = (_bias_range(*by_name.loc[n, band], how) for n in (name, r))
                beyond = bool(hi < rlo or lo > rhi)
            rows.append({"checkpoint": name, "paper": by_name.at[name, "paper"], "measure": measure,
                         "reference": r, "value": value, "reference_value": base, "bias_change": change,
                         "beyond_noise": beyond})
    return pd.DataFrame(rows, columns=["checkpoint", "paper", "measure", "reference", "value", "reference_value",
                                       "bias_change", "beyond_noise"])


def compare(card: Mapping[str, float], name: str, reference: Mapping[str, float], reference_name: str) -> pd.DataFrame:
    """One encoder's card against another's (``biaslab card MODEL --against REF``): :func:`bias_change` of the pair,
    read as the cards stage reads every encoder against its base — the change in bias per measure, and for BBQ SPD /
    EOD whether the two noise bands are disjoint (``beyond_noise``)."""
    if name == reference_name:
        raise ValueError(f"{name!r} is compared with itself; name another encoder to compare against")
    ref_row = f"base/{reference_name}"
    pair = pd.DataFrame([{"checkpoint": ref_row, "paper": "base", "kind": "encoder", **reference},
                         {"checkpoint": name, "paper": "", "kind": "encoder", **card}])
    return bias_change(pair, reference_name).drop(columns=["paper"])


def _bias_range(lo: float, hi: float, how: str) -> tuple[float, float]:
    """A band of values as a band of bias: of |value| for ``abs`` measures (0 when the band spans 0)."""
    if how != "abs":
        return lo, hi
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def _inside_noise(changes: pd.DataFrame) -> pd.Series:
    """Rows of :func:`bias_change` whose change lies inside the noise band (``beyond_noise`` False, not empty)."""
    return changes["beyond_noise"].map(lambda b: b is False)


def moved(changes: pd.DataFrame, top: int) -> pd.DataFrame:
    """Per bias measure, the ``top`` checkpoints that lowered it most against their reference (ties kept in
    table order), with the paper the mitigation comes from: does a mitigation from one paper reduce the bias
    measured by another? A reduction inside the arithmetic noise band (``beyond_noise`` False: BBQ SPD / EOD)
    is not a movement and is left out."""
    less = changes[(changes["bias_change"] < 0) & ~_inside_noise(changes)].sort_values(["measure", "bias_change"], kind="stable")
    return less.groupby("measure", sort=True).head(top).reset_index(drop=True)


def within_noise_cells(changes: pd.DataFrame, grid: pd.DataFrame) -> list[tuple[int, int]]:
    """(row, column) positions in ``grid`` (:func:`heatmap_frame`) of changes inside the noise band."""
    rows, cols = {n: i for i, n in enumerate(grid.index)}, {m: j for j, m in enumerate(grid.columns)}
    noise = changes[_inside_noise(changes)]
    return [(rows[c], cols[m]) for c, m in zip(noise["checkpoint"], noise["measure"], strict=True)]


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


def load_encoder(source: str, root: Path, models_settings, *, device: str, batch_size: int, max_seq_length: int):
    """An :class:`biaslab.embed.Encoder` (cached embeddings) for a registry name or a model folder, truncating at
    ``max_seq_length`` tokens whatever length the checkpoint was saved with (``cards.max_seq_length``: every card
    is measured at one length, so a change against the base encoder is not a change of truncation)."""
    from ..embed import Encoder
    from ..models import load_sentence_transformer, preflight

    folder = Path(source) if Path(source).is_absolute() else Path(root) / source
    if folder.is_dir():
        from sentence_transformers import SentenceTransformer

        from ..runtime import select_device

        model = SentenceTransformer(str(folder), device=select_device(device))
    else:
        model = load_sentence_transformer(preflight([source], models_settings)[source], device)
    model.max_seq_length = int(max_seq_length)
    return Encoder(model, device=device, batch_size=batch_size)
