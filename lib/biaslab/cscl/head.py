"""cscl's task classifier head (§3.2, App. B.2): the paper's 2-layer MLP, the per-class weights of its cross-entropy,
and the head trained alone on fixed features — two-stage CL's second stage and the classifier on INLP-projected
features (the encoder runs once per text instead of once per epoch: the same objective, since a frozen encoder's
features do not change)."""

from __future__ import annotations

import numpy as np

from ..runtime import seed_everything


def mlp_head(dim: int, hidden: int, n_classes: int):
    """The paper's 2-layer MLP classifier."""
    from torch import nn

    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


def class_weights(labels, n_classes: int, how: str) -> np.ndarray | None:
    """The task classifier's per-class cross-entropy weights (``cscl.train.class_weight``): None for ``none`` (the
    paper's plain cross-entropy); for ``balanced`` scikit-learn's ``compute_class_weight("balanced")`` on the
    training labels, n / (k · n_c) — every class then weighs as much in the loss as it would in a balanced sample. A
    class absent from the training labels keeps weight 1."""
    if how == "none":
        return None
    if how != "balanced":
        raise ValueError(f"class_weight {how!r}: use none or balanced (cscl.train.class_weight)")
    from sklearn.utils.class_weight import compute_class_weight

    labels = np.asarray(labels)
    present = np.unique(labels)
    out = np.ones(n_classes)
    out[present] = compute_class_weight("balanced", classes=present, y=labels)
    return out


def fit_head(features: np.ndarray, labels: np.ndarray, n_classes: int, *, hidden: int, epochs: int,
             batch_size: int, learning_rate: float, seed: int, val: tuple[np.ndarray, np.ndarray] | None,
             patience: int | None, class_weights: np.ndarray | None = None):
    """The 2-layer MLP head trained with cross-entropy (Adam) on fixed features — two-stage CL's second stage and
    the classifier on INLP-projected features. With ``val`` and ``patience``: the epoch with the best validation
    loss is kept. ``class_weights``: the cross-entropy's per-class weights (:func:`class_weights`). Returns the head
    (an ``nn.Module``) and its log."""
    import torch
    import torch.nn.functional as F

    seed_everything(seed)
    head = mlp_head(features.shape[1], hidden, n_classes)
    opt = torch.optim.Adam(head.parameters(), lr=learning_rate)
    x, y = torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels, dtype=torch.long)
    w = None if class_weights is None else torch.as_tensor(class_weights, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    best, best_state, bad, log = float("inf"), None, 0, []
    for _epoch in range(epochs):
        head.train()
        for idx in torch.randperm(len(x), generator=g).split(batch_size):
            opt.zero_grad()
            F.cross_entropy(head(x[idx]), y[idx], weight=w).backward()
            opt.step()
        head.eval()
        with torch.no_grad():
            train_loss = float(F.cross_entropy(head(x), y, weight=w))
            val_loss = float(F.cross_entropy(head(torch.as_tensor(val[0], dtype=torch.float32)),
                                             torch.as_tensor(val[1], dtype=torch.long), weight=w)) if val is not None else None
        log.append({"train_loss": round(train_loss, 6), "val_loss": None if val_loss is None else round(val_loss, 6)})
        if val is not None and patience:
            if val_loss < best - 1e-6:
                best, best_state, bad = val_loss, {k: v.clone() for k, v in head.state_dict().items()}, 0
            else:
                bad += 1
                if bad >= patience:
                    break
    if best_state is not None:
        head.load_state_dict(best_state)
    head.eval()
    return head, log


def predict_head(head, features: np.ndarray) -> np.ndarray:
    """The class ``head`` predicts for each row of ``features``, computed on the device the head sits on (the GPU
    where training left a model's own head under ``common.device: cuda``; the CPU for a head :func:`fit_head`
    fitted) and returned as a NumPy array."""
    import torch

    x = torch.as_tensor(features, dtype=torch.float32, device=next(head.parameters()).device)
    with torch.no_grad():
        return head(x).argmax(1).cpu().numpy()
