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
# # intersect — train one BiasRetriever (paper §4.2, Algorithm 1)
#
# One run = (corpus, triplet strategy, category subset C_i), named `corpus-strategy-Ci`. The run's training
# triplets are those of its strategy whose anchor paragraph is in D_train,Ci (§3.5: "filtered to create
# dedicated training sets"), optionally subsampled to `max_triplets`. The retriever is fine-tuned with
# sentence-transformers' MultipleNegativesRankingLoss (in-batch negatives + the mined hard negative); batches never
# repeat a text. Base model `base_model` (paper: msmarco-roberta-base-v2; MiniLM is the paper's App. A.7 ablation
# and the CPU default).

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import config, models
from biaslab.io import write_json
from biaslab.paths import repo_root
from biaslab.plots import loss_curve, set_style
from biaslab.train import train_mnrl

# %% tags=["parameters"]
run = "indic-srk4-C1"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
base_model = ...  # intersect.train.base_model
epochs = ...  # intersect.train.epochs
batch_size = ...  # intersect.train.batch_size
learning_rate = ...  # intersect.train.learning_rate
warmup_ratio = ...  # intersect.train.warmup_ratio
scale = ...  # intersect.train.scale
max_seq_length = ...  # intersect.train.max_seq_length
max_triplets = ...  # intersect.train.max_triplets
grad_cache_chunk = ...  # intersect.train.grad_cache_chunk
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"intersect_train@{run}")
T = P.intersect.train
corpus, strategy, subset = run.split("-")
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
M = models.preflight([T.base_model], P.models)
set_style()

# %%
triplets = pd.read_parquet(DATA / "triplets.parquet")
splits = pd.read_parquet(DATA / "splits.parquet")
train_ids = set(splits.loc[(splits["subset"] == subset) & splits["train"], "paragraph_id"])
held_out = set(splits.loc[(splits["subset"] == subset) & (splits["test_all"] | splits["val"]), "paragraph_id"])
pool = triplets[(triplets["strategy"] == strategy) & triplets["anchor_id"].isin(train_ids)]
assert not set(pool["anchor_id"]) & held_out, "a test or validation paragraph leaked into training"
if T.max_triplets and len(pool) > T.max_triplets:
    pool = pool.sample(T.max_triplets, random_state=P.common.seed)
print(f"{run}: {len(pool)} training triplets from {pool['anchor_id'].nunique()} anchor paragraphs")

# %%
out, summary = train_mnrl(M[T.base_model], pool, ROOT / "data/models/intersect" / run, epochs=T.epochs,
                          batch_size=T.batch_size, learning_rate=T.learning_rate, warmup_ratio=T.warmup_ratio,
                          scale=T.scale, max_seq_length=T.max_seq_length, seed=P.common.seed,
                          device=P.common.device, grad_cache_chunk=T.grad_cache_chunk,
                          record={"base": T.base_model, "run": run, "corpus": corpus, "strategy": strategy,
                                  "subset": subset})
write_json(ROOT / f"reports/intersect/train/{run}.json", summary | {"run": run})
fig = loss_curve(summary, ylabel="MNRL loss", title=run)
plt.show()
