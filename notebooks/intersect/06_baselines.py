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
# # intersect — baselines (paper §4.3, App. A, Fig. 21)
#
# * **BERT-MultiLabel**: a multi-label classifier (backbone `backbone`; paper: bert-base-uncased) trained on
#   D_train,Ci with binary cross-entropy, one per subset in `subsets`.
# * **Soft-Hamming classifier** (App. A): the same head trained with the differentiable Hamming loss
#   (τ = `soft_hamming_tau`), early stopping with patience `soft_hamming_patience` on a 10 % validation split,
#   at most `soft_hamming_max_epochs` epochs (paper: ModernBERT-base, 20 epochs).
# * **Zero-shot LLM** with the Fig. 21 prompt on the held-out paragraphs (at most `zero_shot_max_paragraphs`
#   per corpus, by default all of them, scored on each subset's test sets they belong to; the default local model is
#   SmolLM2-135M-Instruct, far smaller than the paper's 7–8B instruct models).
#
# Classifiers are trained and tested within one corpus: their label spaces differ across corpora, so they
# cannot be applied cross-domain (the paper's point). The frozen retriever baseline is evaluated in the next
# stage with the trained retrievers.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.intersect import baselines as bl
from biaslab.io import write_csv, write_parquet
from biaslab.llm import GenParams, make
from biaslab.paths import repo_root
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
backbone = ...  # intersect.baselines.backbone
subsets = ...  # intersect.baselines.subsets
epochs = ...  # intersect.baselines.epochs
batch_size = ...  # intersect.baselines.batch_size
learning_rate = ...  # intersect.baselines.learning_rate
head_learning_rate = ...  # intersect.baselines.head_learning_rate
converge_tol = ...  # intersect.baselines.converge_tol
max_length = ...  # intersect.baselines.max_length
soft_hamming_backbone = ...  # intersect.baselines.soft_hamming_backbone
soft_hamming_tau = ...  # intersect.baselines.soft_hamming_tau
soft_hamming_max_epochs = ...  # intersect.baselines.soft_hamming_max_epochs
soft_hamming_patience = ...  # intersect.baselines.soft_hamming_patience
soft_hamming_val_fraction = ...  # intersect.baselines.soft_hamming_val_fraction
soft_hamming_subsets = ...  # intersect.baselines.soft_hamming_subsets
zero_shot_backend = ...  # intersect.baselines.zero_shot_backend
zero_shot_max_paragraphs = ...  # intersect.baselines.zero_shot_max_paragraphs
zero_shot_max_new_tokens = ...  # intersect.baselines.zero_shot_max_new_tokens
threshold = ...  # intersect.baselines.threshold
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

# %%
P = config.stage_params(globals(), "intersect_baselines")
B = P.intersect.baselines
ROOT = repo_root()
M = models.preflight([B.backbone, B.soft_hamming_backbone]
                     + ([P.llm.model] if B.zero_shot_backend == "transformers" else []), P.models)
seed_everything(P.common.seed)


# %%
corpora = {c: tuple(pd.read_parquet(ROOT / f"data/processed/intersect/{c}/{f}.parquet") for f in ("paragraphs", "splits"))
           for c in ("indic", "western")}
rows, per_paragraph, log = bl.classifier_grid(B, corpora, M, device=P.common.device, seed=P.common.seed)
write_csv(ROOT / "reports/intersect/results/baselines_log.csv", log)  # epochs, loss per epoch, what stopped each
log

# %% [markdown]
# Zero-shot classification with the Fig. 21 prompt (answers parsed back to labels; anything unparseable counts
# as "unbiased"):

# %%
if B.zero_shot_backend != "none" and B.zero_shot_max_paragraphs > 0:
    llm = make(B.zero_shot_backend, model=P.llm.model, model_dir=M.get(P.llm.model), cache=True,
               device=P.common.device, openai_params=P.llm.openai)
    gen = GenParams(max_new_tokens=B.zero_shot_max_new_tokens, temperature=0.0, top_p=1.0, seed=P.common.seed)
    zs_rows, zs_per_paragraph = bl.zero_shot_grid(llm, gen, corpora, subsets=B.subsets,
                                                  max_paragraphs=B.zero_shot_max_paragraphs, seed=P.common.seed)
    rows += zs_rows
    per_paragraph += zs_per_paragraph

baselines = pd.DataFrame(rows)
write_csv(ROOT / "reports/intersect/results/baselines_long.csv", baselines)
write_parquet(ROOT / "data/processed/intersect/baselines_per_paragraph.parquet", pd.concat(per_paragraph,
                                                                                          ignore_index=True))
baselines.groupby(["model", "train_corpus", "test_set"])["jaccard"].agg(["mean", "std", "count"]).round(3)
