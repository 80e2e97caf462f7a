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
# # ragfair — contrastive training pairs (paper §4.3, App. 6.2)
#
# Each pair: a neutral query, a neutral passage and two biased variants favouring either group. Offline they come
# from real BBQ text of the *training* templates (`biaslab.ragfair.pairs`: question; ambiguous context;
# stereotype-consistent disambiguated context; its group-swapped twin). The paper's LLM pipeline (TREC Fair topics
# × BBQ group pairs, Wikipedia retrieval, three LLM rephrasings) is not reproduced offline; `n_pairs` plays the
# role of its 20,985-pair sample.

# %%
import pandas as pd

from biaslab import config
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root
from biaslab.ragfair import pairs as pr

# %% tags=["parameters"]
seed = 42
n_pairs = 256

# %%
P = config.notebook_params(globals(), stage="ragfair_pairs")
ROOT = repo_root()
bbq = pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet")
train_rows = bbq[bbq["split"] == "train"]
candidates = pr.bbq_pairs(train_rows)
pairs = pr.sample_pairs(candidates, P.ragfair.pairs.n_pairs, seed=P.common.seed)
assert not set(pairs["question_index"] + pairs["category"]) & set(
    bbq.loc[bbq["split"] == "eval", "question_index"] + bbq.loc[bbq["split"] == "eval", "category"]), \
    "an evaluation template leaked into the training pairs"
write_parquet(ROOT / "data/processed/ragfair/pairs.parquet", pairs, index=False)
counts = (pairs.groupby("category").size().rename("pairs").to_frame()
          .join(candidates.groupby("category").size().rename("available")).reset_index())
write_csv(ROOT / "reports/ragfair/pairs/counts.csv", counts)
print(f"{len(pairs)} pairs sampled from {len(candidates)} (paper: 20,985 from 135,845)")
counts

# %%
pairs.head(3)[["query", "passage", "biased_stereotyped", "biased_non_stereotyped"]]
