"""One cscl run = one method × one trade-off value × one seed on one task (§4.2, App. B.2): train, predict the
test split, score it (:func:`biaslab.metrics.fairness.equalized_odds_gaps`). A train stage calls :func:`run_seed`
(every task and setting of one seed), the sensitivity stage :func:`run_sensitivity`; everything they need arrives
as arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..frozen import check_bank
from ..metrics.fairness import equalized_odds_gaps
from . import head as hd
from . import train as ct
from .config import NEEDS
from .inlp import debiasing_projections

SCORES = ("f1", "macro_f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap", "n")


def objective(method, value: float | None) -> ct.Objective:
    """The training objective of a method (a ``cscl.methods`` entry) at one grid value: its mode's knobs
    (:data:`biaslab.cscl.config.NEEDS`) and λ."""
    m = method.mode
    if m not in ct.MODES:
        raise ValueError(f"{m} has no training objective of its own (inlp works on a CE encoder's features)")
    return ct.Objective(m, **({} if m == "ce" else {"lam": value}), **{k: getattr(method, k) for k in NEEDS[m]})


def score(rows: pd.DataFrame, pred: np.ndarray) -> dict:
    """Equalized-odds gaps, F1 and accuracy of ``pred`` on ``rows`` (columns ``y``, ``a``)."""
    out = equalized_odds_gaps(rows["y"].to_numpy(), pred, rows["a"].to_numpy())
    out.pop("rates")
    return out


def run_method(method, value: float | None, rows: pd.DataFrame, views: Mapping[str, Sequence[str]], *,
               bank: ct.StateBank, encoder_dir, train, seed: int, device: str) -> dict:
    """Train and score one setting. ``rows``: the task with its ``split`` column; ``views``: text → its augmented
    copies (training and validation rows; contrastive objectives); ``bank``: the frozen layers' states (empty for
    full fine-tuning); ``train``: the ``cscl.train`` section. Returns the scores, the training log, the test
    predictions and the test features; for ``ce``, also the features of every split (INLP's input)."""
    from transformers import AutoTokenizer

    tr, va, te = (rows[rows["split"] == s].reset_index(drop=True) for s in ("train", "val", "test"))
    n_classes, n_groups = int(rows["y"].max()) + 1, int(rows["a"].max()) + 1
    weight = hd.class_weights(tr["y"], n_classes, train.class_weight)
    tok = AutoTokenizer.from_pretrained(str(encoder_dir))
    model = ct.build_model(encoder_dir, n_classes, n_groups, objective(method, value),
                           head_hidden=train.head_hidden, seed=seed, n_frozen=bank.n_frozen,
                           grad_cache_chunk=train.grad_cache_chunk, class_weights=weight)
    two_stage = method.mode == "contrastive"
    log = ct.fit(model, tok, tr, val=va, views=[list(views[t]) for t in tr["text"]],
                 val_views=[list(views[t]) for t in va["text"]],
                 bank=bank, epochs=train.pretrain_epochs if two_stage else train.epochs,
                 batch_size=train.pretrain_batch_size if two_stage else train.batch_size,
                 learning_rate=train.learning_rate,
                 head_learning_rate=train.head_learning_rate, max_length=train.max_length,
                 seed=seed, device=device, patience=train.patience or None)
    # test features always; train / val only where a head is fitted on them (two-stage) or INLP starts (ce)
    needed = (("train", tr), ("val", va), ("test", te)) if two_stage or method.mode == "ce" else (("test", te),)
    enc = {s: ct.encode(model, tok, d["text"].tolist(), max_length=train.max_length, batch_size=train.batch_size,
                        bank=bank) for s, d in needed}
    if two_stage:  # stage 2: the MLP head with CE on the frozen encoder's features
        head, head_log = hd.fit_head(enc["train"], tr["y"].to_numpy(), n_classes, hidden=train.head_hidden,
                                     epochs=train.head_epochs, batch_size=train.batch_size,
                                     learning_rate=train.head_learning_rate, seed=seed,
                                     val=(enc["val"], va["y"].to_numpy()), patience=train.patience or None,
                                     class_weights=weight)
        log["head"] = head_log
    else:
        head = model.head  # where training left it: the GPU under common.device: cuda
    pred = hd.predict_head(head, enc["test"])
    out = {"scores": score(te, pred), "log": log, "pred": pred, "test_features": enc["test"]}
    if method.mode == "adversarial":  # do the discriminators read the group? (result columns adv_*)
        out["adversaries"] = {**ct.adversary_diagnostics(model, enc["test"], te["y"], te["a"]),
                              "group_majority": top_prediction_share(te["a"].to_numpy())}
    if method.mode == "ce":
        out["features"] = enc
    return out


def top_prediction_share(pred: np.ndarray) -> float:
    """Share of the most frequent value in ``pred``: of predictions, 1.0 = a constant classifier; of groups, the
    largest group's share."""
    return float(np.unique(pred, return_counts=True)[1].max() / len(pred)) if len(pred) else float("nan")


def outcome(res: dict, test: pd.DataFrame, keys: Mapping, **extra) -> tuple[dict, pd.DataFrame]:
    """One run's result row — ``keys`` (task, method, …, value, seed), its scores, ``top_pred_share`` and ``extra``
    — and its test predictions: the rows' ``y`` and ``a``, ``keys`` (less ``mode``, a property of the method), the
    row number and the prediction."""
    s = res["scores"]
    row = {**keys, **{k: s[k] for k in SCORES}, "top_pred_share": top_prediction_share(res["pred"]), **extra}
    pred = test[["y", "a"]].assign(**{k: v for k, v in keys.items() if k != "mode"}, row=range(len(test)),
                                   pred=res["pred"])
    return row, pred


def run_seed(methods: Mapping, tasks: Sequence[str], tasks_dir, *, encoder_dir, train, seed: int,
             device: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, np.ndarray]]:
    """Every task × method × grid value of one seed (§4.2; a ``cscl_train@SEED`` stage): the result table (one row
    per setting, :func:`outcome`), the test predictions, and the test features by ``task|method|value``.
    ``methods``: the ``cscl.methods`` section, CE first when an INLP method needs its encoder's features;
    ``tasks_dir``: the cscl_data stage's folder (``TASK/rows.parquet``, ``views.parquet``, ``states.npz``);
    ``train``: the ``cscl.train`` section."""
    from pathlib import Path

    order = list(methods)
    if any(m.mode == "inlp" for m in methods.values()):
        ce = [n for n in order if methods[n].mode == "ce"]
        if not ce:
            raise ValueError("cscl.methods: INLP starts from a CE encoder; add a method with mode: ce")
        order = ce + [n for n in order if n not in ce]  # the CE encoder first, so INLP can reuse it
    results, predictions, features = [], [], {}
    for task in tasks:
        folder = Path(tasks_dir) / task
        rows = pd.read_parquet(folder / "rows.parquet")
        views = pd.read_parquet(folder / "views.parquet").set_index("text")["views"]
        bank = check_bank(ct.StateBank.load(folder / "states.npz"), folder / "states.npz", encoder_dir,
                          train.trainable_layers, knob="cscl.train.trainable_layers", stage="cscl_data")
        test = rows[rows["split"] == "test"].reset_index(drop=True)
        ce_features = None
        for name in order:
            method = methods[name]
            if method.mode == "inlp":  # one INLP run serves every value of the grid
                inlp = run_inlp(method, rows, ce_features, train=train, seed=seed)
            for value in ([None] if method.mode == "ce" else method.grid):
                if method.mode == "inlp":
                    res = inlp[value]
                else:
                    res = run_method(method, value, rows, views, bank=bank, encoder_dir=encoder_dir, train=train,
                                     seed=seed, device=device)
                    if method.mode == "ce":
                        ce_features = res["features"]
                row, pred = outcome(res, test, {"task": task, "method": name, "mode": method.mode, "value": value,
                                                "seed": seed}, **res.get("adversaries", {}))
                results.append(row)
                predictions.append(pred)
                features[f"{task}|{name}|{value}"] = res["test_features"].astype("float32")
                print(f"{task} {name} {value}: F1 {row['f1']:.3f}, ΔEO {row['eo_gap']:.3f}")
    return pd.DataFrame(results), pd.concat(predictions, ignore_index=True), features


def run_sensitivity(variants: Sequence[tuple], rows: pd.DataFrame, *, task: str, method: str,
                    lambdas: Sequence[float], seeds: Sequence[int], encoder_dir,
                    device: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every seed × variant × λ of the sensitivity study (§4.2 RQ3; the ``cscl_sensitivity`` stage): the result
    table (one row per run, :func:`outcome`, with its ``variant`` and ``epochs_run``) and the test predictions.
    ``variants``: (label, method section, ``cscl.train`` section, views, state bank) as :func:`sensitivity_variants`
    and :func:`augmented_inputs` build them; ``method``: the varied method's name in ``cscl.methods``; ``rows``: the
    task with its ``split`` column."""
    test = rows[rows["split"] == "test"].reset_index(drop=True)
    results, predictions = [], []
    for seed in seeds:
        for label, m, t, views, bank in variants:
            for lam in lambdas:
                res = run_method(m, lam, rows, views, bank=bank, encoder_dir=encoder_dir, train=t, seed=seed,
                                 device=device)
                row, pred = outcome(res, test, {"task": task, "method": method, "variant": label, "value": lam,
                                                "seed": seed}, epochs_run=res["log"]["epochs_run"])
                results.append(row)
                predictions.append(pred)
                print(f"{label} λ={lam:g} seed {seed}: F1 {row['f1']:.3f}, ΔEO {row['eo_gap']:.3f}")
    return pd.DataFrame(results), pd.concat(predictions, ignore_index=True)


def run_inlp(method, rows: pd.DataFrame, features: dict[str, np.ndarray], *, train, seed: int) -> dict[float, dict]:
    """INLP (§4.2) on a CE encoder's features, for every value of the method's grid (``method.grid``: iteration
    counts, e.g. {20, 50}): the debiasing projections learnt on train (dev accuracy on val), then per value the MLP
    head on the projected features (Ravfogel et al.'s guarding layer + classifier). ``{value: result}``.

    One INLP run serves the whole grid: its first n iterations are exactly a run of n
    (:func:`biaslab.cscl.inlp.debiasing_projections`), so each value's result is the one a grid of that value alone
    gives, bit for bit (tested). The grid's values come as params.yaml's numbers (the schema's floats, 20.0): a
    whole one counts iterations, anything else is refused by the INLP run."""
    tr, va, te = (rows[rows["split"] == s].reset_index(drop=True) for s in ("train", "val", "test"))
    counts = {v: int(v) if not isinstance(v, bool) and float(v).is_integer() else v for v in method.grid}
    runs = debiasing_projections(features["train"], tr["a"].to_numpy(), features["val"], va["a"].to_numpy(),
                                 list(counts.values()), min_accuracy=float(method.min_accuracy),
                                 by_class=bool(method.by_class), seed=int(seed), main_train=tr["y"].to_numpy(),
                                 main_dev=va["y"].to_numpy())
    n_classes = int(rows["y"].max()) + 1
    weight = hd.class_weights(tr["y"], n_classes, train.class_weight)
    out = {}
    for value in method.grid:
        P, kept, _ = runs[counts[value]]
        proj = {s: features[s] @ P.T for s in features}
        head, head_log = hd.fit_head(proj["train"], tr["y"].to_numpy(), n_classes, hidden=train.head_hidden,
                                     epochs=train.head_epochs, batch_size=train.batch_size,
                                     learning_rate=train.head_learning_rate, seed=seed,
                                     val=(proj["val"], va["y"].to_numpy()), patience=train.patience or None,
                                     class_weights=weight)
        pred = hd.predict_head(head, proj["test"])
        out[value] = {"scores": score(te, pred), "log": {"classifiers_kept": len(kept), "head": head_log},
                      "pred": pred, "test_features": proj["test"]}
    return out


def save_features(path, features: Mapping[str, np.ndarray]) -> None:
    """Test-set features per setting (keys ``task|method|value``), written atomically."""
    ct.save_npz(path, **features)


def load_features(path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def sensitivity_variants(method, train, *, temperatures: Sequence[float], batch_sizes: Sequence[int],
                         grad_cache_chunk: int) -> list[tuple[str, object, object]]:
    """The one-at-a-time variations of §4.2 RQ3 (Fig. 4) around the default setting: each τ in ``temperatures`` with
    the default batch, each pre-training batch size in ``batch_sizes`` with the default τ (the fine-tuning batch of
    the classifier head stays ``train.batch_size``, as the paper's Table 5). Returns (label, method, train)
    triples — the method and ``cscl.train`` sections with the varied value replaced. Batches above
    ``grad_cache_chunk`` (> 0) are encoded under gradient caching, as the paper trains its 128- and 256-example
    batches; the default itself is not repeated (its runs are the main stage's)."""
    if method.mode != "contrastive":
        raise ValueError(f"the sensitivity study varies two-stage CL (mode contrastive), got mode {method.mode!r}: "
                         "set cscl.sensitivity.method to a contrastive method")
    out = []
    for t in temperatures:
        if t != method.temperature:
            out.append((f"τ={t:g}", method.model_copy(update={"temperature": float(t)}), train))
    for b in batch_sizes:
        if b != train.pretrain_batch_size:
            chunk = grad_cache_chunk if 0 < grad_cache_chunk < b else 0
            out.append((f"batch={b}", method, train.model_copy(update={"pretrain_batch_size": int(b),
                                                                       "grad_cache_chunk": chunk})))
    return out


def default_label(method, batch_size: int, augmentation: str) -> str:
    """The label of the main stage's setting (``method``'s τ, ``cscl.train.pretrain_batch_size``,
    ``cscl.augment.strategy``) in
    the sensitivity table and figure."""
    return f"default (τ={method.temperature:g}, batch={batch_size}, {augmentation})"


def augmented_inputs(texts: Sequence[str], augmentation: str, bank: ct.StateBank, *, encoder_dir, alpha: float,
                     n_aug: int, seed: int, keep, max_length: int, batch_size: int, device: str, edits=None,
                     synonym_fn=None, next_words=None, visible_only: bool) -> tuple[pd.Series, ct.StateBank]:
    """The inputs of an augmentation variant (§4.2 RQ3): ``texts``' views by ``augmentation``
    (:func:`biaslab.cscl.augment.views`) as a text → views series, and ``bank`` extended with the frozen states of the
    new views (the originals' are already in it). ``visible_only`` (``cscl.augment.visible_only``): the CLM methods
    predict only the places within the first ``max_length`` words, the ones the encoder can see (module doc of
    :mod:`biaslab.cscl.augment`). ``edits``: the views' word replacements (:func:`biaslab.cscl.terms.view_edits`)."""
    from . import augment

    texts = list(texts)
    v = augment.views(texts, augmentation, alpha=alpha, n_aug=n_aug, seed=seed, keep=keep, edits=edits,
                      synonym_fn=synonym_fn, next_words=next_words, visible_words=max_length if visible_only else None)
    new = [x for vs in v for x in vs if x not in bank.index]
    extra = ct.compute_states(encoder_dir, new, n_frozen=bank.n_frozen, max_length=max_length,
                              batch_size=batch_size, device=device)
    return pd.Series(v, index=texts, dtype=object), bank.merged(extra)


def augmentation_variants(texts: Sequence[str], augmentations: Sequence[str], bank: ct.StateBank, method, train, *,
                          encoder_dir, alpha: float, n_aug: int, seed: int, keep, visible_only: bool, device: str,
                          edits=None, synonym_fn=None, next_words=None) -> tuple[list[tuple], dict[str, list[str]]]:
    """The sensitivity study's augmentation bars (§4.2 RQ3, Fig. 4): per augmentation, ``method`` trained as
    ``train`` (``cscl.train``) on ``texts`` viewed by it (:func:`augmented_inputs`) — a (label, method, train, views,
    bank) variant of :func:`run_sensitivity` —, and its first view of the first three texts, to show."""
    variants, examples = [], {}
    for aug in augmentations:
        v, b = augmented_inputs(texts, aug, bank, encoder_dir=encoder_dir, alpha=alpha, n_aug=n_aug, seed=seed,
                                keep=keep, edits=edits, max_length=train.max_length, visible_only=visible_only,
                                batch_size=train.batch_size, device=device, synonym_fn=synonym_fn,
                                next_words=next_words)
        variants.append((f"aug={aug}", method, train, v, b))
        examples[aug] = [v.iloc[i][0] for i in range(3)]
    return variants, examples
