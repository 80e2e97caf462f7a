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
# # intersect — C1–C3 splits (paper §3.3, Table 7)
#
# For each predefined subset C_i of seen categories (Table 7, verbatim in params.yaml): train = a stratified
# 80 % of the seen-category paragraphs + 70 % of the unbiased ones; test sets D_test,Ci (seen), D_test,N−Ci
# (unseen) and D_test,N (all), each with the held-out 30 % unbiased paragraphs. The split table is checked for
# leakage: no paragraph is in a subset's training set and in one of its test sets.

# %%
import pandas as pd

from biaslab import config
from biaslab.intersect import splits as sp
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
corpus = "indic"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
seen_train = ...  # intersect.splits.seen_train
unbiased_train = ...  # intersect.splits.unbiased_train
validation = ...  # intersect.splits.validation
subsets = ...  # intersect.splits.subsets

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.stage_params(globals(), f"intersect_splits@{corpus}")
S = P.intersect.splits
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
paragraphs = pd.read_parquet(DATA / "paragraphs.parquet")

# %%
splits = sp.make_splits(paragraphs, S.subsets[corpus], seen_train=S.seen_train, unbiased_train=S.unbiased_train,
                        validation=S.validation, seed=P.common.seed)
sp.check_disjoint(splits)
write_parquet(DATA / "splits.parquet", splits, index=False)
sizes = sp.summary(splits, paragraphs)
write_csv(ROOT / f"reports/intersect/splits/{corpus}_sizes.csv", sizes)
sizes
