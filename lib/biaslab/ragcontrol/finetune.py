"""Reverse-biasing the embedder (Kim et al. 2025, App. "Training"; public code ``embedder/train.py``).

Candidate documents per training question are split by the judge into positives (female / conservative) and
negatives (male / liberal) — see :mod:`.candidates` — and the embedder is trained with the multi-positive
contrastive loss (:func:`biaslab.losses.multi_positive_contrastive`, scale 50) through the sentence-transformers
trainer: AdamW (weight decay 0.01), linear schedule with 10 warm-up steps, gradient clipping at 1.0, batch 8,
as the public code's ``make_commands.py`` grid does.

* Partial fine-tuning (:func:`freeze_partial`), exactly as the public code: ``freeze_layers k`` > 0 freezes
  everything, then unfreezes the pooler and the MLP (``intermediate`` and ``output``) of the last k layers;
  k = 0 trains everything.
* WiSE-FT (:func:`wise_models`): θ = (1 − m)·θ_base + m·θ_ft for each mixing weight m (public code
  ``merge_weight``; paper grid m ∈ {0.1, 0.3, 0.5, 0.7, 0.9}) — one training run gives a family of embedders
  with graded bias, which is how the paper's sweep of 20 embedders per task arises.

Rows for the trainer: ``query``, ``doc_0 … doc_{M−1}`` (unused slots are empty strings) and ``label`` (a list
of M values, 1 positive / −1 negative / 0 unused). The loss masks by the label, so the empty slots never count.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..train import encoder_layers, transformer


def training_rows(cands: pd.DataFrame, max_positives: int, max_negatives: int, *,
                  pad_negatives_with_neutral: bool, seed: int) -> pd.DataFrame:
    """One trainer row per query from ``cands`` (columns ``query, text, role`` with role positive / negative /
    neutral). Up to ``max_positives`` positives and ``max_negatives`` negatives are sampled per query (public
    code: 10 each); with ``pad_negatives_with_neutral`` (the public code does this for GenderBias-QA) neutral
    documents fill up missing negatives. Queries without a positive or without any negative are dropped."""
    rng = np.random.default_rng(seed)
    width = max_positives + max_negatives
    rows = []
    for query, g in cands.groupby("query", sort=True):
        pos = sorted(set(g.loc[g["role"] == "positive", "text"]))
        neg = sorted(set(g.loc[g["role"] == "negative", "text"]))
        if pad_negatives_with_neutral and len(neg) < max_negatives:
            neutral = sorted(set(g.loc[g["role"] == "neutral", "text"]) - set(neg))
            neg = neg + list(rng.permutation(neutral)[: max_negatives - len(neg)]) if neutral else neg
        if not pos or not neg:
            continue
        pos = list(rng.permutation(pos)[:max_positives]) if len(pos) > max_positives else pos
        neg = list(rng.permutation(neg)[:max_negatives]) if len(neg) > max_negatives else neg
        docs = [*pos, *neg] + [""] * (width - len(pos) - len(neg))
        label = [1] * len(pos) + [-1] * len(neg) + [0] * (width - len(pos) - len(neg))
        rows.append({"query": query, **{f"doc_{j}": d for j, d in enumerate(docs)}, "label": label})
    return pd.DataFrame(rows)


def freeze_partial(st_model, freeze_layers: int) -> int:
    """The public code's ``--freeze_layers``; returns the number of trainable parameters."""
    hf = transformer(st_model)
    if freeze_layers:
        layers = encoder_layers(hf)
        if not 1 <= freeze_layers <= len(layers):
            raise ValueError(f"freeze_layers must be in 0..{len(layers)}, got {freeze_layers}")
        for p in hf.parameters():
            p.requires_grad_(False)
        pooler = getattr(hf, "pooler", None)
        for p in (pooler.parameters() if pooler is not None else []):
            p.requires_grad_(True)
        for layer in layers[len(layers) - freeze_layers:]:
            for part in (layer.intermediate, layer.output):
                for p in part.parameters():
                    p.requires_grad_(True)
    return sum(p.numel() for p in hf.parameters() if p.requires_grad)


def embed_documents(model, doc_features: list[dict], skip_below: int = 3):
    """[B, M, d] embeddings of the M document columns, running the encoder only on real documents: unused slots
    (empty strings, which tokenise to [CLS] [SEP]) are skipped and left as zero vectors (the loss masks them).
    All real documents of the batch share one forward pass, padded to their own longest length."""
    import torch
    import torch.nn.functional as F

    first = doc_features[0]
    n_rows, n_cols = first["input_ids"].shape[0], len(doc_features)
    keys = [k for k, v in first.items() if torch.is_tensor(v) and v.dim() == 2]
    pieces = [(c, b, int(n)) for c, f in enumerate(doc_features)
              for b, n in enumerate(f["attention_mask"].sum(1).tolist()) if n >= skip_below]
    if not pieces:
        raise ValueError("a batch without any document")
    width = max(n for *_, n in pieces)

    def cut(t):
        return F.pad(t, (0, max(0, width - t.shape[0])))[:width]

    batch = {k: torch.stack([cut(doc_features[c][k][b]) for c, b, _ in pieces]) for k in keys}
    emb = model(batch)["sentence_embedding"]
    out = emb.new_zeros((n_rows, n_cols, emb.shape[-1]))
    rows = torch.tensor([b for _, b, _ in pieces], device=emb.device)
    cols = torch.tensor([c for c, _, _ in pieces], device=emb.device)
    return out.index_put((rows, cols), emb)


def reverse_bias_loss(st_model, scale: float):
    """A sentence-transformers loss over (query, doc_0 … doc_{M−1}) with the label column as the role mask."""
    from torch import nn

    from ..losses import multi_positive_contrastive

    class ReverseBiasLoss(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, sentence_features, labels):
            query, *docs = list(sentence_features)
            q = self.model(query)["sentence_embedding"]
            return multi_positive_contrastive(q, embed_documents(self.model, docs), labels.to(q.device), scale)

        def get_config_dict(self):
            return {"scale": scale}

    return ReverseBiasLoss(st_model)


def train(base_dir, rows: pd.DataFrame, out_dir: Path, *, freeze_layers: int, epochs: int, batch_size: int,
          learning_rate: float, weight_decay: float, warmup_steps: int, scale: float, max_seq_length: int | None,
          seed: int, device: str, record: dict) -> tuple[Path, dict]:
    """Fine-tune the base embedder in ``base_dir`` on :func:`training_rows` and save it atomically with ``record``
    (e.g. the base model's name and the run's identity); returns (folder, summary)."""
    from datasets import Dataset

    from ..train import finish, fit, start

    if rows.empty:
        raise ValueError("no training rows: no training question has both a positive and a negative candidate")
    model, dev = start(base_dir, seed=seed, device=device, max_seq_length=max_seq_length)
    n_trainable = freeze_partial(model, freeze_layers)
    cols = ["query", *[c for c in rows.columns if c.startswith("doc_")], "label"]
    data = Dataset.from_pandas(rows[cols].reset_index(drop=True), preserve_index=False)
    result, curve = fit(model, data, reverse_bias_loss(model, scale), epochs=epochs, batch_size=batch_size,
                        learning_rate=learning_rate, warmup=int(warmup_steps), seed=seed, device=dev,
                        no_duplicates=False, weight_decay=weight_decay, max_grad_norm=1.0, optim="adamw_torch")
    labels = np.array(rows["label"].tolist())
    run = {"freeze_layers": freeze_layers, "epochs": epochs, "batch_size": batch_size,
           "learning_rate": learning_rate, "weight_decay": weight_decay, "warmup_steps": warmup_steps,
           "scale": scale, "max_seq_length": max_seq_length, "seed": seed, "device": dev, **record}
    return finish(model, out_dir, result, curve, record=run, queries=len(rows),
                  positives_per_query=float((labels > 0).sum(1).mean()),
                  negatives_per_query=float((labels < 0).sum(1).mean()), trainable_parameters=int(n_trainable))


def wise_models(base_dir, fine_tuned: str | Path, merges: Sequence[float], *, device: str
                ) -> Iterator[tuple[float, object]]:
    """(m, model) for each WiSE-FT mixing weight, reusing one model object (encode before asking for the next).
    Tensors the fine-tuning left unchanged (the frozen part of a partial run) are kept bit for bit — the merge's
    value there, since θ_ft = θ_base — so a merge of a last-k run still shares the base's frozen bottom
    (:mod:`biaslab.frozen`)."""
    import torch

    from ..models import load_sentence_transformer
    from ..train import interpolate_weights

    base_state = {k: v.detach().clone() for k, v in transformer(load_sentence_transformer(base_dir, device))
                  .state_dict().items()}
    model = load_sentence_transformer(fine_tuned, device)
    ft_state = {k: v.detach().clone() for k, v in transformer(model).state_dict().items()}
    moved = {k: v for k, v in base_state.items() if not (k in ft_state and torch.equal(ft_state[k], v))}
    for m in merges:
        transformer(model).load_state_dict(ft_state)
        interpolate_weights(transformer(model), moved, float(m))
        yield float(m), model
