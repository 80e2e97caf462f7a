"""cscl methods (§3.2, §4.2): one model, several objectives, trained with the Hugging Face ``Trainer``.

:class:`FairClassifier` is an encoder (``AutoModel``, mean pooling) with the paper's 2-layer MLP head and, for the
adversarial baselines, discriminators. Its ``forward`` returns the loss of the chosen objective, so the stock
``Trainer`` (AdamW, linear schedule, seeds, early stopping, GPU when present) trains every method:

* ``ce`` — cross-entropy (the CE baseline, and the encoder INLP starts from);
* ``contrastive`` — two-stage CL, stage 1: L_sup + λ·L_CS-InfoNCE on two views (eq. 3);
* ``one_stage`` — (1 − γ)·CE + γ·L_sup + λ·L_CS-InfoNCE (eq. 4; CE on the first view, as the public code);
* ``adversarial`` — CE + λ_adv · (1/K) Σ_k CE(D_k(GRL(z) ⊕ onehot(y)), a): K discriminators that see the task
  label (the equalized-odds variant of Zhang et al. 2018 / Han et al. 2021) behind a gradient-reversal layer,
  averaged over the K as in Han et al.'s code; with ``n_adversaries`` > 1 and λ_diff > 0 the "diverse adversaries"
  difference loss λ_diff · Σ_{k<l} :func:`difference_loss` (H_k, H_l) between the discriminators' hidden layers
  (Han et al. 2021; cscl App. B), computed on the *detached* representation: as in Han et al.'s code, it trains the
  discriminators to differ and never reaches the encoder (through the reversal layer it would push the encoder,
  with weight λ_diff, to make them alike).
  ``schedule`` says who trains the discriminators. ``joint``: one loss, one optimizer, each step moves the encoder
  (through the reversal layer) and the discriminators together. ``alternating``: Han et al.'s code (fairlib's
  default ``adv_update_frequency: Batch``): before every encoder step the discriminators take their own Adam step
  (``head_learning_rate``) on the batch's detached representation (encoder in eval mode) with their CE and the
  difference loss (:meth:`FairClassifier.adversary_step`); the encoder step then reads them with frozen weights.

Two-stage CL's second stage and INLP train only the head, on frozen-encoder features (:func:`biaslab.cscl.head.fit_head`): the
encoder runs once per text instead of once per epoch — the same objective, since a frozen encoder's features do
not change (computed in eval mode, without dropout).

**Partial fine-tuning on CPU** (``trainable_layers``, an addition behind a parameter; the paper fine-tunes every
layer): with k trainable layers, the bottom n − k layers are frozen, their output for every text and augmented view
is computed once (:func:`compute_states`, a :class:`StateBank` the data stage saves) and each training step runs only
the top k layers, the pooling and the head — the same objective on a smaller set of weights, ≈ n / k times cheaper
per step. The frozen layers run in eval mode (no dropout there). The layer running is :mod:`biaslab.frozen`'s,
shared with ragcontrol's partially fine-tuned embedders. ``trainable_layers: null`` is the paper's full
fine-tuning on token ids.

The contrastive representation z is the L2-normalised mean-pooled encoder output; the head reads the same pooled
output (the paper does not say whether a projection head sits between them; the public code passes the pooled
BERT output to both).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import get_args

import numpy as np

from ..frozen import StateBank, bottom_states, pad_states, run_layers, save_npz  # noqa: F401 (re-exported)
from ..gradcache import grad_cached_loss
from ..layers import grad_reverse
from ..losses import cs_infonce_loss, supcon_loss
from ..runtime import progress_enabled, seed_everything, select_device
from ..train import _deterministic_log_callbacks
from .config import NEEDS, Schedule
from .head import mlp_head

MODES = ("ce", "contrastive", "one_stage", "adversarial")
SCHEDULES = get_args(Schedule)


@dataclass(frozen=True)
class Objective:
    """The knobs of one method (``cscl.methods`` in params.yaml) at one λ. ``None`` = not used by this mode; each
    mode's own knobs (:data:`biaslab.cscl.config.NEEDS`, the table params.yaml is checked with) are required, and
    the stage builds every objective from params (:func:`biaslab.cscl.experiment.objective`)."""

    mode: str
    lam: float = 0.0           # λ: weight of L_CS-InfoNCE (contrastive, one_stage) or λ_adv (adversarial)
    gamma: float | None = None  # γ: one-stage weight of L_sup
    temperature: float | None = None  # τ of both contrastive losses (contrastive and one-stage objectives)
    n_adversaries: int | None = None
    lam_diff: float | None = None  # diverse adversaries' difference-loss weight
    adv_hidden: int | None = None
    schedule: str | None = None    # adversarial: joint | alternating (who trains the discriminators, see above)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown cscl objective {self.mode!r}: choose from {list(MODES)}")
        for name in NEEDS[self.mode]:
            if getattr(self, name) is None:
                raise ValueError(f"cscl objective {self.mode}: {name} must be given")
        for name in ("lam", "gamma", "lam_diff"):
            if (getattr(self, name) or 0) < 0:
                raise ValueError(f"cscl objective {self.mode}: {name} = {getattr(self, name)} must be >= 0")
        if self.gamma is not None and not 0 <= self.gamma <= 1:
            raise ValueError(f"cscl objective {self.mode}: gamma = {self.gamma} must be in [0, 1]")
        if self.temperature is not None and self.temperature <= 0:
            raise ValueError(f"cscl objective {self.mode}: temperature must be > 0")
        if self.schedule is not None and self.schedule not in SCHEDULES:
            raise ValueError(f"cscl objective {self.mode}: schedule {self.schedule!r} is not one of {SCHEDULES}")


def build_model(encoder_dir, n_classes: int, n_groups: int, objective: Objective, *, head_hidden: int, seed: int,
                grad_cache_chunk: int, n_frozen: int = 0, class_weights: np.ndarray | None = None):
    """A :class:`FairClassifier` (an ``nn.Module``) on the encoder in ``encoder_dir``; the new layers are
    initialised from ``seed``. ``n_frozen`` > 0: only the layers above the first ``n_frozen`` are kept and trained;
    the model then reads the frozen layers' output (a :class:`StateBank`) instead of token ids. ``grad_cache_chunk``
    > 0: training batches are encoded that many examples at a time with gradient caching
    (:func:`biaslab.gradcache.grad_cached_loss`; the same loss and gradient, the memory of one chunk) — how the paper
    reaches contrastive batches of 256 (§4.1); 0 = the whole batch at once. ``class_weights``: the task
    cross-entropy's per-class weights (:func:`class_weights`; None = unweighted)."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from transformers import AutoModel

    reverse = grad_reverse()

    class Discriminator(nn.ModuleDict):
        """One discriminator: ``hidden`` (the layer the difference loss reads), then ``out``."""

        def __init__(self, hidden, out):
            super().__init__({"hidden": hidden, "out": out})

        def forward(self, x):
            return self["out"](self["hidden"](x))

    class FairClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            encoder = AutoModel.from_pretrained(str(encoder_dir))
            self.config = encoder.config
            self.n_frozen = check_frozen(n_frozen, encoder.config.num_hidden_layers)
            if self.n_frozen:  # keep the trainable top only
                self.layers = nn.ModuleList(list(encoder.encoder.layer)[self.n_frozen:])
            else:
                self.encoder = encoder
            dim = encoder.config.hidden_size
            self.head = mlp_head(dim, head_hidden, n_classes)
            self.objective = objective
            self.n_classes, self.n_groups = n_classes, n_groups
            self.register_buffer("class_weight", None if class_weights is None else
                                 torch.as_tensor(class_weights, dtype=torch.float32), persistent=False)
            if grad_cache_chunk < 0:
                raise ValueError(f"grad_cache_chunk = {grad_cache_chunk}: use 0 (off) or a chunk size >= 1 "
                                 "(cscl.train.grad_cache_chunk)")
            self.grad_cache_chunk = int(grad_cache_chunk)
            if objective.mode == "adversarial":
                self.adversaries = nn.ModuleList(
                    Discriminator(nn.Sequential(nn.Linear(dim + n_classes, objective.adv_hidden), nn.ReLU()),
                                  nn.Linear(objective.adv_hidden, n_groups))
                    for _ in range(objective.n_adversaries))

        def pool(self, x, mask):
            """Mean-pooled output for token ids ``x`` [batch, len] or, with frozen layers, their states ``x``
            [batch, len, dim]; ``mask`` [batch, len] marks real tokens."""
            if self.n_frozen:
                out = run_layers(self.layers, self.config, x, mask)
            else:
                out = self.encoder(input_ids=x, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(out.dtype)
            return (out * m).sum(1) / m.sum(1).clamp(min=1e-9)

        def forward(self, x, mask, labels=None, groups=None, x_2=None, mask_2=None):
            o = self.objective
            if labels is None:
                return {"logits": self.head(self.pool(x, mask))}
            views = [(x, mask)]
            if o.mode in ("contrastive", "one_stage"):
                if x_2 is None:
                    raise ValueError(f"the {o.mode} objective needs a second view of every example (x_2)")
                views.append((x_2, mask_2))
            if self.grad_cache_chunk and self.training and torch.is_grad_enabled():
                new = [p for n, p in self.named_parameters() if not n.startswith(("encoder.", "layers."))]
                loss, logits = grad_cached_loss(self.pool, views, lambda reps: self.objective_loss(reps, labels, groups),
                                                chunk_size=self.grad_cache_chunk, loss_params=new)
            else:
                loss, logits = self.objective_loss([self.pool(*v) for v in views], labels, groups)
            return {"loss": loss, "logits": logits}

        def objective_loss(self, reps, labels, groups):
            """(loss, logits) of the objective on the pooled representations ``reps`` (one per view)."""
            o = self.objective
            z1 = reps[0]
            logits = self.head(z1)
            losses = {}
            if o.mode in ("ce", "one_stage", "adversarial"):
                losses["ce"] = F.cross_entropy(logits, labels, weight=self.class_weight)
            if o.mode in ("contrastive", "one_stage"):
                feats = F.normalize(torch.stack([z1, reps[1]], dim=1), dim=-1)
                losses["sup"] = supcon_loss(feats, labels, temperature=o.temperature)
                losses["cs"] = cs_infonce_loss(feats, labels, groups, temperature=o.temperature)
            if o.mode == "adversarial":
                onehot = F.one_hot(labels, self.n_classes).to(z1.dtype)
                x = torch.cat([reverse(z1), onehot], dim=1)
                if self.alternating:  # the discriminators' weights are read, not trained, in the encoder's step
                    from torch.func import functional_call

                    frozen = [{k: v.detach() for k, v in adv.named_parameters()} for adv in self.adversaries]
                    losses["adv"] = sum(F.cross_entropy(functional_call(adv, w, (x,)), groups)
                                        for adv, w in zip(self.adversaries, frozen, strict=True)) / len(frozen)
                else:
                    losses["adv"], losses["diff"] = self.adversary_losses(x, groups)
            if o.mode == "ce":
                loss = losses["ce"]
            elif o.mode == "contrastive":
                loss = losses["sup"] + o.lam * losses["cs"]
            elif o.mode == "one_stage":
                loss = (1 - o.gamma) * losses["ce"] + o.gamma * losses["sup"] + o.lam * losses["cs"]
            else:
                loss = losses["ce"] + o.lam * losses["adv"] + o.lam_diff * losses.get("diff", 0.0)
            return loss, logits

        @property
        def alternating(self) -> bool:
            return self.objective.mode == "adversarial" and self.objective.schedule == "alternating"

        def adversary_losses(self, x, groups):
            """(mean CE of the discriminators on ``x``, the difference loss Σ_{k<l} between their hidden layers — 0
            with one discriminator or λ_diff = 0). The difference loss trains the discriminators only: when ``x``
            carries a gradient (the joint step, through the reversal layer) it reads their hidden layers on
            ``x.detach()``; when it does not (the alternating step) the same hidden layers serve both terms."""
            hidden = [adv["hidden"](x) for adv in self.adversaries]
            ce = sum(F.cross_entropy(adv["out"](h), groups)
                     for adv, h in zip(self.adversaries, hidden, strict=True)) / len(self.adversaries)
            if len(self.adversaries) < 2 or not self.objective.lam_diff:
                return ce, 0.0
            if x.requires_grad:
                hidden = [adv["hidden"](x.detach()) for adv in self.adversaries]
            return ce, sum(difference_loss(hidden[i], hidden[j])
                           for i in range(len(hidden)) for j in range(i + 1, len(hidden)))

        def adversary_step(self, optimizer, x, mask, labels, groups, **_):
            """The discriminators' own step of the alternating schedule (Han et al.'s ``adv_train_batch``): the
            batch's representation with the encoder in eval mode and no gradient, then CE + λ_diff · difference
            loss on the discriminators alone."""
            was_training = self.training
            self.eval()
            with torch.no_grad():
                z = self.pool(x, mask)
            self.train(was_training)
            ce, diff = self.adversary_losses(torch.cat([z, F.one_hot(labels, self.n_classes).to(z.dtype)], dim=1),
                                             groups)
            optimizer.zero_grad(set_to_none=True)
            (ce + self.objective.lam_diff * diff).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    seed_everything(seed)
    return FairClassifier()


def difference_loss(h1, h2):
    """The difference loss between two discriminators' hidden layers [batch, hidden] (Han et al. 2021, after
    Bousmalis et al. 2016): each example's hidden vector scaled to unit length (the norm held constant in the
    gradient), then the mean over example pairs (i, j) of (h1_i · h2_j)² — the form of Han et al.'s code, bounded
    in [0, 1], so that λ_diff = 100 weighs it as their grid intends. 0 when every hidden vector of one is
    orthogonal to every one of the other."""
    u1 = h1 / (h1.norm(dim=1, keepdim=True).detach() + 1e-6)
    u2 = h2 / (h2.norm(dim=1, keepdim=True).detach() + 1e-6)
    return (u1 @ u2.T).pow(2).mean()


def check_frozen(n_frozen: int, n_layers: int) -> int:
    if not 0 <= n_frozen < n_layers:
        raise ValueError(f"{n_frozen} frozen layers of a {n_layers}-layer encoder: cscl.train.trainable_layers must be "
                         f"between 1 and {n_layers} (or null for all)")
    return int(n_frozen)


def compute_states(encoder_dir, texts: Sequence[str], *, n_frozen: int, max_length: int, batch_size: int,
                   device: str) -> StateBank:
    """Run the first ``n_frozen`` layers (embeddings included, eval mode) once over the distinct ``texts``, each
    tokenized once, in :func:`biaslab.frozen.bottom_states`' row-independent batches: a task's texts get the states
    they get alone, whatever augmented views (another ``cscl.augment`` setting, the sensitivity study's variants)
    share the call."""
    from transformers import AutoModel, AutoTokenizer

    from ..embed.tokens import read_inputs
    from ..frozen import tokenized

    texts = list(dict.fromkeys(texts))
    if not n_frozen:
        return StateBank(0)
    if not texts:
        return StateBank(n_frozen)
    tok = AutoTokenizer.from_pretrained(str(encoder_dir))
    model = AutoModel.from_pretrained(str(encoder_dir))
    check_frozen(n_frozen, model.config.num_hidden_layers)
    model.to(select_device(device))
    read = tokenized(tok, texts, max_length=max_length)
    parts = bottom_states(model, lambda idx: read_inputs(read, idx), read.lengths, n_frozen=n_frozen,
                          batch_size=batch_size)
    offsets = np.cumsum([0, *(len(p) for p in parts)])
    return StateBank(n_frozen, texts, np.concatenate(parts).astype(np.float16), offsets)


class _Pairs:
    """Rows (one or two views) for the ``Trainer``, tokenised once up front (every text and every augmented copy in
    one batched tokenizer call); a second view is drawn per example and epoch from its augmented copies with a
    generator seeded by (seed, epoch, row)."""

    def __init__(self, tokenizer, texts, labels, groups, views, max_length, seed, bank: StateBank | None = None):
        def encode(strings):
            if bank is not None and bank.n_frozen:
                return [{"states": bank.get(t)} for t in strings]
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


def _pad(tokenizer, views: list[dict]):
    """(x, mask) for one view of a batch: token ids padded by the tokenizer, or frozen states zero-padded."""
    if "states" in views[0]:
        return pad_states([v["states"] for v in views])
    enc = tokenizer.pad(views, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def _collate(tokenizer):
    """Pads each view (right padding, attention 0)."""
    import torch

    def collate(items):
        x, mask = _pad(tokenizer, [it["first"] for it in items])
        batch = {"x": x, "mask": mask, "labels": torch.tensor([it["labels"] for it in items]),
                 "groups": torch.tensor([it["groups"] for it in items])}
        if "second" in items[0]:
            batch["x_2"], batch["mask_2"] = _pad(tokenizer, [it["second"] for it in items])
        return batch

    return collate


def adversary_diagnostics(model, features, labels, groups) -> dict:
    """What the trained discriminators of an adversarial ``model`` read, on ``features`` (pooled, e.g. the test
    rows') ⊕ the one-hot class ``labels``: ``adv_active``, the share of their hidden units that fire, and
    ``adv_group_accuracy``, their accuracy on ``groups`` (each a mean over the discriminators). Silent units and an
    accuracy at the largest group's share mean the encoder got no adversarial signal (docs/cscl.md: the diverse
    adversaries at λ_diff = 100)."""
    import torch
    import torch.nn.functional as F

    dev = next(model.adversaries.parameters()).device
    x = torch.cat([torch.as_tensor(np.asarray(features), dtype=torch.float32),
                   F.one_hot(torch.as_tensor(np.asarray(labels)), model.n_classes).float()], dim=1).to(dev)
    groups = torch.as_tensor(np.asarray(groups), device=dev)
    with torch.no_grad():
        hidden = [adv["hidden"](x) for adv in model.adversaries]
        active = torch.stack([(h > 0).float().mean() for h in hidden]).mean()
        accuracy = torch.stack([(adv["out"](h).argmax(1) == groups).float().mean()
                                for adv, h in zip(model.adversaries, hidden, strict=True)]).mean()
    return {"adv_active": float(active), "adv_group_accuracy": float(accuracy)}


def fit(model, tokenizer, train, *, val=None, views: Sequence[Sequence[str]] | None = None,
        val_views: Sequence[Sequence[str]] | None = None, bank: StateBank | None = None, epochs: int,
        batch_size: int, learning_rate: float, head_learning_rate: float, max_length: int, seed: int, device: str,
        patience: int | None) -> dict:
    """Train ``model`` on ``train`` (a frame with ``text``, ``y``, ``a``) with its objective. ``views``: per row,
    the augmented copies a second view is drawn from (contrastive and one-stage objectives); ``val_views`` the same
    for ``val`` (default: the validation text itself). ``val`` with ``patience``: early stopping on the validation
    loss, best epoch kept (the paper: patience 3 in pre-training). ``bank``: the frozen layers' states when the
    model trains only its top layers. The encoder's layers train at ``learning_rate``, the new layers (head,
    discriminators) at ``head_learning_rate`` — AdamW in parameter groups, the Trainer's linear schedule on both;
    under the ``alternating`` schedule the discriminators have their own Adam at ``head_learning_rate`` instead.
    Returns the training log (loss per epoch, epochs run)."""
    import torch
    from transformers import EarlyStoppingCallback, Trainer, TrainerCallback, TrainingArguments

    seed_everything(seed)
    needs_views = model.objective.mode in ("contrastive", "one_stage")
    if needs_views and views is None:
        raise ValueError(f"the {model.objective.mode} objective needs augmented views (cscl.augment)")
    if needs_views and len(views) != len(train):
        raise ValueError(f"{len(views)} view lists for {len(train)} training rows")
    if needs_views and batch_size < 2:
        raise ValueError("contrastive batches need at least 2 examples (cscl batch_size)")
    if bool(getattr(model, "n_frozen", 0)) != bool(bank is not None and bank.n_frozen):
        raise ValueError("a model with frozen layers trains on their states and a full model on token ids: pass the "
                         "task's StateBank exactly when cscl.train.trainable_layers is below the encoder's depth")
    data = _Pairs(tokenizer, train["text"], train["y"], train["a"], views if needs_views else None, max_length, seed,
                  bank)
    eval_data = None
    if val is not None and patience:
        if needs_views and val_views is None:
            val_views = [[t] for t in val["text"]]
        eval_data = _Pairs(tokenizer, val["text"], val["y"], val["a"], val_views if needs_views else None,
                           max_length, seed, bank)

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
        alternating = getattr(model, "alternating", False)
        own = ("adversaries.",) if alternating else ()  # trained by their own optimizer, not the encoder's
        encoder = [p for n, p in model.named_parameters() if n.startswith(("encoder.", "layers."))]
        new = [p for n, p in model.named_parameters() if not n.startswith(("encoder.", "layers.", *own))]
        optimizer = torch.optim.AdamW([{"params": encoder, "lr": learning_rate},
                                       {"params": new, "lr": head_learning_rate}], weight_decay=0.0)
        if alternating:
            adversary_optimizer = torch.optim.Adam(model.adversaries.parameters(), lr=head_learning_rate)

            class AlternatingTrainer(Trainer):
                def training_step(self, model, inputs, num_items_in_batch=None):
                    inputs = self._prepare_inputs(inputs)
                    model.adversary_step(adversary_optimizer, **inputs)
                    return super().training_step(model, inputs, num_items_in_batch)

        trainer = (AlternatingTrainer if alternating else Trainer)(
            model=model, args=args, train_dataset=data, eval_dataset=eval_data, data_collator=_collate(tokenizer),
            callbacks=callbacks, optimizers=(optimizer, None))
        _deterministic_log_callbacks(trainer)
        result = trainer.train()
    losses = [round(float(h["loss"]), 6) for h in trainer.state.log_history if "loss" in h]
    return {"train_loss": float(result.training_loss), "loss_per_epoch": losses,
            "epochs_run": float(trainer.state.epoch or 0)}


def encode(model, tokenizer, texts: Sequence[str], *, max_length: int, batch_size: int,
           bank: StateBank | None = None) -> np.ndarray:
    """Mean-pooled encoder features of ``texts`` (eval mode, no gradient), in input order."""
    import torch

    model.eval()
    device = next(model.parameters()).device
    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            chunk = list(texts[s:s + batch_size])
            if getattr(model, "n_frozen", 0):
                x, mask = _pad(tokenizer, [{"states": bank.get(t)} for t in chunk])
            else:
                enc = tokenizer(chunk, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
                x, mask = enc["input_ids"], enc["attention_mask"]
            out.append(model.pool(x.to(device), mask.to(device)).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.hidden_size), np.float32)
