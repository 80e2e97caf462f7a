"""Thin, deterministic wrappers over the sentence-transformers trainer (device auto-selection, seeds,
atomic model saving, progress bars that respect ``TQDM_DISABLE``)."""

from __future__ import annotations

import json
import logging
import math
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
        model.save_pretrained(str(tmp), create_model_card=False)  # the card records wall-clock training time
        (tmp / "biaslab_run.json").write_text(json.dumps(config, indent=2, sort_keys=True, default=str))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


TIMING_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second",
               "eval_runtime", "eval_samples_per_second", "eval_steps_per_second")


def _without_timings(logs: dict | None) -> dict | None:
    return None if logs is None else {k: v for k, v in logs.items() if k not in TIMING_KEYS}


class _NoMtimeWarning(logging.Filter):
    """Drops transformers' "mtime may not be reliable" warning: the trainer prints it when two checkpoints were saved
    less than a second apart (it then orders them by step, the order it would have had anyway), so whether it
    appears in an executed notebook depends on how fast the machine is."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "mtime may not be reliable" not in record.getMessage()


def _quiet_timing_warnings() -> None:
    logger = logging.getLogger("transformers.trainer_utils")
    if not any(isinstance(f, _NoMtimeWarning) for f in logger.filters):
        logger.addFilter(_NoMtimeWarning())


def _deterministic_log_callbacks(trainer) -> None:
    """Swap the trainer's log printers for ones that leave out wall-clock keys.

    The trainer prints ``train_runtime`` and ``*_per_second`` at the end of training; inside an executed
    notebook that line changes on every run, so a forced rerun with the same params would change the
    notebook's hash and mark every downstream DVC stage stale. Loss, gradient norm, learning rate and
    epoch are printed as before (``trainer.state.log_history`` keeps everything). The speed-dependent checkpoint
    warning is dropped too (:class:`_NoMtimeWarning`)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    _quiet_timing_warnings()

    class QuietPrinter(PrinterCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            return super().on_log(args, state, control, logs=_without_timings(logs), **kwargs)

    class QuietProgress(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            return super().on_log(args, state, control, logs=_without_timings(logs), **kwargs)

    for cls, quiet in ((PrinterCallback, QuietPrinter), (ProgressCallback, QuietProgress)):
        if trainer.pop_callback(cls) is not None:
            trainer.add_callback(quiet)


def fit(model, data, loss, *, epochs: int, batch_size: int, learning_rate: float, warmup: float, seed: int,
        device: str, no_duplicates: bool = True, **args) -> tuple[Any, list[tuple[int, float]]]:
    """Run the sentence-transformers trainer once, deterministically: seeded data order, no checkpoints, ≈10 loss
    logs per run, no wall-clock output. ``warmup`` < 1 is a fraction of the steps, ≥ 1 a number of steps.

    ``no_duplicates`` builds batches without repeated texts (``NO_DUPLICATES``), needed by losses with in-batch
    negatives: a text that recurs across rows would otherwise be scored as its own negative. ``args`` go to
    ``SentenceTransformerTrainingArguments`` unchanged. Returns (train result, loss curve as (step, loss))."""
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    with tempfile.TemporaryDirectory() as scratch:
        targs = SentenceTransformerTrainingArguments(
            output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            learning_rate=learning_rate, warmup_steps=warmup if warmup >= 1 else float(warmup), seed=seed,
            data_seed=seed, batch_sampler=BatchSamplers.NO_DUPLICATES if no_duplicates else BatchSamplers.BATCH_SAMPLER,
            save_strategy="no", report_to="none",
            logging_steps=max(1, math.ceil(len(data) / batch_size * epochs / 10)),
            disable_tqdm=not progress_enabled(), use_cpu=device == "cpu", dataloader_num_workers=0, **args,
        )
        trainer = SentenceTransformerTrainer(model=model, args=targs, train_dataset=data, loss=loss)
        _deterministic_log_callbacks(trainer)
        result = trainer.train()
    curve = [(int(h["step"]), float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    return result, curve


def start(base_dir: str | Path, *, seed: int, device: str, max_seq_length: int | None):
    """The prologue every trainer of the project shares (intersect, ragfair, ragcontrol): seed Python / NumPy /
    torch, pick the device, load the base bi-encoder from its folder and cap its sequence length (None keeps the
    model's own). Returns (model, device)."""
    from .models import load_sentence_transformer

    seed_everything(seed)
    dev = select_device(device)
    model = load_sentence_transformer(base_dir, dev)
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model, dev


def finish(model, out_dir: Path, result, curve: list[tuple[int, float]], *, record: dict[str, Any],
           **summary: Any) -> tuple[Path, dict[str, Any]]:
    """The epilogue they share: the training summary (final loss, steps, ``summary`` extras, loss curve) and the
    model saved atomically with ``record`` + the summary as ``biaslab_run.json``. Returns (folder, summary)."""
    summary = {"train_loss": float(result.training_loss), "steps": int(result.global_step), **summary,
               "loss_curve": curve}
    return save_model_atomically(model, out_dir, {**record, "summary": summary}), summary


def train_mnrl(base_dir: str | Path, triplets: pd.DataFrame, out_dir: Path, *, epochs: int, batch_size: int,
               learning_rate: float, warmup_ratio: float, scale: float, max_seq_length: int | None, seed: int,
               device: str, record: dict[str, Any], grad_cache_chunk: int) -> tuple[Path, dict[str, Any]]:
    """Fine-tune a bi-encoder on (anchor, positive, negative) with MultipleNegativesRankingLoss — in-batch
    negatives plus the hard negative, cosine similarity × ``scale`` (intersect §4.2, Alg. 1).

    ``grad_cache_chunk``: 0 trains with sentence-transformers' ``MultipleNegativesRankingLoss``; a positive number
    with its ``CachedMultipleNegativesRankingLoss`` (gradient caching, Gao et al. 2021, as cscl's
    ``grad_cache_chunk``): the same loss over the whole batch and the same gradient up to floating-point
    summation, with the activations of only ``grad_cache_chunk`` texts alive at a time — peak memory no longer grows with the batch (3 × ``batch_size``
    sequences), at the cost of a second forward pass. The dropout masks of the cached loss's two passes come from
    its own replayed random state, so a run is not bit-identical to the plain loss's run.

    Batches never hold the same text twice (anchors recur across their triplets; see ``fit``). ``record`` (e.g.
    the base model's name and the run's identity) is saved with the model. Returns (model folder, training log
    summary)."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    if grad_cache_chunk < 0:
        raise ValueError(f"grad_cache_chunk must be 0 (off) or a positive number of texts, got {grad_cache_chunk}")
    model, dev = start(base_dir, seed=seed, device=device, max_seq_length=max_seq_length)
    data = Dataset.from_pandas(triplets[["anchor", "positive", "negative"]].reset_index(drop=True),
                               preserve_index=False)
    loss = (CachedMultipleNegativesRankingLoss(model, scale=scale, mini_batch_size=grad_cache_chunk)
            if grad_cache_chunk else MultipleNegativesRankingLoss(model, scale=scale))
    result, curve = fit(model, data, loss, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                        warmup=warmup_ratio, seed=seed, device=dev)
    run = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate, "warmup_ratio": warmup_ratio,
           "scale": scale, "max_seq_length": max_seq_length, "seed": seed, "device": dev, **record}
    if grad_cache_chunk:
        run["grad_cache_chunk"] = grad_cache_chunk
    return finish(model, out_dir, result, curve, record=run, triplets=len(data))


# ------------------------------------------------------------------------------------ weights of an encoder
def transformer(st_model):
    """The Hugging Face model inside a sentence-transformers model (``model[0].model``; a peft wrapper while
    LoRA trains)."""
    return st_model[0].model


def encoder_layers(hf_model):
    """The list of transformer blocks of a BERT-style encoder (also through a peft wrapper)."""
    base = hf_model.get_base_model() if hasattr(hf_model, "get_base_model") else hf_model
    for path in ("encoder.layer", "bert.encoder.layer", "layers"):
        obj = base
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError:
            continue
    raise ValueError(f"cannot find the transformer layers of {type(base).__name__} (expected a BERT-style encoder)")


def interpolate_weights(hf_model, base_state: dict, lam: float) -> None:
    """WiSE-FT (Wortsman et al. 2022), in place: θ = (1 − λ)·θ_base + λ·θ for every floating-point tensor that
    ``base_state`` holds (λ = 1 keeps the fine-tuned weights, λ = 0 restores the base)."""
    import torch

    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"WiSE-FT mixing weight must be in [0, 1], got {lam}")
    with torch.no_grad():
        for name, p in hf_model.state_dict().items():
            if name in base_state and p.dtype.is_floating_point:
                p.copy_((1.0 - lam) * base_state[name].to(p.device) + lam * p)
