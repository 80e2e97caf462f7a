"""Objectives of the five papers, each tested against a direct re-computation (tests/test_losses.py)."""

from __future__ import annotations


def soft_hamming_loss(logits, targets, tau: float):
    """Differentiable Hamming loss (intersect App. A, eq. 1): mean_i [p_i (1 − y_i) + (1 − p_i) y_i] with
    p = sigmoid(z / τ), averaged over labels and examples."""
    import torch

    p = torch.sigmoid(logits / tau)
    y = targets.to(p.dtype)
    return (p * (1 - y) + (1 - p) * y).mean()


def nt_xent(queries, passages, tau: float):
    """NT-Xent with in-batch negatives (SimCSE, Gao et al. 2021; ragfair §3.4.2): for L2-normalised q_i, p_j,
    mean_i −log softmax_j(cos(q_i, p_j) / τ)[i]. Written out because it is three lines and must share one forward
    pass with the fairness term; sentence-transformers' MultipleNegativesRankingLoss is the same quantity with
    scale = 1/τ (tested)."""
    import torch
    import torch.nn.functional as F

    q = F.normalize(queries, dim=-1)
    p = F.normalize(passages, dim=-1)
    logits = q @ p.T / tau
    return F.cross_entropy(logits, torch.arange(len(q), device=q.device))


def fairness_gap(queries, biased_a, biased_b, variant: str):
    """ragfair's fairness regulariser between the two biased instantiations of each neutral query.

    * ``squared`` (§4.3, the one the experiments used): mean_i (cos(q_i, a_i) − cos(q_i, b_i))²;
    * ``mean_gap`` (§3.4.2): |μ_a − μ_b| with μ_g the batch mean of cos(q_i, g_i)."""
    import torch.nn.functional as F

    sa = F.cosine_similarity(queries, biased_a, dim=-1)
    sb = F.cosine_similarity(queries, biased_b, dim=-1)
    if variant == "squared":
        return ((sa - sb) ** 2).mean()
    if variant == "mean_gap":
        return (sa.mean() - sb.mean()).abs()
    raise ValueError(f"unknown fairness variant {variant!r}: use squared or mean_gap")


def multi_positive_contrastive(queries, documents, labels, scale: float):
    """ragcontrol's reverse-biasing objective (App. "Training", eq. 1; public code ``embedder/loss.py``):

        L = mean_i −log( Σ_{k∈P_i} exp(s·cos(q_i, d⁺_k)) / (Σ_{k∈P_i} exp(s·cos(q_i, d⁺_k)) + Σ_{j∈N_i} exp(s·cos(q_i, d⁻_j))) )

    with each query's own positives and negatives only (no in-batch negatives) and s = 50 (the paper's
    "temperature 50" is this scale). Computed as logsumexp(all) − logsumexp(positives), which is the same number
    without the overflow of a raw exp(50·cos) in half precision (the reference exponentiates directly).

    ``queries`` [B, d]; ``documents`` [B, M, d]; ``labels`` [B, M] with 1 = positive, −1 = negative, 0 = padding
    (queries have different numbers of documents). Every query needs at least one positive."""
    import torch
    import torch.nn.functional as F

    q = F.normalize(queries, dim=-1)
    d = F.normalize(documents, dim=-1)
    s = scale * torch.einsum("bd,bmd->bm", q, d)
    pos, used = labels > 0, labels != 0
    if not bool(pos.any(dim=1).all()):
        raise ValueError("every query needs at least one positive document")
    neg_inf = torch.finfo(s.dtype).min
    lse_pos = torch.logsumexp(s.masked_fill(~pos, neg_inf), dim=1)
    lse_all = torch.logsumexp(s.masked_fill(~used, neg_inf), dim=1)
    return (lse_all - lse_pos).mean()
