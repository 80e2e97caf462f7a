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
# # intersect — triplet mining (paper §3.4–3.5, Table 1, App. A.4)
#
# Anchors are the corpus's paragraphs; positives and negatives are reference sentences mined from an exact
# FAISS index (see `biaslab.intersect.triplets` for the rules). Four master corpora: SR-k4, SR-k10,
# SR-k4-UN (20 % unbiased negatives for biased anchors) and SR-k4+LLM (SR-k4 plus the App. A.4 LLM strategies;
# offline only the strategies that need no free generation run). Training runs later keep only the triplets
# whose anchor is in their own C_i training set.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.data import seat as seat_data
from biaslab.embed import Encoder
from biaslab.intersect import triplets as tr
from biaslab.io import write_csv, write_parquet
from biaslab.llm import from_params, gen_params, needs_model
from biaslab.paths import repo_root, resolve
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
corpus = "indic"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
backend = ...  # llm.backend
model = ...  # llm.model
max_new_tokens = ...  # llm.max_new_tokens
temperature = ...  # llm.temperature
top_p = ...  # llm.top_p
cache = ...  # llm.cache
openai = ...  # llm.openai
mining_model = ...  # intersect.triplets.mining_model
k = ...  # intersect.triplets.k
k_large = ...  # intersect.triplets.k_large
unbiased_negative_share = ...  # intersect.triplets.unbiased_negative_share
llm_per_strategy = ...  # intersect.triplets.llm_per_strategy
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.stage_params(globals(), f"intersect_triplets@{corpus}")
T = P.intersect.triplets
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
M = models.preflight([T.mining_model, *needs_model(P.llm)], P.models)
seed_everything(P.common.seed)
paragraphs = pd.read_parquet(DATA / "paragraphs.parquet")
ref = pd.read_parquet(DATA / "reference.parquet")
enc = Encoder(M[T.mining_model], device=P.common.device, batch_size=P.common.batch_size)
para_vecs = enc.encode(paragraphs["text"].tolist(), show_progress=True)
ref_vecs = enc.encode(ref["text"].tolist(), show_progress=True)
pools = tr.RankedPools(ref, ref_vecs, para_vecs)

# %%
mined = {
    "srk4": tr.mine(paragraphs, ref, pools, k=T.k, unbiased_negative_share=0.0, seed=P.common.seed),
    "srk10": tr.mine(paragraphs, ref, pools, k=T.k_large, unbiased_negative_share=0.0, seed=P.common.seed),
    "srk4un": tr.mine(paragraphs, ref, pools, k=T.k, unbiased_negative_share=T.unbiased_negative_share,
                      seed=P.common.seed),
}
llm = from_params(P.llm, device=P.common.device, model_dirs=M)
extra, llm_counts = tr.llm_triplets(paragraphs, ref, pools, llm, gen_params(P.llm, P.common.seed),
                                    attribute_words=seat_data.load_attribute_words(resolve(P.data.raw_dir, ROOT)),
                                    para_vecs=para_vecs, ref_vecs=ref_vecs, per_strategy=T.llm_per_strategy,
                                    seed=P.common.seed)
mined["srk4llm"] = pd.concat([mined["srk4"], extra], ignore_index=True)
triplets = pd.concat([t.assign(strategy=s) for s, t in mined.items()], ignore_index=True)
write_parquet(DATA / "triplets.parquet", triplets, index=False)
triplets.groupby("strategy").head(1)[["strategy", "anchor", "positive", "negative"]]

# %% [markdown]
# Triplet counts in the layout of Table 1 (ours are smaller because the corpora are smaller by default), and
# what each LLM strategy contributed:

# %%
counts = tr.counts_table(mined, corpus)
write_csv(ROOT / f"reports/intersect/triplets/{corpus}_counts.csv", counts)
write_csv(ROOT / f"reports/intersect/triplets/{corpus}_llm_strategies.csv", llm_counts)
display(counts, llm_counts)  # noqa: F821
