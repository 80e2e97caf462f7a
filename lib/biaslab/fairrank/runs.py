"""One seed of every fairrank ranker: in each fold, train each ranker family at each λ, score the fold's re-ranked
lists and, for the rankers asked, its training pairs' passages (``fairrank_train``; §3.3, §4.3, App. A).

The training-pair scores are what the mitigation check reads (:func:`biaslab.fairrank.findings.mitigation_check`):
at its largest λ the penalty must lower the scores of the biased relevant passages it trained on, or it does not act.
Only its two rankers (:func:`biaslab.fairrank.findings.mitigation_rankers`) are scored there: the others' training
scores were read by nothing (≈ 2.5 s a ranker and fold on the 2-core CPU).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pandas as pd

from ..data import msmarco
from ..frozen import StateBank, check_bank
from . import prepare
from . import train as ft
from .findings import ranker_id


def train_seed(backbones, rankers, T, model_dirs: Mapping[str, str], banks: Mapping[str, StateBank], *,
               psi_mode: str, zeta_pos: str, pairs: pd.DataFrame, lists: pd.DataFrame, terms: pd.DataFrame,
               pool: pd.DataFrame, texts: Mapping[str, str], seed: int, device: str,
               runs_dir: Path | None = None, score_train: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`train_fold` in every fold of ``pairs``, ``lists`` and ``pool`` (their ``fold`` column, the evaluated
    year: :class:`biaslab.fairrank.prepare.Folds`), each fold's rankers trained afresh on its own pairs; its outputs
    with ``fold`` as their first column, and its run files under ``runs_dir/<fold>``."""
    scores, log = [], []
    for fold in pairs["fold"].unique():
        s, t = train_fold(backbones, rankers, T, model_dirs, banks, psi_mode=psi_mode, zeta_pos=zeta_pos,
                          pairs=prepare.fold_of(pairs, fold), lists=prepare.fold_of(lists, fold), terms=terms,
                          pool=prepare.fold_of(pool, fold), texts=texts, seed=seed, device=device,
                          runs_dir=None if runs_dir is None else Path(runs_dir) / fold, score_train=score_train)
        scores.append(s.assign(fold=fold))
        log.append(t.assign(fold=fold))
    scores, log = pd.concat(scores, ignore_index=True), pd.concat(log, ignore_index=True)
    return scores[["fold", *scores.columns[:-1]]], log[["fold", *log.columns[:-1]]]


def train_fold(backbones, rankers, T, model_dirs: Mapping[str, str], banks: Mapping[str, StateBank], *,
               psi_mode: str, zeta_pos: str, pairs: pd.DataFrame, lists: pd.DataFrame, terms: pd.DataFrame,
               pool: pd.DataFrame, texts: Mapping[str, str], seed: int, device: str,
               runs_dir: Path | None = None, score_train: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every ranker of ``rankers`` (``fairrank.rankers``) at every λ on every backbone, trained as ``T``
    (``fairrank.train``) with the regularisers' ``psi_mode`` / ``zeta_pos`` (``fairrank.loss``) and seed ``seed``:
    (scores: ``ranker, seed, split, qid, docid, score`` — ``split`` ``eval`` for the re-ranked ``lists``, ``train``
    for the training pairs' passages, scored only for the ranker ids in ``score_train`` —, training log: one row per
    ranker). With ``runs_dir``, each ranker's TREC run file is written there as it finishes
    (``<backbone>__<name>@<λ>.run``)."""
    train_rows = pairs.melt(id_vars=["qid", "query"], value_vars=["pos", "neg"], value_name="docid")
    train_rows = train_rows.drop_duplicates(["qid", "docid"])[["qid", "query", "docid"]].reset_index(drop=True)
    scores, log = [], []
    for backbone in backbones:
        bank = check_bank(banks[backbone], f"the saved states of {backbone}", model_dirs[backbone],
                          T.trainable_layers, knob="fairrank.train.trainable_layers", stage="fairrank_data")
        inputs = ft.make_inputs(model_dirs[backbone], bank, texts, T.max_length, family=T.family)
        for name, spec in rankers.items():
            data = pairs
            if spec.sampling == "lws":
                data = prepare.lws_pairs(pairs, pool, terms, share=spec.lws_share, seed=seed)
            if spec.objective == "pointwise":
                data = prepare.pointwise_rows(data)
            for lam in spec.lambdas:
                objective = ft.Objective(spec.objective, spec.mode, spec.target, lam, T.margin, spec.adv_lambda,
                                         spec.adv_hidden)
                model = ft.build_ranker(model_dirs[backbone], objective, family=T.family, n_frozen=bank.n_frozen,
                                        seed=seed)
                items = ft.training_items(data, objective, terms, inputs, psi_mode=psi_mode, zeta_pos=zeta_pos)
                fit = ft.fit(model, items, inputs, epochs=T.epochs, batch_size=T.batch_size,
                             learning_rate=T.learning_rate, head_learning_rate=T.head_learning_rate, warmup=T.warmup,
                             seed=seed, device=device)
                ranker = f"{backbone}|{ranker_id(name, lam)}"
                run = ft.rank_frame(lists, ft.score(model, lists, inputs, batch_size=T.score_batch_size), ranker, seed)
                scores.append(run.assign(split="eval"))
                if ranker in score_train:
                    on_train = ft.score(model, train_rows, inputs, batch_size=T.score_batch_size)
                    scores.append(ft.rank_frame(train_rows, on_train, ranker, seed).assign(split="train"))
                log.append({"ranker": ranker, "seed": seed, "items": len(items), **fit})
                if runs_dir is not None:
                    tag = ranker.replace("|", "__")
                    msmarco.write_run(Path(runs_dir) / f"{tag}.run", run, tag=tag)
                print(f"{ranker}: {len(items)} training items, loss {fit['train_loss']:.4f}", flush=True)
    cols = ["ranker", "seed", "split", "qid", "docid", "score"]
    return pd.concat(scores, ignore_index=True)[cols], pd.DataFrame(log)
