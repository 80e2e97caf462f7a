"""Objectives of the five papers, each tested against a direct re-computation (tests/test_losses.py)."""

from __future__ import annotations


def soft_hamming_loss(logits, targets, tau: float = 0.7):
    """Differentiable Hamming loss (intersect App. A, eq. 1): mean_i [p_i (1 − y_i) + (1 − p_i) y_i] with
    p = sigmoid(z / τ), averaged over labels and examples."""
    import torch

    p = torch.sigmoid(logits / tau)
    y = targets.to(p.dtype)
    return (p * (1 - y) + (1 - p) * y).mean()
