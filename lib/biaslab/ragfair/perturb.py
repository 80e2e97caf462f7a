"""Does a ragfair result survive a change of arithmetic? (Beyond the paper.) Every vector of a checkpoint is moved
by small isotropic noise and the BBQ measurements are taken again: the perturbation check behind
``ragfair_evaluate``'s correlation claim, and the noise band of the bias cards
(:func:`biaslab.cards.measure.noise_band`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from . import bbq_seat, extrinsic


def _seat_sets(evaluation: pd.DataFrame) -> dict:
    """Each category's rows (re-indexed) and BBQ SEAT sets — ``None`` where the category has too few distinct strings
    for them (no intrinsic value there, as in the row bootstrap)."""
    out = {}
    for cat, g in evaluation.groupby("category", sort=True):
        g = g.reset_index(drop=True)
        try:
            out[cat] = (g, bbq_seat.seat_sets(g)[0])
        except ValueError:
            out[cat] = (g, None)
    return out


def probe_texts(evaluation: pd.DataFrame) -> list[str]:
    """Every text a checkpoint's vectors are needed for after its card: the BBQ SEAT sets' sentences (the row
    bootstrap) and the rows' questions and contexts (the perturbation check), each once."""
    seat = [t for _, s in _seat_sets(evaluation).values() if s is not None for t in s.texts()]
    return list(dict.fromkeys([*seat, *evaluation["question"], *evaluation["context"]]))


def perturbation_sigma(cosine: float, dim: int) -> float:
    """Standard deviation of isotropic Gaussian noise that moves a unit vector in ``dim`` dimensions to an expected
    cosine of about ``cosine`` with itself (after renormalising): cos ≈ 1 / sqrt(1 + σ²·dim)."""
    if not 0 < cosine < 1:
        raise ValueError(f"perturbation cosine must be in (0, 1), got {cosine}")
    return float(np.sqrt((1.0 / cosine**2 - 1.0) / dim))


def perturbation_check(card_of: Mapping, evaluation: pd.DataFrame, embed_of: Mapping, *, rounds: int,
                       cosine: float, seed: int, acc_at_1: str
                       ) -> tuple[list[tuple[pd.DataFrame, pd.DataFrame]], pd.DataFrame]:
    """Does a result survive a change of arithmetic? (Beyond the paper.) In ``rounds`` re-measurements, every
    vector of every checkpoint (``embed_of``: each SEAT text, question and context) is moved by isotropic Gaussian
    noise to cosine ≈ ``cosine`` with its original and renormalised — one draw per distinct text, so a text that is
    both a SEAT sentence and a context moves once, as under a different encoder arithmetic — and each category's
    BBQ SEAT effect size and top-1 retrieval (exact inner-product search over the category's distinct contexts, as
    :func:`.extrinsic.retrieve_contexts`) are recomputed on all evaluation rows (Acc@1 hits as ``acc_at_1``,
    :func:`.extrinsic.category_decisions`).

    Why: BBQ's contexts are templated near-duplicates and each question text is shared by several rows, so a top-1
    retrieval among them can flip on a cosine difference of 1e-5 and move a category's SPD by 0.05–0.2 at once;
    re-measuring under bf16 autocast (vectors at cosine 0.99999 to fp32 on average) changed 0.8 % of the decisions,
    moved the frozen encoder's SPD from 0.144 to 0.128 and the correlation r from 0.78 to −0.07. A row bootstrap
    does not see this: it resamples rows but keeps every decision fixed. Isotropic noise is a model of such a
    change, not a copy: its size is set by ``cosine`` (params.yaml says how the default was matched to bf16).

    Returns (frames, stability): ``frames`` as :func:`.cards.bootstrap_frames` (intrinsic, extrinsic long frames per
    round; pass them to :func:`.evaluation.correlations`), and per checkpoint its SPD / EOD / Acc@1, their range over the
    rounds and the mean share of rows whose retrieved answer role changed."""
    from ..metrics.seat import association, effect_size

    rng = np.random.default_rng(seed)
    frames: list[tuple[list, list]] = [([], []) for _ in range(rounds)]
    cats = []
    for cat, (g, s) in _seat_sets(evaluation).items():
        ctx = list(dict.fromkeys(g["context"]))
        # what each row's question reads off each context, and whether it is an Acc@1 hit, as [rows, contexts]
        # tables built once (every round indexes them instead of calling extrinsic.predicted_roles again)
        roles = np.stack([extrinsic.predicted_roles(g, np.full(len(g), j), ctx) for j in range(len(ctx))], axis=1)
        cats.append((cat, g, ctx, s, roles, extrinsic.hit_table(g, ctx, acc_at_1)))
    stability = []
    for name, card in card_of.items():
        vec = embed_of[name]
        pos = {t: i for i, t in enumerate(vec)}
        base = np.stack(list(vec.values())).astype(np.float32)
        scale = perturbation_sigma(cosine, base.shape[1]) * np.linalg.norm(base, axis=1, keepdims=True)
        at = [(cat, roles, hit, np.array([pos[q] for q in g["question"]]), np.array([pos[c] for c in ctx]),
               None if s is None else [np.array([pos[t] for t in part]) for part in (s.X, s.Y, s.A, s.B)])
              for cat, g, ctx, s, roles, hit in cats]
        spd, eod, acc, changed = [], [], [], []
        for r in range(rounds):
            m = base + scale * rng.standard_normal(base.shape, dtype=np.float32)
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            parity, hits, moved = [], [], []
            for cat, roles, hit, qi, ci, seat_idx in at:
                if seat_idx is not None:
                    X, Y, A, B = (m[i] for i in seat_idx)
                    es = effect_size(association(X, A, B), association(Y, A, B))
                    frames[r][0].append({"checkpoint": name, "category": cat, "bbq_seat_es": es,
                                         "bbq_seat_abs_es": abs(es)})
                ids = np.argmax(m[qi] @ m[ci].T, axis=1)
                gold, pred0, _ = card.decisions[cat]
                pred = roles[np.arange(len(ids)), ids]
                pm = extrinsic.parity_metrics(gold, pred)
                frames[r][1].append({"checkpoint": name, "category": cat, **pm})
                parity.append(pm)
                hits.append(100.0 * float(np.mean(hit[np.arange(len(ids)), ids])))
                moved.append(float(np.mean(pred != pred0)))
            spd.append(np.mean([p["spd"] for p in parity]))
            eod.append(np.mean([p["eod"] for p in parity]))
            acc.append(np.mean(hits))
            changed.append(np.mean(moved))
        row = {"checkpoint": name, "spd": card.summary["spd"], "eod": card.summary["eod"],
               "acc_at_1": card.summary["acc_at_1"]}
        for m, vals in (("spd", spd), ("eod", eod), ("acc_at_1", acc)):  # no rounds: the range is the value itself
            row.update({f"{m}_min": float(min(vals, default=row[m])), f"{m}_max": float(max(vals, default=row[m]))})
        row["decisions_changed"] = float(np.mean(changed)) if rounds else float("nan")
        stability.append(row)
    return [(pd.DataFrame(i), pd.DataFrame(e)) for i, e in frames], pd.DataFrame(stability)
