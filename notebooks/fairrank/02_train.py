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
# One run per seed of `fairrank.seeds` (the paper averages five), in each fold of `fairrank.data.folds` (train on
# one TREC DL year, re-rank the other's queries). For each backbone and each ranker of `fairrank.rankers`: the
# ranker (`fairrank.train.family`: the dense bi-encoder, or the cross-encoder) trained with its loss — the base
# pairwise hinge on tanh scores (eq. 12), the six penalty / reward scenarios (eqs. 17, 24), the pointwise variants
# (App. A, eqs. 29, 31) — or a baseline (LWS: bias-aware negatives; AdvBERT: an adversary on the pooled state behind
# gradient reversal), then its scores for every passage of its fold it re-ranks and — for the two rankers the
# mitigation check compares — for its training passages (`biaslab.fairrank.runs`). With
# `fairrank.train.trainable_layers` below the encoder's depth only the top layers train, on the frozen states the
# data stage saved.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.fairrank import findings
from biaslab.fairrank import runs as fruns
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
family = ...  # fairrank.train.family
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
lambda_figure = ...  # fairrank.eval.lambda_figure
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
banks = {b: StateBank.load(DATA / "states" / f"{b}.npz") for b in C.backbones}
scores, table = fruns.train_seed(C.backbones, C.rankers, T, M, banks, psi_mode=C.loss.psi, zeta_pos=C.loss.zeta_pos,
                                 pairs=pairs, lists=lists, terms=terms, pool=pool, texts=texts, seed=run_seed,
                                 device=P.common.device, runs_dir=DATA / "runs" / f"seed{run_seed}",
                                 score_train=findings.mitigation_rankers(C.backbones, C.rankers, C.eval.lambda_figure))

# %%
write_csv(ROOT / f"reports/fairrank/train/seed{run_seed}.csv", table)
write_parquet(DATA / "scores" / f"seed{run_seed}.parquet", scores, index=False)
table
