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
from biaslab.llm import from_params, gen_params
from biaslab.paths import repo_root, resolve
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
corpus = "indic"
seed = 42
device = "auto"
batch_size = 64
raw_dir = "data/raw"
backend = "rules"
model = "smollm2-135m-instruct"
max_new_tokens = 256
temperature = 0.0
top_p = 1.0
cache = True
openai = {"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY",
          "timeout": 60.0, "max_retries": 2}
mining_model = "minilm"
k = 4
k_large = 10
unbiased_negative_share = 0.2
llm_per_strategy = 500

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.notebook_params(globals(), stage=f"intersect_triplets@{corpus}")
T = P.intersect.triplets
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
models.preflight([T.mining_model] + ([P.llm.model] if P.llm.backend == "transformers" else []))
seed_everything(P.common.seed)
paragraphs = pd.read_parquet(DATA / "paragraphs.parquet")
ref = pd.read_parquet(DATA / "reference.parquet")
enc = Encoder(T.mining_model, device=P.common.device, batch_size=P.common.batch_size)
para_vecs = enc.encode(paragraphs["text"].tolist(), show_progress=True)
ref_vecs = enc.encode(ref["text"].tolist(), show_progress=True)
pools = tr.RankedPools(ref, ref_vecs, para_vecs)

# %%
mined = {
    "srk4": tr.mine(paragraphs, ref, pools, k=T.k),
    "srk10": tr.mine(paragraphs, ref, pools, k=T.k_large),
    "srk4un": tr.mine(paragraphs, ref, pools, k=T.k, unbiased_negative_share=T.unbiased_negative_share,
                      seed=P.common.seed),
}
llm = from_params(P.llm, device=P.common.device)
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
