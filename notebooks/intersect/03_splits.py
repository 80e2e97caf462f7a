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
corpus = "indic"
seed = 42
seen_train = 0.8
unbiased_train = 0.7
subsets = {
    "indic": {
        "C1": ["age+caste+gender", "age+gender", "age+gender+physical-appearance", "age+gender+socioeconomic",
               "caste+gender+socioeconomic", "caste+physical-appearance", "gender+physical-appearance+socioeconomic",
               "gender+religion", "religion+socioeconomic"],
        "C2": ["caste+gender", "caste+gender+physical-appearance", "caste+physical-appearance", "caste+socioeconomic",
               "age+gender+religion", "age+gender+socioeconomic", "gender+religion",
               "gender+physical-appearance+religion", "gender+religion+socioeconomic"],
        "C3": ["caste+socioeconomic", "caste+physical-appearance+socioeconomic", "age+gender", "age+gender+religion",
               "age+caste+gender", "caste+gender+physical-appearance", "gender+socioeconomic",
               "religion+socioeconomic"],
    },
    "western": {
        "C1": ["body+gender", "culture+disabled+race", "culture+gender", "culture+gender+social", "gender+disabled",
               "disabled+social", "gender+race", "gender+race+social", "victim+gender+race", "race+social"],
        "C2": ["body+race", "race+body+social", "culture+gender", "culture+race", "culture+race+social",
               "gender+disabled+social", "gender+race+social", "gender+social", "victim+social+race"],
        "C3": ["body+gender+culture", "gender+body+disabled", "body+gender", "culture+race", "gender+disabled",
               "disabled+social", "gender+disabled+social", "gender+social", "victim+social+race", "victim+race"],
    },
}

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.notebook_params(globals(), stage=f"intersect_splits@{corpus}")
S = P.intersect.splits
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
paragraphs = pd.read_parquet(DATA / "paragraphs.parquet")

# %%
splits = sp.make_splits(paragraphs, S.subsets[corpus], seen_train=S.seen_train, unbiased_train=S.unbiased_train,
                        seed=P.common.seed)
sp.check_disjoint(splits)
write_parquet(DATA / "splits.parquet", splits, index=False)
sizes = sp.summary(splits, paragraphs)
write_csv(ROOT / f"reports/intersect/splits/{corpus}_sizes.csv", sizes)
sizes
