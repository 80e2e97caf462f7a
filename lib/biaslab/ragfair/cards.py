"""Per-checkpoint "bias cards" (ragfair §3.3, §4.2–4.3): intrinsic (SEAT on the sent-bias tests, SEAT on BBQ,
layer probing) and extrinsic (SPD, EOD, Acc@1 on BBQ retrieval) measurements of one encoder, plus the bootstrap
that feeds the intrinsic–extrinsic correlation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import bbq_seat, extrinsic, probing


@dataclass
class Card:
    summary: dict  # one row of the bias-card table
    per_category: pd.DataFrame  # category, bbq_seat_es, bbq_seat_fairness, spd, eod, acc_at_1, ...
    decisions: dict  # category -> (gold roles, predicted roles) for the bootstrap


def evaluation_setup(bbq: pd.DataFrame, P, root) -> tuple[pd.DataFrame, list, dict]:
    """What every bias card is measured on and how, from the stage's typed params ``P`` (``common``, ``data``,
    ``ragfair``): the evaluation rows (``ragfair.evaluate.max_rows_per_category`` per category of ``bbq``'s eval
    split, :func:`.bbq_build.sample`), the sent-bias SEAT tests (``ragfair.seat.tests``, all when empty) and
    :func:`bias_card`'s settings. One definition for ragfair_evaluate and the cross-paper cards stage, so both
    measure a checkpoint the same way."""
    from ..data import seat as seat_data
    from ..paths import resolve
    from . import bbq_build

    E, SE, PR = P.ragfair.evaluate, P.ragfair.seat, P.ragfair.probing
    rows = bbq_build.sample(bbq[bbq["split"] == "eval"], E.max_rows_per_category, seed=P.common.seed)
    tests = seat_data.load_tests(SE.tests or None, resolve(P.data.raw_dir, root))
    args = {"seat_n_samples": E.seat_n_samples, "exact_limit": SE.exact_limit, "e_max": SE.e_max, "alpha": SE.alpha,
            "tau": PR.tau, "folds": PR.folds, "alphas": PR.ridge_alphas, "shuffles": PR.shuffles,
            "acc_at_1": E.acc_at_1, "seed": P.common.seed}
    return rows, tests, args


def load_checkpoint(run: str | None, base_dir, models_dir, device: str):
    """The sentence-transformers model of a run folder (``None`` = the frozen base model in ``base_dir``)."""
    from ..models import load_sentence_transformer

    if run is None:
        return load_sentence_transformer(base_dir, device)
    from pathlib import Path

    folder = Path(models_dir) / run
    if not (folder / "biaslab_run.json").is_file():
        raise FileNotFoundError(f"checkpoint {folder} not found: run `dvc repro ragfair_train@{run}` first")
    return load_sentence_transformer(folder, device)


def bias_card(encoder, bbq_eval: pd.DataFrame, *, seat_tests=None, seat_n_samples: int, exact_limit: int,
              e_max: float, alpha: float, tau: float, folds: int, alphas: Sequence[float], shuffles: int,
              seed: int, acc_at_1: str) -> Card:
    """Every measurement of one checkpoint on the evaluation rows (and the sent-bias SEAT tests when given):
    permutation tests with ``seat_n_samples`` / ``exact_limit`` (ragfair.seat), fairness score with ``e_max`` and
    significance at ``alpha``; probes as ragfair.probing (``tau``, ``folds``, ridge ``alphas``, ``shuffles``);
    Acc@1 hits as ``acc_at_1`` (ragfair.evaluate, :func:`.extrinsic.category_decisions`)."""
    cats = bbq_seat.run(bbq_seat.seat_sets(bbq_eval), encoder, n_samples=seat_n_samples, exact_limit=exact_limit,
                        e_max=e_max, seed=seed)
    cats = cats.rename(columns={"effect_size": "bbq_seat_es", "p_value": "bbq_seat_p", "fairness": "bbq_seat_fairness"})
    decisions = extrinsic.category_decisions(encoder, bbq_eval, acc_at_1)
    ext = extrinsic.extrinsic_bias(decisions)[["category", "spd", "eod", "acc_at_1"]]
    cats["bbq_seat_abs_es"] = cats["bbq_seat_es"].abs()
    per_cat = cats[["category", "bbq_seat_es", "bbq_seat_abs_es", "bbq_seat_p", "bbq_seat_fairness"]].merge(
        ext, on="category")
    # probing summary: bias at the last layer and its depth trend, probe R² at the last layer
    probe = probing.probe_all(bbq_eval, encoder, tau=tau, folds=folds, alphas=alphas, shuffles=shuffles, seed=seed)
    last = probe.sort_values("layer").groupby("category").last()
    rho = probing.depth_trend(probe).set_index("category")["spearman_rho"]
    per_cat = per_cat.merge(pd.DataFrame({"probe_bias_last": last["bias_mean"], "probe_r2_last": last["r2"],
                                          "probe_depth_rho": rho}).reset_index(), on="category")
    summary = {
        "bbq_seat_abs_es": float(per_cat["bbq_seat_es"].abs().mean()),
        "bbq_seat_fairness": float(per_cat["bbq_seat_fairness"].mean()),
        "spd": float(per_cat["spd"].mean()), "eod": float(per_cat["eod"].mean()),
        "acc_at_1": float(per_cat["acc_at_1"].mean()),
        "probe_bias_last": float(per_cat["probe_bias_last"].mean()),
        "probe_r2_last": float(per_cat["probe_r2_last"].mean()),
        "probe_depth_rho": float(np.nanmean(per_cat["probe_depth_rho"])),
    }
    if seat_tests:
        from .seat_audit import run_seat_tests

        st = run_seat_tests(seat_tests, encoder, n_samples=seat_n_samples, exact_limit=exact_limit, e_max=e_max,
                            alpha=alpha, seed=seed)
        summary.update({"seat_fairness": float(st["fairness_score"].mean()),
                        "seat_abs_es": float(st["effect_size"].abs().mean()),
                        "seat_significant": int((st["p_value"] < alpha).sum())})
    return Card(summary, per_cat, decisions)


def bootstrap_frames(cards: dict[str, Card], rows: pd.DataFrame, embed_of, rng: np.random.Generator):
    """One bootstrap round of §3.3.1: resample evaluation rows with replacement within each category, re-derive
    the BBQ SEAT sets from the sample and recompute every checkpoint's effect size (embeddings from
    ``embed_of[checkpoint]``, a text -> vector mapping), and SPD / EOD from the checkpoints' fixed retrieval
    decisions on the sampled rows. Returns long frames (checkpoint, category, value): intrinsic, extrinsic."""
    from ..metrics.seat import association, effect_size

    intr, extr = [], []
    for cat, g in rows.groupby("category", sort=True):
        pick = rng.integers(0, len(g), len(g))
        try:
            s = bbq_seat.seat_sets(g.iloc[pick])[0]
        except ValueError:
            s = None  # too few distinct strings in this sample: no intrinsic value this round
        for name, card in cards.items():
            if s is not None:
                vec = embed_of[name]
                X, Y, A, B = (np.stack([vec[t] for t in part]) for part in (s.X, s.Y, s.A, s.B))
                es = effect_size(association(X, A, B), association(Y, A, B))
                intr.append({"checkpoint": name, "category": cat, "bbq_seat_es": es, "bbq_seat_abs_es": abs(es)})
            gold, pred, _ = card.decisions[cat]
            extr.append({"checkpoint": name, "category": cat, **extrinsic.parity_metrics(gold[pick], pred[pick])})
    return pd.DataFrame(intr), pd.DataFrame(extr)
