"""The fairness-regularised ranking losses of fairrank (§3.3, App. A), on relevance scores Φ(q, d).

**Pairwise** (eqs. 12, 17, 24) — the hinge on tanh scores, averaged over the (d⁺, d⁻) pairs of a batch:

    L = mean max(0, m − (tanh Φ(q, d⁺) + s·λ·b(d⁺)) + (tanh Φ(q, d⁻) + s·λ·b(d⁻)))

with s = +1 and b = Ψ for the **penalty** (eq. 17), s = −1 and b = ζ for the **reward** (eq. 24). The
``target`` decides which side carries the term: ``relevant`` (only d⁺), ``irrelevant`` (only d⁻) or ``both`` —
the paper's six scenarios. ``mode="none"`` (or λ = 0) is the unregularised hinge of eq. 12 (the base ranker).

**Pointwise** (eqs. 28, 29, 31) — squared error of the sigmoid of the adjusted score against the 0/1 label:

    L = mean (σ(Φ(q, d) + s·λ·[target applies to d]·b(d)) − y)²

Eqs. 29 and 31 print the term without λ; Fig. 3 sweeps λ for the pointwise ranker too, so λ multiplies it here
(λ = 1 is the printed equation). Both losses average where the paper sums (1/n in eq. 12 vs Σ in eq. 28): a
constant factor, absorbed by the learning rate.

The bias terms are inputs (precomputed per document, ``biaslab.fairrank.bias``), so the authors' variants — |Ψ| on
the irrelevant side, ζ(d⁺) fixed to 1 — are choices of ``b`` made by the caller (``fairrank.loss`` in
params.yaml), not other losses.
"""

from __future__ import annotations

MODES = ("none", "penalty", "reward")
TARGETS = ("relevant", "irrelevant", "both")


def _check(mode: str, target: str, lam: float) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown regularisation mode {mode!r}: one of {MODES}")
    if target not in TARGETS:
        raise ValueError(f"unknown regularisation target {target!r}: one of {TARGETS}")
    if lam < 0:
        raise ValueError(f"λ = {lam} is negative: the penalty / reward weight must be >= 0 (fairrank.rankers)")


def _sign(mode: str) -> float:
    return {"none": 0.0, "penalty": 1.0, "reward": -1.0}[mode]


def pairwise_loss(score_pos, score_neg, term_pos, term_neg, *, mode: str, target: str, lam: float,
                  margin: float):
    """Eq. 17 (penalty, ``term`` = Ψ) / eq. 24 (reward, ``term`` = ζ) / eq. 12 (``mode="none"``), all tensors of
    shape [pairs]."""
    import torch

    _check(mode, target, lam)
    k = _sign(mode) * lam
    pos = torch.tanh(score_pos) + (k * term_pos if target in ("relevant", "both") else 0.0)
    neg = torch.tanh(score_neg) + (k * term_neg if target in ("irrelevant", "both") else 0.0)
    return torch.relu(margin - pos + neg).mean()


def pointwise_loss(score, label, term, *, mode: str, target: str, lam: float):
    """Eq. 29 (penalty) / eq. 31 (reward) / eq. 28 (``mode="none"``); ``label`` is 1 for relevant, 0 otherwise."""
    import torch

    _check(mode, target, lam)
    y = label.to(score.dtype)
    applies = {"relevant": y, "irrelevant": 1 - y, "both": torch.ones_like(y)}[target]
    z = score + _sign(mode) * lam * applies * term
    return (torch.sigmoid(z) - y).pow(2).mean()
