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
# # intersect — intersectional paragraphs (paper §3.1.2, Table 4, Figs. 13–16)
#
# Indic-Intersect (`corpus = indic`, from INDI-REFERENCE) or Western-Intersect (`western`, from
# SBIC-REFERENCE). A biased paragraph of category `a+b(+c)` is written from one biased reference sentence per
# axis (Fig. 13 / 14 prompt); an unbiased paragraph from the most coherent combination of unbiased sentences,
# one per axis of a drawn intersectional context (mean pairwise cosine under all-MiniLM-L6-v2, exhaustive over
# `pool_size` candidates per axis), with the Fig. 15 prompt. With the offline `rules` backend the paragraphs are
# the real sentences in a fixed neutral frame (`biaslab.intersect.paragraphs.BIASED_TEMPLATE` /
# `UNBIASED_TEMPLATE`), not invented text. Sizes are parameters (paper: 3,700 / 3,704 paragraphs).

# %%
import pandas as pd

from biaslab import config, models
from biaslab.embed import Encoder
from biaslab.intersect import paragraphs as para
from biaslab.io import write_csv, write_parquet
from biaslab.llm import from_params, gen_params, needs_model
from biaslab.paths import repo_root
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
corpus = "indic"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
backend = ...  # llm.backend
model = ...  # llm.model
max_new_tokens = ...  # llm.max_new_tokens
temperature = ...  # llm.temperature
top_p = ...  # llm.top_p
cache = ...  # llm.cache
openai = ...  # llm.openai
pool_size = ...  # intersect.paragraphs.pool_size
n_biased = ...  # intersect.paragraphs.corpora.indic.n_biased
n_unbiased = ...  # intersect.paragraphs.corpora.indic.n_unbiased
categories = ...  # intersect.paragraphs.corpora.indic.categories

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.stage_params(globals(), f"intersect_paragraphs@{corpus}")
C = P.intersect.paragraphs.corpora[corpus]
ROOT = repo_root()
DATA = ROOT / "data/processed/intersect" / corpus
M = models.preflight([P.models.encoder, *needs_model(P.llm)], P.models)
seed_everything(P.common.seed)
llm = from_params(P.llm, device=P.common.device, model_dirs=M)
enc = Encoder(M[P.models.encoder], device=P.common.device, batch_size=P.common.batch_size)
ref = pd.read_parquet(DATA / "reference.parquet")

# %%
paragraphs = para.build_paragraphs(ref, corpus=corpus, categories=C.categories, n_biased=C.n_biased,
                                   n_unbiased=C.n_unbiased, llm=llm, gen=gen_params(P.llm, P.common.seed),
                                   encoder=enc, pool_size=P.intersect.paragraphs.pool_size, seed=P.common.seed)
write_parquet(DATA / "paragraphs.parquet", paragraphs, index=False)
for kind in ("unbiased", None):
    row = paragraphs[(paragraphs["category"] == "unbiased") == (kind == "unbiased")].iloc[0]
    print(f"[{row['category']}] {row['text']}\n")

# %% [markdown]
# Paragraphs per category (the paper's Table 4 has 3,700 / 3,704 in total):

# %%
counts = paragraphs["category"].value_counts().rename_axis("category").reset_index(name="paragraphs")
write_csv(ROOT / f"reports/intersect/paragraphs/{corpus}_counts.csv", counts)
counts
