# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -all
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # fairrank — every ranker at every λ, one seed (Seyedsalehi et al., §3.3, §4.3, App. A)
#
# One run per seed of `fairrank.seeds` (the paper averages five). For each backbone and each ranker of
# `fairrank.rankers`: the cross-encoder trained with its loss — the base pairwise hinge on tanh scores (eq. 12), the
# six penalty / reward scenarios (eqs. 17, 24), the pointwise variants (App. A, eqs. 29, 31) — or a baseline (LWS:
# bias-aware negatives; AdvBERT: an adversary on the [CLS] state behind gradient reversal), then its scores for
# every DL19 passage it re-ranks. With `fairrank.train.trainable_layers` below the encoder's depth only the top
# layers train, on the frozen states the data stage saved.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.data import msmarco
from biaslab.fairrank import findings, prepare
from biaslab.fairrank import train as ft
from biaslab.frozen import StateBank
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
run_seed = 0  # the member this notebook runs (one of fairrank.seeds)
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
device = ...  # common.device
backbones = ...  # fairrank.backbones
rerank_depth = ...  # fairrank.data.rerank_depth
batch_size = ...  # fairrank.train.batch_size
learning_rate = ...  # fairrank.train.learning_rate
head_learning_rate = ...  # fairrank.train.head_learning_rate
epochs = ...  # fairrank.train.epochs
warmup = ...  # fairrank.train.warmup
max_length = ...  # fairrank.train.max_length
trainable_layers = ...  # fairrank.train.trainable_layers
margin = ...  # fairrank.train.margin
score_batch_size = ...  # fairrank.train.score_batch_size
psi = ...  # fairrank.loss.psi
zeta_pos = ...  # fairrank.loss.zeta_pos
rankers = ...  # fairrank.rankers
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"fairrank_train@{run_seed}")
run_seed = int(run_seed)
C, T = P.fairrank, P.fairrank.train
ROOT = repo_root()
DATA = ROOT / "data/processed/fairrank"
M = models.preflight(C.backbones, P.models)
pairs = pd.read_parquet(DATA / "pairs.parquet")
lists = pd.read_parquet(DATA / "lists.parquet")
lists = lists[lists["rank"] <= C.data.rerank_depth].reset_index(drop=True)
docs = pd.read_parquet(DATA / "docs.parquet")
terms = pd.read_parquet(DATA / "terms.parquet")
texts = dict(zip(docs["docid"], docs["text"], strict=True))
pool = pd.read_parquet(DATA / "lws_pool.parquet")

# %%
runs, log = [], []
for backbone in C.backbones:
    bank = StateBank.load(DATA / "states" / f"{backbone}.npz")
    if bank.n_frozen != ft.frozen_count(M[backbone], T.trainable_layers):
        raise ValueError(f"{DATA / 'states' / (backbone + '.npz')} holds {bank.n_frozen} frozen layers, "
                         "fairrank.train.trainable_layers asks for another number: rerun the fairrank_data stage")
    inputs = ft.make_inputs(M[backbone], bank, texts, T.max_length)
    for name, spec in C.rankers.items():
        data = pairs
        if spec.sampling == "lws":
            data = ft.lws_pairs(pairs, pool, terms, share=spec.lws_share, seed=run_seed)
        if spec.objective == "pointwise":
            data = prepare.pointwise_rows(data)
        for lam in spec.lambdas:
            objective = ft.Objective(spec.objective, spec.mode, spec.target, lam, T.margin, spec.adv_lambda,
                                     spec.adv_hidden)
            model = ft.build_ranker(M[backbone], objective, n_frozen=bank.n_frozen, seed=run_seed)
            items = ft.training_items(data, objective, terms, inputs, psi_mode=C.loss.psi, zeta_pos=C.loss.zeta_pos)
            fit = ft.fit(model, items, inputs, epochs=T.epochs, batch_size=T.batch_size, learning_rate=T.learning_rate,
                         head_learning_rate=T.head_learning_rate, warmup=T.warmup, seed=run_seed, device=P.common.device)
            ranker = f"{backbone}|{findings.ranker_id(name, lam)}"
            run = ft.rank_frame(lists, ft.score(model, lists, inputs, batch_size=T.score_batch_size), ranker, run_seed)
            runs.append(run)
            msmarco.write_run(DATA / "runs" / f"seed{run_seed}" / f"{ranker.replace('|', '__')}.run", run,
                              tag=ranker.replace("|", "__"))
            log.append({"ranker": ranker, "seed": run_seed, "items": len(items), **fit})
            print(f"{ranker}: {len(items)} training items, loss {fit['train_loss']:.4f}")

# %%
table = pd.DataFrame(log)
write_csv(ROOT / f"reports/fairrank/train/seed{run_seed}.csv", table)
write_parquet(DATA / "scores" / f"seed{run_seed}.parquet", pd.concat(runs, ignore_index=True), index=False)
table
