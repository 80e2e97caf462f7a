"""Debiasing an encoder (ragfair §3.4, §3.5, §4.3): LoRA, WiSE-FT partial fine-tuning, attention-head masking, and
the fairness-aware objective they are trained with.

Objective (§3.4.2): L = NT-Xent(query, neutral passage; τ) + α · L_fair + β · ‖ΔW‖²_F, where L_fair is the
§4.3 squared gap between the query's similarities to the two biased instantiations (or the §3.4.2 batch-mean gap,
``fair_variant``), and ΔW is exactly the weight change: scaling · B·A for every LoRA module, θ − θ_base for every
fully trained tensor. Training uses sentence-transformers' trainer (AdamW, linear warm-up, gradient clipping,
batches without repeated texts) with :class:`FairContrastiveLoss`.

* **LoRA** (peft): rank r, scaling α_lora / r, dropout, on the self-attention query/key/value projections; merged
  into the weights after training, so every checkpoint is a plain sentence-transformers folder.
* **WiSE-FT**: only the top ℓ transformer layers train; afterwards θ = (1 − λ) θ_base + λ θ_ft.
* **LoRA + WiSE-FT** (the paper's "dual adaptation", no further detail given): LoRA on every layer *and* the top ℓ
  layers trainable; after merging LoRA, the whole model is interpolated with the base by λ.
* **Head masking** (§3.4.1): heads ranked by b_ij = ∂|ES_SEAT| / ∂m_ij at m = 1 (the mask scales each head's output
  before the attention output projection, as in MultiHead_i = Concat_j(m_ij · head_ij) W^O); the top ``fraction``
  with positive b are masked by zeroing their columns of W^O — the same function as m_ij = 0, kept in the weights.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..losses import fairness_gap, nt_xent
from ..train import encoder_layers, interpolate_weights, transformer

COLUMNS = ("query", "passage", "biased_stereotyped", "biased_non_stereotyped")


@dataclass
class MethodConfig:
    """One debiasing recipe (built from params by :func:`method_config`). ``lora`` and ``wiseft`` may be combined;
    ``alpha`` = 0 is the no-fairness control."""

    lora: bool
    wiseft: bool
    alpha: float
    beta: float
    tau: float
    fair_variant: str
    lora_r: int
    lora_alpha: int
    lora_dropout: float
    lora_targets: Sequence[str]
    wiseft_layers: int
    wiseft_lambda: float
    extra: dict = field(default_factory=dict)

    @property
    def trains(self) -> bool:
        return self.lora or self.wiseft


def method_config(train_params, run: str) -> MethodConfig:
    """The recipe of ``ragfair.train.runs[run]``, unset fields taken from ``ragfair.train``."""
    r = train_params.runs[run]

    def pick(name):
        v = getattr(r, name)
        return getattr(train_params, name) if v is None else v

    return MethodConfig(lora=r.lora, wiseft=r.wiseft, alpha=r.alpha, beta=pick("beta"), tau=pick("tau"),
                        fair_variant=train_params.fair_variant, lora_r=pick("lora_r"), lora_alpha=pick("lora_alpha"),
                        lora_dropout=train_params.lora_dropout, lora_targets=tuple(train_params.lora_targets),
                        wiseft_layers=pick("wiseft_layers"), wiseft_lambda=pick("wiseft_lambda"))


def app61_grid() -> dict[str, dict]:
    """The App. 6.1 search space as ``ragfair.train.runs``: α ∈ {0.5, 1}, β ∈ {1e-5, 1e-4}, τ ∈ {0.04, 0.07} ×
    (LoRA r ∈ {8, 16} × scaling ∈ {16, 32}; WiSE-FT layers ∈ {1, 2, 3} × mixing ∈ {0.25, 0.75}; every LoRA ×
    WiSE-FT pair) = 8 × (4 + 6 + 24) = 272 runs, the paper's count (§4.4)."""
    from itertools import product

    loras = [{"lora": True, "lora_r": r, "lora_alpha": a} for r, a in product((8, 16), (16, 32))]
    wises = [{"wiseft": True, "wiseft_layers": n, "wiseft_lambda": lam} for n, lam in product((1, 2, 3), (0.25, 0.75))]
    methods = loras + wises + [lo | wi for lo, wi in product(loras, wises)]
    runs = {}
    for alpha, beta, tau in product((0.5, 1.0), (1e-5, 1e-4), (0.04, 0.07)):
        for m in methods:
            parts = ([f"lora-r{m['lora_r']}a{m['lora_alpha']}"] if m.get("lora") else []) + (
                [f"wise-l{m['wiseft_layers']}m{m['wiseft_lambda']}"] if m.get("wiseft") else [])
            name = "_".join([*parts, f"alpha{alpha}", f"beta{beta:g}", f"tau{tau}"]).replace(".", "p")
            runs[name] = {**m, "alpha": alpha, "beta": beta, "tau": tau}
    return runs


class DeltaW:
    """‖ΔW‖²_F of everything being trained: LoRA modules contribute ‖scaling · B A‖², other trainable tensors
    ‖θ − θ_start‖²."""

    def __init__(self, hf_model):
        self.lora_modules = [m for m in hf_model.modules() if hasattr(m, "lora_A") and hasattr(m, "lora_B")
                             and len(getattr(m, "lora_A", {})) > 0]
        lora_param_ids = {id(p) for m in self.lora_modules for p in (*m.lora_A.parameters(), *m.lora_B.parameters())}
        self.full = [(p, p.detach().clone()) for p in hf_model.parameters()
                     if p.requires_grad and id(p) not in lora_param_ids]

    def __call__(self):
        import torch

        total = torch.zeros(())
        for m in self.lora_modules:
            for name in m.lora_A:
                a, b = m.lora_A[name].weight, m.lora_B[name].weight
                total = total.to(a.device) + (m.scaling[name] * (b @ a)).pow(2).sum()
        for p, p0 in self.full:
            total = total.to(p.device) + (p - p0.to(p.device)).pow(2).sum()
        return total


def fair_contrastive_loss(st_model, cfg: MethodConfig):
    """A sentence-transformers loss over the four ``COLUMNS`` (built lazily so torch loads only when training)."""
    from sentence_transformers.base.losses.merged_forward import embed_columns
    from torch import nn

    class FairContrastiveLoss(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model
            self.delta_w = DeltaW(transformer(model))
            self.last: dict[str, float] = {}

        def forward(self, sentence_features: Iterable[dict], labels=None):
            q, p, bs, bn = embed_columns(self.model, sentence_features)
            contrastive = nt_xent(q, p, cfg.tau)
            fair = fairness_gap(q, bs, bn, cfg.fair_variant)
            reg = self.delta_w()
            self.last = {"nt_xent": float(contrastive.detach()), "fair": float(fair.detach()),
                         "delta_w": float(reg.detach())}
            return contrastive + cfg.alpha * fair + cfg.beta * reg

        def get_config_dict(self):
            return {"tau": cfg.tau, "alpha": cfg.alpha, "beta": cfg.beta, "fair_variant": cfg.fair_variant}

    return FairContrastiveLoss(st_model)


def gradient_shares(st_model, pairs, cfg: MethodConfig, *, batches: int, batch_size: int) -> dict[str, float]:
    """How strongly each term of the objective pulls the trainable weights before training: the L2 norm of the
    gradient of NT-Xent and of α·L_fair (and of the fair term alone), averaged over the first ``batches`` batches
    of ``pairs``. A fairness term whose gradient is a tiny fraction of the contrastive one cannot move the
    retrieval decisions in a short run — the measured reason the α = 0 control equals the full framework at the
    CPU default size (see the ragfair findings)."""
    import torch

    params = [p for p in st_model.parameters() if p.requires_grad]

    def norm(grads) -> float:
        return float(torch.sqrt(sum((g.detach() ** 2).sum() for g in grads if g is not None)))

    fair_g, nce_g, fair_v = [], [], []
    for q, p, bs, bn in embedded_batches(st_model, pairs.iloc[: batches * batch_size], batch_size):
        fair = fairness_gap(q, bs, bn, cfg.fair_variant)
        fair_g.append(norm(torch.autograd.grad(fair, params, retain_graph=True, allow_unused=True)))
        nce_g.append(norm(torch.autograd.grad(nt_xent(q, p, cfg.tau), params, allow_unused=True)))
        fair_v.append(float(fair.detach()))
    g_fair, g_nce = float(np.mean(fair_g)), float(np.mean(nce_g))
    return {"grad_norm_nt_xent": g_nce, "grad_norm_fair": g_fair, "grad_norm_alpha_fair": cfg.alpha * g_fair,
            "alpha_fair_over_nt_xent": cfg.alpha * g_fair / g_nce if g_nce else float("nan"),
            "fair_term_mean": float(np.mean(fair_v))}


def fairness_terms(st_model, pairs, cfg: MethodConfig, *, batch_size: int) -> list[float]:
    """L_fair (``cfg.fair_variant``) of the model on each consecutive batch of ``pairs``, dropout off: what the
    fairness term targets, measured after training so that a run and its α = 0 control can be compared batch by
    batch (the check that an exaggerated α acts, :func:`biaslab.ragfair.findings.acts_checks`)."""
    import torch

    was_training = st_model.training
    st_model.eval()
    with torch.inference_mode():
        out = [float(fairness_gap(q, bs, bn, cfg.fair_variant)) for q, _, bs, bn in
               embedded_batches(st_model, pairs, batch_size)]
    st_model.train(was_training)
    return out


def embedded_batches(st_model, pairs, batch_size: int):
    """(query, positive, stereotype, anti-stereotype) embeddings of each consecutive batch of ``pairs``'
    ``COLUMNS``, as the loss sees them."""
    from sentence_transformers.base.losses.merged_forward import embed_columns
    from sentence_transformers.util import batch_to_device

    device = next(st_model.parameters()).device  # tokenize gives CPU tensors; the model may sit on a GPU

    def features(texts):
        return batch_to_device(st_model.tokenize(texts), device)

    for start in range(0, len(pairs), batch_size):
        b = pairs.iloc[start : start + batch_size]
        yield embed_columns(st_model, [features(b[c].tolist()) for c in COLUMNS])


def prepare(st_model, cfg: MethodConfig):
    """Freeze / wrap the model for ``cfg``; returns the number of trainable parameters."""
    hf = transformer(st_model)
    for p in hf.parameters():
        p.requires_grad_(False)
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        hf = get_peft_model(hf, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                           target_modules=list(cfg.lora_targets), bias="none"))
        st_model[0].model = hf
    if cfg.wiseft:
        layers = encoder_layers(hf)
        if not 1 <= cfg.wiseft_layers <= len(layers):
            raise ValueError(f"wiseft_layers must be in 1..{len(layers)}, got {cfg.wiseft_layers}")
        for layer in layers[-cfg.wiseft_layers:]:
            for name, p in layer.named_parameters():
                if "lora_" not in name:
                    p.requires_grad_(True)
    return sum(p.numel() for p in hf.parameters() if p.requires_grad)


def finalize(st_model, base_state: dict, cfg: MethodConfig) -> None:
    """Merge LoRA into the weights and apply the WiSE-FT interpolation with the base weights, in place."""

    hf = transformer(st_model)
    if cfg.lora:
        hf = hf.merge_and_unload()
        st_model[0].model = hf
    if cfg.wiseft:
        interpolate_weights(hf, base_state, cfg.wiseft_lambda)
    for p in hf.parameters():
        p.requires_grad_(True)


def train(base_dir, pairs, out_dir, cfg: MethodConfig, *, epochs: int, batch_size: int, learning_rate: float,
          warmup_ratio: float, max_grad_norm: float, seed: int, device: str, max_seq_length: int | None,
          record: dict, probe_batches: int):
    """Train one recipe on ``pairs`` (columns ``COLUMNS``) from the base encoder in ``base_dir`` and save the merged
    checkpoint atomically, with ``record`` (e.g. the base model's name and the run's identity).

    Returns (folder, summary). ``cfg.trains`` must be true (head masking alone needs no training)."""
    from datasets import Dataset

    from ..train import finish, fit, start

    if not cfg.trains:
        raise ValueError("this recipe trains nothing (set lora and/or wiseft)")
    missing = [c for c in COLUMNS if c not in pairs.columns]
    if missing:
        raise ValueError(f"training pairs lack columns {missing}; expected {list(COLUMNS)}")
    model, dev = start(base_dir, seed=seed, device=device, max_seq_length=max_seq_length)
    base_state = {k: v.detach().clone() for k, v in transformer(model).state_dict().items()}
    n_trainable = prepare(model, cfg)
    shares = gradient_shares(model, pairs, cfg, batches=probe_batches, batch_size=batch_size) if probe_batches else {}
    loss = fair_contrastive_loss(model, cfg)
    data = Dataset.from_pandas(pairs[list(COLUMNS)].reset_index(drop=True), preserve_index=False)
    result, curve = fit(model, data, loss, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                        warmup=warmup_ratio, seed=seed, device=dev, max_grad_norm=max_grad_norm,
                        optim="adamw_torch")
    finalize(model, base_state, cfg)
    after = fairness_terms(model, pairs, cfg, batch_size=batch_size)
    run = {"method": cfg.__dict__ | {"lora_targets": list(cfg.lora_targets)}, "epochs": epochs,
           "batch_size": batch_size, "learning_rate": learning_rate, "warmup_ratio": warmup_ratio,
           "max_grad_norm": max_grad_norm, "seed": seed, "device": dev, **record}
    return finish(model, out_dir, result, curve, record=run, trainable_parameters=int(n_trainable),
                  pairs=len(data), last_terms=loss.last, fair_terms_after=after,
                  **({"gradients_at_start": shares} if shares else {}))


# ------------------------------------------------------------------------------------------- head masking
def _attention_output_denses(hf_model):
    return [layer.attention.output.dense for layer in encoder_layers(hf_model)]


def head_importance(st_model, seat_sets, *, batch_size: int) -> np.ndarray:
    """b_ij = ∂ Σ_tests |ES| / ∂ m_ij at m = 1, shape [layers, heads] (§3.4.1). The mask multiplies each head's
    slice of the input of the attention output projection W^O through a forward pre-hook."""
    import torch
    import torch.nn.functional as F

    hf = transformer(st_model)
    n_heads = hf.config.num_attention_heads
    dense = _attention_output_denses(hf)
    mask = torch.ones(len(dense), n_heads, requires_grad=True, device=next(hf.parameters()).device)
    head_dim = hf.config.hidden_size // n_heads
    hooks = []
    for li, d in enumerate(dense):
        def pre(module, args, li=li):
            (x,) = args
            shape = x.shape
            return (x.view(*shape[:-1], n_heads, head_dim) * mask[li].view(n_heads, 1)).view(shape),
        hooks.append(d.register_forward_pre_hook(pre))
    was_training = st_model.training
    st_model.eval()
    try:
        total = torch.zeros((), device=mask.device)
        for s in seat_sets:
            texts = s.texts()
            embs = []
            for i in range(0, len(texts), batch_size):
                prep = getattr(st_model, "preprocess", None) or st_model.tokenize
                feats = prep(texts[i : i + batch_size])
                feats = {k: (v.to(mask.device) if hasattr(v, "to") else v) for k, v in feats.items()}
                embs.append(st_model(feats)["sentence_embedding"])
            e = F.normalize(torch.cat(embs), dim=-1)
            nx, ny, na = len(s.X), len(s.Y), len(s.A)
            X, Y, A, B = e[:nx], e[nx : nx + ny], e[nx + ny : nx + ny + na], e[nx + ny + na :]
            sx = (X @ A.T).mean(1) - (X @ B.T).mean(1)
            sy = (Y @ A.T).mean(1) - (Y @ B.T).mean(1)
            es = (sx.mean() - sy.mean()) / torch.cat([sx, sy]).std(unbiased=True)
            total = total + es.abs()
        total.backward()
    finally:
        for h in hooks:
            h.remove()
        st_model.train(was_training)
    return mask.grad.detach().cpu().numpy()


def heads_to_mask(importance: np.ndarray, fraction: float) -> list[tuple[int, int]]:
    """The top ``fraction`` of all heads by importance, keeping only those with a positive score (§3.4.1)."""
    k = round(fraction * importance.size)
    order = np.argsort(-importance, axis=None, kind="stable")[:k]
    return [tuple(int(v) for v in np.unravel_index(i, importance.shape)) for i in order
            if importance.flat[i] > 0]


def apply_head_mask(st_model, heads: Sequence[tuple[int, int]]) -> None:
    """Zero the W^O columns of the given (layer, head) pairs, in place (= m_ij = 0 at inference)."""
    import torch

    hf = transformer(st_model)
    n_heads = hf.config.num_attention_heads
    head_dim = hf.config.hidden_size // n_heads
    dense = _attention_output_denses(hf)
    with torch.no_grad():
        for layer, head in heads:
            dense[layer].weight[:, head * head_dim : (head + 1) * head_dim] = 0.0
