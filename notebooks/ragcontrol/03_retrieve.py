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
# # ragcontrol — what every embedder retrieves: embedder bias and utility (Kim et al. 2025, App. "Projecting and
# Sampling", "Measuring Utility on BEIR")
#
# For each task and every setting — the base embedder, each fine-tuned run × WiSE-FT merge weight, each projection α
# (base embedder, word "female" / "republican"), each sampling (N, τ) — the document retrieved (top-1, or one seeded
# draw) for every test question from the evaluation corpus, and the **embedder bias**: the share of retrieved
# documents judged bias1 minus the share judged bias2, in percent (female − male, conservative − liberal).
# Utility: nDCG@k re-ranking TREC DL's BM25 top-100 (BEIR is not obtainable offline) and task accuracy (the top-1
# document is one of the question's own released documents).

# %%
import matplotlib.pyplot as plt

from biaslab import config, models
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root, resolve
from biaslab.plots import save_figure, set_style
from biaslab.ragcontrol import figures, retrieval
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
tasks = ...  # ragcontrol.tasks
embedder = ...  # ragcontrol.embedder
max_seq_length = ...  # ragcontrol.max_seq_length
runs = ...  # ragcontrol.train.runs
merges = ...  # ragcontrol.train.merges
alphas = ...  # ragcontrol.projection.alphas
words = ...  # ragcontrol.projection.words
top_n = ...  # ragcontrol.sampling.top_n
taus = ...  # ragcontrol.sampling.taus
trec_dl = ...  # ragcontrol.utility.trec_dl
k = ...  # ragcontrol.utility.k
max_queries = ...  # ragcontrol.utility.max_queries
max_questions = ...  # ragcontrol.reader.max_questions
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "ragcontrol_retrieve")
C = P.ragcontrol
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
M = models.preflight([C.embedder], P.models)
seed_everything(P.common.seed)
set_style()
DL = retrieval.utility_sets(RAW, C.utility.trec_dl, C.utility.max_queries, P.common.seed)
print({y: d[0]["qid"].nunique() for y, d in DL.items()}, "judged TREC DL queries for utility")

# %%
retrieved, summary, subsets, per_query = retrieval.study(
    M[C.embedder], tasks=C.tasks, tasks_dir=ROOT / "data/processed/ragcontrol/tasks",
    models_dir=ROOT / "data/models/ragcontrol", runs=C.train.runs, merges=C.train.merges, projection=C.projection,
    sampling=C.sampling, utility_data=DL, utility_k=C.utility.k, max_questions=C.reader.max_questions,
    max_seq_length=C.max_seq_length, device=P.common.device, batch_size=P.common.batch_size, seed=P.common.seed)
write_parquet(ROOT / "data/processed/ragcontrol/retrieval/retrievals.parquet", retrieved, index=False)
write_csv(ROOT / "reports/ragcontrol/retrieval/embedders.csv", summary)
write_parquet(ROOT / "data/processed/ragcontrol/retrieval/reader_subset.parquet", retrieval.subset_frame(subsets),
              index=False)
write_parquet(ROOT / "data/processed/ragcontrol/retrieval/utility_per_query.parquet", per_query, index=False)
summary.round(3)

# %% [markdown]
# ## Embedder bias and utility per setting
# Fine-tuned embedders move the embedder bias towards bias1 (female / conservative) with the WiSE-FT weight m;
# projection moves it with α; sampling barely moves it (the paper's finding, App. "Sampling").

# %%
fig = figures.bias_vs_utility(summary, C.tasks, C.utility.k)
save_figure(fig, ROOT / "reports/ragcontrol/retrieval/bias_vs_utility.png")
plt.show()
