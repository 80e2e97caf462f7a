"""Thin, deterministic wrappers over the sentence-transformers trainer (device auto-selection, seeds,
atomic model saving, progress bars that respect ``TQDM_DISABLE``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from .runtime import progress_enabled, seed_everything, select_device


def save_model_atomically(model, out_dir: Path, config: dict[str, Any]) -> Path:
    """``model.save_pretrained`` into a sibling temp folder, then swap it in; writes ``biaslab_run.json``."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        model.save_pretrained(str(tmp))
        (tmp / "biaslab_run.json").write_text(json.dumps(config, indent=2, sort_keys=True, default=str))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def train_mnrl(base: str, triplets: pd.DataFrame, out_dir: Path, *, epochs: int = 1, batch_size: int = 32,
               learning_rate: float = 2e-5, warmup_ratio: float = 0.1, scale: float = 20.0,
               max_seq_length: int | None = 256, seed: int = 42, device: str = "auto",
               config: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Fine-tune a bi-encoder on (anchor, positive, negative) with MultipleNegativesRankingLoss — in-batch
    negatives plus the hard negative, cosine similarity × ``scale`` (intersect §4.2, Alg. 1).

    Batches never hold the same text twice (``NO_DUPLICATES``): anchors recur across their triplets and a
    duplicate would be scored as its own negative. Returns (model folder, training log summary)."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from .models import load_sentence_transformer

    seed_everything(seed)
    dev = select_device(device)
    model = load_sentence_transformer(base, dev)
    if max_seq_length:
        model.max_seq_length = max_seq_length
    data = Dataset.from_pandas(triplets[["anchor", "positive", "negative"]].reset_index(drop=True),
                               preserve_index=False)
    with tempfile.TemporaryDirectory() as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            learning_rate=learning_rate, warmup_ratio=warmup_ratio, seed=seed, data_seed=seed,
            batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to="none",
            logging_steps=max(1, len(data) // batch_size // 10), disable_tqdm=not progress_enabled(),
            use_cpu=dev == "cpu", dataloader_num_workers=0,
        )
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                             loss=MultipleNegativesRankingLoss(model, scale=scale))
        result = trainer.train()
        history = [h for h in trainer.state.log_history if "loss" in h]
    summary = {"train_loss": float(result.training_loss), "steps": int(result.global_step),
               "runtime_s": float(result.metrics.get("train_runtime", 0.0)), "triplets": len(data),
               "loss_curve": [(int(h["step"]), float(h["loss"])) for h in history]}
    run = {"base": base, "epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate,
           "warmup_ratio": warmup_ratio, "scale": scale, "max_seq_length": max_seq_length, "seed": seed,
           "device": dev, **(config or {}), "summary": summary}
    return save_model_atomically(model, out_dir, run), summary
