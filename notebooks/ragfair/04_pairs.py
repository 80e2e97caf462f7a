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
# Each pair: a neutral query, a neutral passage and two biased variants favouring either group.
#
# * `source: bbq` (default, offline): real BBQ text of the *training* templates (`biaslab.ragfair.pairs`:
#   question; ambiguous context; stereotype-consistent disambiguated context; its group-swapped twin).
# * `source: llm`: the paper's pipeline (`biaslab.ragfair.llm_pairs`): TREC Fair 2022 topic × BBQ group pair →
#   LLM neutral query → FAISS top-k WikiText-2 sentences → three LLM rephrasings, every response cached. It needs a
#   real LLM (`llm.backend: transformers` or `openai`); the offline rules backend refuses it rather than invent text.
#
# `n_pairs` plays the role of the paper's 20,985-pair sample.

# %%
import math
from dataclasses import replace

import pandas as pd

from biaslab import config, models
from biaslab.data import trec_fair, wikitext
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_parquet
from biaslab.llm import from_params, gen_params, needs_model
from biaslab.paths import repo_root, resolve
from biaslab.ragfair import llm_pairs
from biaslab.ragfair import pairs as pr

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
raw_dir = ...  # data.raw_dir
base_model = ...  # ragfair.train.base_model
backend = ...  # llm.backend
model = ...  # llm.model
max_new_tokens = ...  # llm.max_new_tokens
temperature = ...  # llm.temperature
top_p = ...  # llm.top_p
cache = ...  # llm.cache
openai = ...  # llm.openai
source = ...  # ragfair.pairs.source
n_pairs = ...  # ragfair.pairs.n_pairs
llm_pipeline = ...  # ragfair.pairs.llm_pipeline
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
batch_size = ...  # common.batch_size

# %%
P = config.stage_params(globals(), "ragfair_pairs")
ROOT = repo_root()
bbq = pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet")
train_rows = bbq[bbq["split"] == "train"]
S = P.ragfair.pairs
if S.source == "bbq":
    candidates = pr.bbq_pairs(train_rows)
    pairs = pr.sample_pairs(candidates, S.n_pairs, seed=P.common.seed)
    assert not set(pairs["question_index"] + pairs["category"]) & set(
        bbq.loc[bbq["split"] == "eval", "question_index"] + bbq.loc[bbq["split"] == "eval", "category"]), \
        "an evaluation template leaked into the training pairs"
    available = candidates.groupby("category").size().rename("available")
else:
    L = S.llm_pipeline
    RAW = resolve(P.data.raw_dir, ROOT)
    M = models.preflight([P.ragfair.train.base_model, *needs_model(P.llm)], P.models)
    topics = trec_fair.load(RAW)
    topics = topics["topic"][topics["split"] == "train"] if L.topics == "train" else topics["topic"]
    groups = llm_pairs.group_pairs(train_rows, L.group_pairs_per_category, seed=P.common.seed)
    space = llm_pairs.grid(topics.tolist(), groups)
    n_items = math.ceil(S.n_pairs / L.sentences_per_query) if S.n_pairs else len(space)
    items = llm_pairs.sample_items(space, n_items, seed=P.common.seed)
    sentences = wikitext.load_sentences(tuple(wikitext.FILES), RAW, min_words=L.min_sentence_words)["sentence"].tolist()
    llm = from_params(P.llm, device=P.common.device, model_dirs=M)
    gen = replace(gen_params(P.llm, P.common.seed), max_new_tokens=L.max_new_tokens)
    print(f"LLM backend: {llm.backend} ({llm.model}); {len(topics)} topics x {len(groups)} group pairs = "
          f"{len(space)} items, {len(items)} sampled; {len(sentences)} Wikipedia sentences")
    encoder = Encoder(M[P.ragfair.train.base_model], device=P.common.device, batch_size=P.common.batch_size)
    pairs = llm_pairs.build(items, sentences, encoder, llm, gen, top_k=L.top_k,
                            sentences_per_query=L.sentences_per_query, words=L.words)
    pairs = pairs.head(S.n_pairs) if S.n_pairs else pairs
    available = (space.groupby("category").size() * L.sentences_per_query).rename("available")
write_parquet(ROOT / "data/processed/ragfair/pairs.parquet", pairs, index=False)
counts = pairs.groupby("category").size().rename("pairs").to_frame().join(available).reset_index()
write_csv(ROOT / "reports/ragfair/pairs/counts.csv", counts)
print(f"{len(pairs)} pairs ({S.source}) sampled from {int(counts['available'].sum())} (paper: 20,985 from 135,845)")
counts

# %%
pairs.head(3)[["query", "passage", "biased_stereotyped", "biased_non_stereotyped"]]
