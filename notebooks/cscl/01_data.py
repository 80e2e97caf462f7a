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
# # cscl — one task: text, task label y, protected attribute a; splits and augmented views (Chi et al. 2022, App. B)
#
# The paper's Jigsaw race and Bias in Bios sets are not obtainable here in full; the offline tasks are real
# stand-ins (`biaslab.cscl.tasks`, each builder says what it is), and the paper's tasks run when `cscl.full_data`
# points at their files. The split is seeded, stratified by (y, a) and checked for leakage; the augmented views
# for the contrastive objectives (`cscl.augment.strategy`; App. B.3) are EDA (α = 0.1, four per example, the synonym
# source of `cscl.augment.synonyms`) by default, or contextual-LM substitution / insertion at rate 0.1 (the
# registry's causal LM in place of RoBERTa-base), for the training rows and (so early stopping compares real view
# pairs) the validation rows. With `cscl.train.trainable_layers` below the encoder's depth, the frozen bottom layers run here, once per
# text and view, and the training stage fine-tunes only the top (`biaslab.cscl.train`).

# %%
import pandas as pd

from biaslab import config, frozen, models
from biaslab.cscl import augment, tasks, terms
from biaslab.cscl import train as ct
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root, resolve

# %% tags=["parameters"]
task = "sbic_race"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
raw_dir = ...  # data.raw_dir
backbone = ...  # cscl.backbone
full_data = ...  # cscl.full_data
offensive_threshold = ...  # cscl.offensive_threshold
min_topic_questions = ...  # cscl.min_topic_questions
max_rows = ...  # cscl.max_rows
val = ...  # cscl.splits.val
test = ...  # cscl.splits.test
strategy = ...  # cscl.augment.strategy
alpha = ...  # cscl.augment.alpha
n_aug = ...  # cscl.augment.n_aug
synonyms = ...  # cscl.augment.synonyms
wordnet_dir = ...  # cscl.augment.wordnet_dir
neighbours = ...  # cscl.augment.neighbours
keep_identity_terms = ...  # cscl.augment.keep_identity_terms
swap_identity_terms = ...  # cscl.augment.swap_identity_terms
mask_proper_nouns = ...  # cscl.augment.mask_proper_nouns
lm = ...  # cscl.augment.lm
top_k = ...  # cscl.augment.top_k
visible_only = ...  # cscl.augment.visible_only
trainable_layers = ...  # cscl.train.trainable_layers
max_length = ...  # cscl.train.max_length
batch_size = ...  # cscl.train.batch_size
device = ...  # common.device
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"cscl_data@{task}")
C = P.cscl
ROOT = repo_root()
OUT = ROOT / "data/processed/cscl/tasks" / task
M = models.preflight([C.backbone, *([C.augment.lm] if C.augment.strategy in augment.LM_METHODS else [])], P.models)
rows = tasks.build(task, resolve(P.data.raw_dir, ROOT), offensive_threshold=C.offensive_threshold,
                   min_topic_questions=C.min_topic_questions, full_data=C.full_data.get(task))
rows = tasks.subsample(rows, C.max_rows, P.common.seed)
rows = tasks.split(rows, val=C.splits.val, test=C.splits.test, seed=P.common.seed)
write_parquet(OUT / "rows.parquet", rows, index=False)
sizes = tasks.sizes(rows, task)
write_csv(ROOT / f"reports/cscl/data/{task}_sizes.csv", sizes)
print(f"{task}: {len(rows)} texts; (y, a) cells:", rows.groupby(["y_name", "a_name"]).size().to_dict())
sizes

# %% [markdown]
# ## Augmented views (training and validation rows)

# %%
A = C.augment
viewed = rows[rows["split"].isin(["train", "val"])]
keep = terms.identity_terms(task) if A.keep_identity_terms else frozenset()
edits = terms.view_edits(task, viewed["text"], swap=A.swap_identity_terms, mask=A.mask_proper_nouns)
if A.strategy == "eda":
    source = {"synonym_fn": augment.synonym_source(A.synonyms, encoder_dir=M[C.backbone], wordnet_dir=A.wordnet_dir,
                                                 neighbours=A.neighbours)}
else:
    source = {"next_words": augment.NextWords(M[A.lm], top_k=A.top_k, batch_size=C.train.batch_size, device=P.common.device)}
views = augment.views(viewed["text"], A.strategy, alpha=A.alpha, n_aug=A.n_aug, seed=P.common.seed, keep=keep,
                      edits=edits, visible_words=C.train.max_length if A.visible_only else None, **source)
write_parquet(OUT / "views.parquet", pd.DataFrame({"text": viewed["text"].to_numpy(), "views": views}), index=False)
pd.DataFrame({"text": viewed["text"].head(3).to_numpy(), "view 1": [v[0] for v in views[:3]]})

# %% [markdown]
# ## The frozen bottom of the encoder, once per text and view

# %%
n_frozen = frozen.frozen_count(M[C.backbone], C.train.trainable_layers, knob="cscl.train.trainable_layers")
bank = ct.compute_states(M[C.backbone], [*rows["text"], *(v for vs in views for v in vs)], n_frozen=n_frozen,
                         max_length=C.train.max_length, batch_size=C.train.batch_size, device=P.common.device)
bank.save(OUT / "states.npz")
print(f"{n_frozen} frozen layers: states of {len(bank)} distinct texts ({bank.flat.nbytes / 2**20:.0f} MiB)")
