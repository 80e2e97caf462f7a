"""Baselines of intersect §4.3 and App. A.

* Multi-label classifier ("BERT-MultiLabel"): a transformer encoder with a linear head over the corpus's label
  set (its axes + ``unbiased``), trained on D_train,Ci paragraphs with binary cross-entropy (``loss="bce"``) or
  the soft Hamming loss with τ = 0.7 (``loss="soft_hamming"``, App. A: AdamW 2e-5, ≤ 20 epochs, early stopping
  with patience 3 on a validation split of the training paragraphs). Backbone: MiniLM by default,
  bert-base-uncased / ModernBERT-base at paper scale. Prediction: labels with probability ≥ 0.5, ``unbiased``
  exclusive when it is the most probable, the most probable label when none passes. It cannot transfer across
  corpora (different label spaces), as the paper notes.
* Zero-shot LLM classification with the Fig. 21 prompt, parsed back to a label set (:func:`parse_llm_labels`).
* The frozen base retriever is evaluated by :mod:`biaslab.intersect.evaluate` like the trained ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..losses import soft_hamming_loss
from ..models import new_head_classifier
from ..runtime import progress_enabled, seed_everything, select_device
from ..train import _deterministic_log_callbacks
from . import prompts
from .paragraphs import canonical
from .splits import MAJORITY, TEST_SETS


def label_space(paragraphs: pd.DataFrame) -> list[str]:
    return sorted({lab for labs in paragraphs["labels"] for lab in labs})


def to_multi_hot(label_sets: Sequence[Sequence[str]], space: Sequence[str]) -> np.ndarray:
    index = {lab: i for i, lab in enumerate(space)}
    out = np.zeros((len(label_sets), len(space)), np.float32)
    for r, labs in enumerate(label_sets):
        for lab in labs:
            if lab in index:
                out[r, index[lab]] = 1.0
    return out


def decode(probs: np.ndarray, space: Sequence[str], threshold: float) -> list[list[str]]:
    """Probabilities -> label sets (``unbiased`` exclusive when most probable; never empty)."""
    out = []
    for row in probs:
        best = int(np.argmax(row))
        if space[best] == "unbiased":
            out.append(["unbiased"])
            continue
        chosen = [space[i] for i in np.flatnonzero(row >= threshold) if space[i] != "unbiased"]
        out.append(sorted(chosen or [space[best]]))
    return out


def _epoch_losses(log_history: Sequence[Mapping]) -> list[float]:
    """The mean training loss of each epoch, from the Trainer's log (``logging_strategy="epoch"``)."""
    return [float(h["loss"]) for h in log_history if "loss" in h]


def _last_change(losses: Sequence[float]) -> float:
    """The relative change of the mean training loss over the last epoch (NaN before the second)."""
    return abs(losses[-1] / losses[-2] - 1) if len(losses) > 1 else float("nan")


PREDICT_BATCH = 32  # inference batch of the classifiers (speed only)


class MultiLabelClassifier:
    """Fine-tune ``AutoModelForSequenceClassification`` (multi-label) with the HF ``Trainer``."""

    def __init__(self, backbone_dir, space: Sequence[str], *, loss: str, tau: float, device: str, max_length: int):
        """``backbone_dir``: the encoder's folder (``models.preflight``); ``loss``: bce | soft_hamming."""
        from transformers import AutoTokenizer

        if loss not in ("bce", "soft_hamming"):
            raise ValueError(f"unknown classifier loss {loss!r}: use bce or soft_hamming")
        folder = backbone_dir
        self.space, self.loss, self.tau, self.max_length = list(space), loss, tau, max_length
        self.device = select_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = new_head_classifier(folder, num_labels=len(space), problem_type="multi_label_classification")
        self.model.to(self.device)

    def _dataset(self, texts, labels=None):
        from datasets import Dataset

        enc = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)
        data = dict(enc)
        if labels is not None:
            data["labels"] = to_multi_hot(labels, self.space).tolist()
        return Dataset.from_dict(data)

    def fit(self, texts, labels, *, epochs: int, batch_size: int, learning_rate: float, head_learning_rate: float,
            converge_tol: float, patience: int | None, val_fraction: float, seed: int) -> dict:
        """Fine-tune on ``texts`` / ``labels`` (label sets): the encoder at ``learning_rate``, the new head at
        ``head_learning_rate`` (AdamW in parameter groups under the Trainer's linear schedule), for at most
        ``epochs`` epochs. Training stops once an epoch's mean training loss is within ``converge_tol`` (relative)
        of the epoch before — trained to convergence, not for a fixed count — or, with ``patience``, when the loss
        on ``val_fraction`` of the paragraphs held out stops improving (the paper's early stopping, App. A). The log:
        ``train_loss``, ``epochs_run``, ``loss_per_epoch``, ``last_change`` (the relative change over the last
        epoch) and ``stopped_by`` (converged | early_stopping | max_epochs)."""
        import tempfile

        import torch
        from transformers import (
            DataCollatorWithPadding,
            EarlyStoppingCallback,
            Trainer,
            TrainerCallback,
            TrainingArguments,
        )

        class Convergence(TrainerCallback):
            """Stops at the end of the first epoch whose mean training loss (the Trainer's per-epoch log) moved less
            than ``converge_tol`` from the epoch before."""

            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs and _last_change(_epoch_losses(state.log_history)) < converge_tol:
                    control.should_training_stop = True

        seed_everything(seed)
        texts, labels = list(texts), list(labels)
        tau, soft = self.tau, self.loss == "soft_hamming"

        class _Trainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                if not soft:
                    return super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)
                targets = inputs.pop("labels")
                outputs = model(**inputs)
                loss = soft_hamming_loss(outputs.logits, targets, tau)
                return (loss, outputs) if return_outputs else loss

        eval_ds, callbacks = None, []
        if patience:
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(texts))
            n_val = max(1, round(val_fraction * len(texts)))
            val, tr = order[:n_val], order[n_val:]
            eval_ds = self._dataset([texts[i] for i in val], [labels[i] for i in val])
            texts, labels = [texts[i] for i in tr], [labels[i] for i in tr]
            callbacks = [EarlyStoppingCallback(early_stopping_patience=patience)]
        base = self.model.base_model_prefix + "."
        named = list(self.model.named_parameters())
        optimizer = torch.optim.AdamW([{"params": [p for n, p in named if n.startswith(base)], "lr": learning_rate},
                                       {"params": [p for n, p in named if not n.startswith(base)],
                                        "lr": head_learning_rate}], weight_decay=0.0)
        with tempfile.TemporaryDirectory() as scratch:
            args = TrainingArguments(
                output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
                learning_rate=learning_rate, seed=seed, data_seed=seed, report_to="none",
                eval_strategy="epoch" if patience else "no", save_strategy="epoch" if patience else "no",
                save_total_limit=1, load_best_model_at_end=bool(patience), metric_for_best_model="eval_loss",
                greater_is_better=False, disable_tqdm=not progress_enabled(), use_cpu=self.device == "cpu",
                logging_strategy="epoch", dataloader_num_workers=0,
            )
            trainer = _Trainer(model=self.model, args=args, train_dataset=self._dataset(texts, labels),
                               eval_dataset=eval_ds, data_collator=DataCollatorWithPadding(self.tokenizer),
                               callbacks=[*callbacks, Convergence()], optimizers=(optimizer, None))
            _deterministic_log_callbacks(trainer)  # no wall-clock in the executed notebook (same params, same bytes)
            result = trainer.train()
        losses = _epoch_losses(trainer.state.log_history)
        early = callbacks and callbacks[0].early_stopping_patience_counter >= patience
        stopped_by = ("converged" if _last_change(losses) < converge_tol else
                      "early_stopping" if early else "max_epochs")
        return {"train_loss": float(result.training_loss), "epochs_run": float(trainer.state.epoch or 0),
                "loss_per_epoch": [round(x, 6) for x in losses], "last_change": _last_change(losses),
                "stopped_by": stopped_by}

    def predict_proba(self, texts, batch_size: int) -> np.ndarray:
        import torch

        self.model.eval()
        out = []
        with torch.inference_mode():
            for s in range(0, len(texts), batch_size):
                enc = self.tokenizer(list(texts[s : s + batch_size]), truncation=True, max_length=self.max_length,
                                     padding=True, return_tensors="pt").to(self.device)
                out.append(torch.sigmoid(self.model(**enc).logits).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.space)), np.float32)

    def predict(self, texts, threshold: float) -> list[list[str]]:
        return decode(self.predict_proba(list(texts), PREDICT_BATCH), self.space, threshold)


def parse_llm_labels(answer: str, space: Sequence[str]) -> list[str]:
    """Map a Fig. 21 answer ("gender, caste" / "unbiased" / free text) to labels of ``space``."""
    text = answer.lower()
    found = sorted({lab for lab in space if lab != "unbiased" and re.search(rf"\b{re.escape(lab)}\b", text)})
    if found:
        return found
    return ["unbiased"]


def zero_shot(llm, gen, texts: Sequence[str], categories: Sequence[str], space: Sequence[str]) -> list[list[str]]:
    """Fig. 21 zero-shot classification through the LLM layer (needs a generative backend)."""
    system = prompts.CLASSIFY_SYSTEM.format(categories=", ".join([*categories, "unbiased"]))
    answers = llm.generate([prompts.CLASSIFY_USER.format(text=t) for t in texts], gen, system=system,
                           task="intersect.zero_shot")
    return [parse_llm_labels(a, space) for a in answers]


def test_scores(model: str, corpus: str, subset: str, rows: pd.DataFrame, preds: Sequence[Sequence[str]]) -> list[dict]:
    """In-domain Jaccard / exact match of ``preds`` (one label set per row of ``rows``) on each test set the rows
    flag (``test_seen``, ``test_unseen``, ``test_all``; gold labels in ``labels``): one record per test set."""
    from ..metrics.detection import mean_scores

    out = []
    for col, name in TEST_SETS.items():
        mask = rows[col].to_numpy()
        trues = [list(t) for t, m in zip(rows["labels"], mask, strict=True) if m]
        out.append({"model": model, "train_corpus": corpus, "subset": subset, "test_corpus": corpus,
                    "domain": "in-domain", "test_set": name,
                    **mean_scores(trues, [p for p, m in zip(preds, mask, strict=True) if m])})
    return out


def paragraph_rows(model: str, corpus: str, subset: str, rows: pd.DataFrame, preds: Sequence[Sequence[str]]
                   ) -> pd.DataFrame:
    """Per held-out paragraph: the classifier's Jaccard and exact match (in-domain), for paired comparisons."""
    from ..metrics.detection import exact_match, jaccard

    trues = [list(t) for t in rows["labels"]]
    return pd.DataFrame({"model": model, "train_corpus": corpus, "subset": subset, "test_corpus": corpus,
                         "domain": "in-domain", "paragraph_id": rows["paragraph_id"].to_numpy(),
                         "test_seen": rows["test_seen"].to_numpy(), "test_unseen": rows["test_unseen"].to_numpy(),
                         "jaccard": [jaccard(t, p) for t, p in zip(trues, preds, strict=True)],
                         "exact_match": [exact_match(t, p) for t, p in zip(trues, preds, strict=True)]})


def _split_rows(paragraphs: pd.DataFrame, splits: pd.DataFrame, subset: str) -> pd.DataFrame:
    return splits[splits["subset"] == subset].merge(paragraphs[["paragraph_id", "text", "labels"]], on="paragraph_id")


def majority_set(train: pd.DataFrame) -> list[str]:
    """The label set most frequent among ``train``'s paragraphs (ties: the first in sorted order) — the constant
    classifier every trained one must beat (:func:`biaslab.intersect.findings.competence`)."""
    counts = pd.Series([tuple(sorted(map(str, x))) for x in train["labels"]]).value_counts()
    return list(min(counts.index[counts == counts.max()]))


def classifier_grid(B, corpora: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], model_dirs: Mapping[str, Path], *,
                    device: str, seed: int) -> tuple[list[dict], list[pd.DataFrame], pd.DataFrame]:
    """Every classifier baseline of §4.3 / App. A on every corpus: BERT-MultiLabel (BCE, ``B.backbone``) on each
    subset of ``B.subsets`` and Soft-Hamming (``B.soft_hamming_backbone``, early stopping) on each of
    ``B.soft_hamming_subsets``, trained on D_train,Ci and scored in-domain on its held-out paragraphs. ``B``: the
    ``intersect.baselines`` section; ``corpora``: corpus → (paragraphs, splits); ``model_dirs``: model name → its
    folder. Each trains to convergence (:meth:`MultiLabelClassifier.fit`, at most ``B.epochs`` /
    ``B.soft_hamming_max_epochs`` epochs). Returns the test-set records (:func:`test_scores`), the per-paragraph
    frames (:func:`paragraph_rows`; with the majority label set's (:data:`MAJORITY`, :func:`majority_set`) on every
    subset trained) and the training log (one row per classifier: its epochs, loss per epoch, last relative change,
    what stopped it, how many distinct label sets it predicts)."""
    rows, per_paragraph, log = [], [], []
    for corpus, (paragraphs, splits) in corpora.items():
        space = label_space(paragraphs)
        for subset in dict.fromkeys([*B.subsets, *B.soft_hamming_subsets]):
            sp = _split_rows(paragraphs, splits, subset)
            test = sp[sp["test_all"]].reset_index(drop=True)
            per_paragraph.append(paragraph_rows(MAJORITY, corpus, subset, test,
                                                [majority_set(sp[sp["train"]])] * len(test)))
        runs = [(s, "bce", B.backbone) for s in B.subsets] + [(s, "soft_hamming", B.soft_hamming_backbone)
                                                              for s in B.soft_hamming_subsets]
        for subset, loss, backbone_name in runs:
            sp = _split_rows(paragraphs, splits, subset)
            train, test = sp[sp["train"]], sp[sp["test_all"]].reset_index(drop=True)
            clf = MultiLabelClassifier(model_dirs[backbone_name], space, loss=loss, tau=B.soft_hamming_tau,
                                       device=device, max_length=B.max_length)
            soft = loss == "soft_hamming"
            fit = clf.fit(train["text"].tolist(), train["labels"].tolist(),
                          epochs=B.soft_hamming_max_epochs if soft else B.epochs, batch_size=B.batch_size,
                          learning_rate=B.learning_rate, head_learning_rate=B.head_learning_rate,
                          converge_tol=B.converge_tol, patience=B.soft_hamming_patience if soft else None,
                          val_fraction=B.soft_hamming_val_fraction, seed=seed)
            name = f"{'Soft-Hamming' if soft else 'BERT-MultiLabel'} ({backbone_name})"
            preds = clf.predict(test["text"].tolist(), B.threshold)
            rows += test_scores(name, corpus, subset, test, preds)
            per_paragraph.append(paragraph_rows(name, corpus, subset, test, preds))
            distinct = len(set(map(tuple, preds)))
            log.append({"model": name, "train_corpus": corpus, "subset": subset, "epochs_run": fit["epochs_run"],
                        "stopped_by": fit["stopped_by"], "last_change": fit["last_change"],
                        "converge_tol": B.converge_tol,
                        "loss_per_epoch": " ".join(f"{x:.4f}" for x in fit["loss_per_epoch"]),
                        "distinct_label_sets": distinct})
            print(f"{corpus} {subset} {name}: {fit['epochs_run']:g} epochs, {fit['stopped_by']} (last change "
                  f"{fit['last_change']:.2%}), {distinct} distinct predicted label sets")
    return rows, per_paragraph, pd.DataFrame(log)


def zero_shot_grid(llm, gen, corpora: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], *, subsets: Sequence[str],
                   max_paragraphs: int, seed: int) -> tuple[list[dict], list[pd.DataFrame]]:
    """Zero-shot classification (Fig. 21 prompt) of one sample of at most ``max_paragraphs`` held-out paragraphs
    per corpus (drawn with ``seed`` from the test paragraphs of ``subsets``; answers cached by the LLM layer),
    scored on each subset's test sets the sample falls in — records and per-paragraph frames as
    :func:`classifier_grid`."""
    rows, per_paragraph = [], []
    name = f"Zero-shot LLM ({llm.model})"
    for corpus, (paragraphs, splits) in corpora.items():
        space = label_space(paragraphs)
        cats = sorted({canonical(c) for c in paragraphs["category"] if c != "unbiased"})
        pool = splits.loc[splits["subset"].isin(subsets) & splits["test_all"], "paragraph_id"].drop_duplicates()
        picked = pool.sample(min(max_paragraphs, len(pool)), random_state=seed)
        texts = paragraphs.set_index("paragraph_id").loc[picked, "text"].tolist()
        answers = dict(zip(picked, zero_shot(llm, gen, texts, cats, space), strict=True))
        for subset in subsets:
            sp = splits[(splits["subset"] == subset) & splits["paragraph_id"].isin(answers)].merge(
                paragraphs[["paragraph_id", "labels"]], on="paragraph_id")
            preds = [answers[i] for i in sp["paragraph_id"]]
            rows += test_scores(name, corpus, subset, sp, preds)
            per_paragraph.append(paragraph_rows(name, corpus, subset, sp, preds))
    return rows, per_paragraph
