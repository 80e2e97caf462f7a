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


def _contrastive_views(features, positives, candidates, temperature: float, contrast_mode: str):
    """The SupCon form shared by :func:`supcon_loss` and :func:`cs_infonce_loss` (Khosla et al. 2020, as the cscl
    public code ``models/contrastive_losses.py`` computes it, with base temperature = temperature):

        L = mean_anchors −(1/|P(i)|) Σ_{p∈P(i)} log( exp(z_i·z_p/τ) / Σ_{k∈D(i)} exp(z_i·z_k/τ) )

    ``features`` [batch, n_views, dim] (L2-normalised views); ``positives`` / ``candidates`` [batch, batch] boolean
    masks at the example level (P(i): positives, D(i): the denominator), tiled over views; an anchor is never its
    own positive or candidate. ``contrast_mode`` ``all``: every view is an anchor; ``one``: the first view only.
    Written with logsumexp over masked logits (the reference subtracts the row maximum; the same number)."""
    import torch

    if features.dim() < 3:
        raise ValueError(f"features must have shape [batch, n_views, dim], got {tuple(features.shape)}: stack the "
                         "views of each example on dimension 1 (features.unsqueeze(1) for a single view)")
    batch, n_views = features.shape[:2]
    flat = features.reshape(batch, n_views, -1).transpose(0, 1).reshape(batch * n_views, -1)  # view-major
    if contrast_mode == "all":
        anchors, n_anchor = flat, n_views
    elif contrast_mode == "one":
        anchors, n_anchor = flat[:batch], 1
    else:
        raise ValueError(f"unknown contrast_mode {contrast_mode!r}: use all or one")
    logits = anchors @ flat.T / temperature
    rows = torch.arange(n_anchor * batch, device=features.device)
    not_self = torch.ones_like(logits, dtype=torch.bool)
    not_self[rows, rows] = False
    pos = positives.to(features.device).repeat(n_anchor, n_views) & not_self
    den = candidates.to(features.device).repeat(n_anchor, n_views) & not_self
    n_pos = pos.sum(dim=1)
    if not bool((n_pos > 0).all()):
        raise ValueError("an anchor has no positive in this batch (a label with a single example and a single view): "
                         "use two views per example or a larger batch")
    log_den = torch.logsumexp(logits.masked_fill(~den, float("-inf")), dim=1, keepdim=True)
    log_prob = (logits - log_den).masked_fill(~pos, 0.0)
    return -(log_prob.sum(dim=1) / n_pos).mean()


def supcon_loss(features, labels=None, temperature: float = 0.1, contrast_mode: str = "all"):
    """Supervised contrastive loss L_sup (cscl §3.2, eq. 1; Khosla et al. 2020): the positives of an anchor are
    every other view with its label y, the denominator every other view. ``labels=None``: SimCLR (the only
    positive is the other view of the same example). Mean over anchors, as the public code (the paper's eq. 1
    writes the sum over anchors; the code's mean is the same objective up to a constant factor)."""
    import torch

    batch = features.shape[0]
    eye = torch.eye(batch, dtype=torch.bool, device=features.device)
    if labels is None:
        positives = eye
    else:
        labels = torch.as_tensor(labels, device=features.device).reshape(-1, 1)
        if labels.shape[0] != batch:
            raise ValueError(f"{labels.shape[0]} labels for a batch of {batch} examples")
        positives = labels == labels.T
    return _contrastive_views(features, positives, torch.ones_like(eye), temperature, contrast_mode)


def cs_infonce_loss(features, labels, groups, temperature: float = 0.1, contrast_mode: str = "all"):
    """Conditional supervised InfoNCE L_CS-InfoNCE (cscl §3.2, eq. 2; public code ``ConSupConLoss``): the only
    positive of an anchor is another view of the same example, and the denominator runs over the views of the
    examples with the same task label y AND the same protected group a. An example alone in its (y, a) cell
    contributes log 1 = 0 with two views. Mean over anchors, as the public code."""
    import torch

    batch = features.shape[0]
    labels = torch.as_tensor(labels, device=features.device).reshape(-1, 1)
    groups = torch.as_tensor(groups, device=features.device).reshape(-1, 1)
    if labels.shape[0] != batch or groups.shape[0] != batch:
        raise ValueError(f"{labels.shape[0]} labels and {groups.shape[0]} groups for a batch of {batch} examples")
    eye = torch.eye(batch, dtype=torch.bool, device=features.device)
    return _contrastive_views(features, eye, (labels == labels.T) & (groups == groups.T), temperature, contrast_mode)
