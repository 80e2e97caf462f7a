"""cscl methods (§3.2, §4.2): one model, several objectives, trained with the Hugging Face ``Trainer``.

:class:`FairClassifier` is an encoder (``AutoModel``, mean pooling) with the paper's 2-layer MLP head and, for the
adversarial baselines, discriminators. Its ``forward`` returns the loss of the chosen objective, so the stock
``Trainer`` (AdamW, linear schedule, seeds, early stopping, GPU when present) trains every method:

* ``ce`` — cross-entropy (the CE baseline, and the encoder INLP starts from);
* ``contrastive`` — two-stage CL, stage 1: L_sup + λ·L_CS-InfoNCE on two views (eq. 3);
* ``one_stage`` — (1 − γ)·CE + γ·L_sup + λ·L_CS-InfoNCE (eq. 4; CE on the first view, as the public code);
* ``adversarial`` — CE + λ_adv · Σ_k CE(D_k(GRL(z) ⊕ onehot(y)), a): discriminators that see the task label
  (the equalized-odds variant of Zhang et al. 2018 / Han et al. 2021) behind a gradient-reversal layer, and with
  ``n_adversaries`` > 1 and λ_diff > 0 the "diverse adversaries" difference loss λ_diff · Σ_{k<l} ‖H_kᵀ H_l‖²_F
  between the discriminators' hidden layers (Han et al. 2021).

Two-stage CL's second stage and INLP train only the head, on frozen-encoder features (:func:`fit_head`): the
encoder runs once per text instead of once per epoch — the same objective, since a frozen encoder's features do
not change (computed in eval mode, without dropout).

The contrastive representation z is the L2-normalised mean-pooled encoder output; the head reads the same pooled
output (the paper does not say whether a projection head sits between them; the public code passes the pooled
BERT output to both).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ..losses import cs_infonce_loss, supcon_loss
from ..runtime import progress_enabled, seed_everything, select_device
from ..train import _deterministic_log_callbacks

MODES = ("ce", "contrastive", "one_stage", "adversarial")


@dataclass(frozen=True)
class Objective:
    """The knobs of one method (``cscl.methods`` in params.yaml)."""

    mode: str
    lam: float = 0.0           # λ: weight of L_CS-InfoNCE (contrastive, one_stage) or λ_adv (adversarial)
    gamma: float = 0.0         # γ: one-stage weight of L_sup
    temperature: float | None = None  # τ of both contrastive losses (contrastive and one-stage objectives)
    n_adversaries: int = 1
    lam_diff: float = 0.0      # diverse adversaries' difference-loss weight
    adv_hidden: int = 256

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown cscl objective {self.mode!r}: choose from {list(MODES)}")
        for name in ("lam", "gamma", "lam_diff"):
            if getattr(self, name) < 0:
                raise ValueError(f"cscl objective {self.mode}: {name} = {getattr(self, name)} must be >= 0")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"cscl objective {self.mode}: gamma = {self.gamma} must be in [0, 1]")
        if self.mode in ("contrastive", "one_stage") and (self.temperature is None or self.temperature <= 0):
            raise ValueError(f"cscl objective {self.mode}: temperature must be given and > 0")


def _grad_reverse():
    import torch

    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return -grad

    return GradReverse.apply


def build_model(encoder_dir, n_classes: int, n_groups: int, objective: Objective, *, head_hidden: int, seed: int):
    """A :class:`FairClassifier` (an ``nn.Module``) on the encoder in ``encoder_dir``; the new layers are
    initialised from ``seed``."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from transformers import AutoModel

    reverse = _grad_reverse()

    class FairClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(encoder_dir))
            dim = self.encoder.config.hidden_size
            self.head = mlp_head(dim, head_hidden, n_classes)
            self.objective = objective
            self.n_classes, self.n_groups = n_classes, n_groups
            if objective.mode == "adversarial":
                self.adversaries = nn.ModuleList(
                    nn.ModuleDict({"hidden": nn.Sequential(nn.Linear(dim + n_classes, objective.adv_hidden), nn.ReLU()),
                                   "out": nn.Linear(objective.adv_hidden, n_groups)})
                    for _ in range(objective.n_adversaries))

        def pool(self, input_ids, attention_mask):
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(out.dtype)
            return (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

        def forward(self, input_ids, attention_mask, labels=None, groups=None, input_ids_2=None,
                    attention_mask_2=None):
            o = self.objective
            z1 = self.pool(input_ids, attention_mask)
            logits = self.head(z1)
            if labels is None:
                return {"logits": logits}
            losses = {}
            if o.mode in ("ce", "one_stage", "adversarial"):
                losses["ce"] = F.cross_entropy(logits, labels)
            if o.mode in ("contrastive", "one_stage"):
                if input_ids_2 is None:
                    raise ValueError(f"the {o.mode} objective needs a second view of every example (input_ids_2)")
                z2 = self.pool(input_ids_2, attention_mask_2)
                feats = F.normalize(torch.stack([z1, z2], dim=1), dim=-1)
                losses["sup"] = supcon_loss(feats, labels, temperature=o.temperature)
                losses["cs"] = cs_infonce_loss(feats, labels, groups, temperature=o.temperature)
            if o.mode == "adversarial":
                x = torch.cat([reverse(z1), F.one_hot(labels, self.n_classes).to(z1.dtype)], dim=1)
                hidden = [adv["hidden"](x) for adv in self.adversaries]
                losses["adv"] = sum(F.cross_entropy(adv["out"](h), groups) for adv, h in zip(self.adversaries, hidden,
                                                                                             strict=True))
                if len(hidden) > 1 and o.lam_diff > 0:
                    losses["diff"] = sum((hidden[i].T @ hidden[j]).pow(2).sum()
                                         for i in range(len(hidden)) for j in range(i + 1, len(hidden)))
            if o.mode == "ce":
                loss = losses["ce"]
            elif o.mode == "contrastive":
                loss = losses["sup"] + o.lam * losses["cs"]
            elif o.mode == "one_stage":
                loss = (1 - o.gamma) * losses["ce"] + o.gamma * losses["sup"] + o.lam * losses["cs"]
            else:
                loss = losses["ce"] + o.lam * losses["adv"] + o.lam_diff * losses.get("diff", 0.0)
            return {"loss": loss, "logits": logits}

    seed_everything(seed)
    return FairClassifier()


def mlp_head(dim: int, hidden: int, n_classes: int):
    """The paper's 2-layer MLP classifier."""
    from torch import nn

    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


class _Pairs:
    """Rows (one or two views) for the ``Trainer``, tokenised once up front (every text and every augmented copy in
    one batched tokenizer call); a second view is drawn per example and epoch from its augmented copies with a
    generator seeded by (seed, epoch, row)."""

    def __init__(self, tokenizer, texts, labels, groups, views, max_length, seed):
        def encode(strings):
            enc = tokenizer(list(strings), truncation=True, max_length=max_length)
            return [{"input_ids": i, "attention_mask": m} for i, m in zip(enc["input_ids"], enc["attention_mask"],
                                                                            strict=True)]

        self.rows, self.labels, self.groups = encode(texts), list(labels), list(groups)
        self.views = None
        if views is not None:
            flat = encode([v for options in views for v in options])
            starts = np.cumsum([0, *map(len, views)])
            self.views = [flat[a:b] for a, b in pairwise(starts)]
        self.seed, self.epoch = seed, 0

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        item = {"first": self.rows[i], "labels": int(self.labels[i]), "groups": int(self.groups[i])}
        if self.views is not None:
            options = self.views[i]
            item["second"] = options[np.random.default_rng([self.seed, self.epoch, i]).integers(len(options))]
        return item


def _collate(tokenizer):
    """Pads each view with the tokenizer (right padding, the pad token, attention 0)."""
    import torch

    def collate(items):
        first = tokenizer.pad([x["first"] for x in items], return_tensors="pt")
        batch = {"input_ids": first["input_ids"], "attention_mask": first["attention_mask"],
                 "labels": torch.tensor([x["labels"] for x in items]),
                 "groups": torch.tensor([x["groups"] for x in items])}
        if "second" in items[0]:
            second = tokenizer.pad([x["second"] for x in items], return_tensors="pt")
            batch["input_ids_2"], batch["attention_mask_2"] = second["input_ids"], second["attention_mask"]
        return batch

    return collate


def fit(model, tokenizer, train, *, val=None, views: Sequence[Sequence[str]] | None = None, epochs: int,
        batch_size: int, learning_rate: float, max_length: int, seed: int, device: str,
        patience: int | None = None) -> dict:
    """Train ``model`` on ``train`` (a frame with ``text``, ``y``, ``a``) with its objective. ``views``: per row,
    the augmented copies a second view is drawn from (contrastive and one-stage objectives). ``val`` with
    ``patience``: early stopping on the validation loss, best epoch kept (the paper: patience 3 in pre-training).
    Returns the training log (loss per epoch, epochs run)."""
    from transformers import EarlyStoppingCallback, Trainer, TrainerCallback, TrainingArguments

    seed_everything(seed)
    needs_views = model.objective.mode in ("contrastive", "one_stage")
    if needs_views and views is None:
        raise ValueError(f"the {model.objective.mode} objective needs augmented views (cscl.augment)")
    if needs_views and len(views) != len(train):
        raise ValueError(f"{len(views)} view lists for {len(train)} training rows")
    if needs_views and batch_size < 2:
        raise ValueError("contrastive batches need at least 2 examples (cscl batch_size)")
    data = _Pairs(tokenizer, train["text"], train["y"], train["a"], views if needs_views else None, max_length, seed)
    eval_data = None
    if val is not None and patience:
        eval_data = _Pairs(tokenizer, val["text"], val["y"], val["a"], [[t] for t in val["text"]] if needs_views
                           else None, max_length, seed)

    class Epochs(TrainerCallback):
        def on_epoch_begin(self, args, state, control, **kwargs):
            data.epoch = int(state.epoch or 0)

    device = select_device(device)
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(
            output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            per_device_eval_batch_size=max(batch_size, 32), learning_rate=learning_rate, seed=seed, data_seed=seed,
            report_to="none", eval_strategy="epoch" if eval_data else "no",
            save_strategy="epoch" if eval_data else "no", save_total_limit=1, load_best_model_at_end=bool(eval_data),
            metric_for_best_model="eval_loss", greater_is_better=False, disable_tqdm=not progress_enabled(),
            use_cpu=device == "cpu", logging_strategy="epoch", dataloader_num_workers=0, remove_unused_columns=False)
        callbacks = [Epochs()] + ([EarlyStoppingCallback(early_stopping_patience=patience)] if eval_data else [])
        trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=eval_data,
                          data_collator=_collate(tokenizer), callbacks=callbacks)
        _deterministic_log_callbacks(trainer)
        result = trainer.train()
    losses = [round(float(h["loss"]), 6) for h in trainer.state.log_history if "loss" in h]
    return {"train_loss": float(result.training_loss), "loss_per_epoch": losses,
            "epochs_run": float(trainer.state.epoch or 0)}


def encode(model, tokenizer, texts: Sequence[str], *, max_length: int, batch_size: int) -> np.ndarray:
    """Mean-pooled encoder features of ``texts`` (eval mode, no gradient), in input order."""
    import torch

    model.eval()
    device = next(model.parameters()).device
    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            enc = tokenizer(list(texts[s:s + batch_size]), truncation=True, max_length=max_length, padding=True,
                            return_tensors="pt").to(device)
            out.append(model.pool(enc["input_ids"], enc["attention_mask"]).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.encoder.config.hidden_size), np.float32)


def fit_head(features: np.ndarray, labels: np.ndarray, n_classes: int, *, hidden: int, epochs: int,
             batch_size: int, learning_rate: float, seed: int, val: tuple[np.ndarray, np.ndarray] | None = None,
             patience: int | None = None):
    """The 2-layer MLP head trained with cross-entropy (Adam) on fixed features — two-stage CL's second stage and
    the classifier on INLP-projected features. With ``val`` and ``patience``: the epoch with the best validation
    loss is kept. Returns the head (an ``nn.Module``) and its log."""
    import torch
    import torch.nn.functional as F

    seed_everything(seed)
    head = mlp_head(features.shape[1], hidden, n_classes)
    opt = torch.optim.Adam(head.parameters(), lr=learning_rate)
    x, y = torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    best, best_state, bad, log = float("inf"), None, 0, []
    for _epoch in range(epochs):
        head.train()
        for idx in torch.randperm(len(x), generator=g).split(batch_size):
            opt.zero_grad()
            F.cross_entropy(head(x[idx]), y[idx]).backward()
            opt.step()
        head.eval()
        with torch.no_grad():
            train_loss = float(F.cross_entropy(head(x), y))
            val_loss = float(F.cross_entropy(head(torch.as_tensor(val[0], dtype=torch.float32)),
                                             torch.as_tensor(val[1], dtype=torch.long))) if val is not None else None
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
    import torch

    with torch.no_grad():
        return head(torch.as_tensor(features, dtype=torch.float32)).argmax(1).numpy()
