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
# # cscl — is two-stage CL sensitive to its hyper-parameters? (Chi et al. 2022, §4.2 RQ3, Fig. 4)
#
# Two-stage CL at λ = 0 and λ = 5 with one hyper-parameter varied at a time around the default setting: the
# temperature τ, the pre-training batch size (batches above `cscl.sensitivity.cache_chunk` examples are
# encoded under gradient caching — the same loss and gradient in chunks, as the paper trains its 256-example
# batches) and the augmentation (contextual-LM substitution and insertion, with the registry's causal LM in place of
# RoBERTa-base; back-translation has no offline model). The default setting is not retrained: its runs are the main
# training stage's. The analysis stage turns these predictions into the figure and the RQ3 claims.

# %%
import pandas as pd

from biaslab import config, frozen, models
from biaslab.cscl import augment, experiment, terms
from biaslab.cscl import train as ct
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
device = ...  # common.device
seed = ...  # common.seed
tasks = ...  # cscl.tasks
seeds = ...  # cscl.seeds
backbone = ...  # cscl.backbone
batch_size = ...  # cscl.train.batch_size
pretrain_batch_size = ...  # cscl.train.pretrain_batch_size
learning_rate = ...  # cscl.train.learning_rate
epochs = ...  # cscl.train.epochs
pretrain_epochs = ...  # cscl.train.pretrain_epochs
patience = ...  # cscl.train.patience
head_hidden = ...  # cscl.train.head_hidden
head_epochs = ...  # cscl.train.head_epochs
head_learning_rate = ...  # cscl.train.head_learning_rate
max_length = ...  # cscl.train.max_length
trainable_layers = ...  # cscl.train.trainable_layers
grad_cache_chunk = ...  # cscl.train.grad_cache_chunk
class_weight = ...  # cscl.train.class_weight
methods = ...  # cscl.methods
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
task = ...  # cscl.sensitivity.task
method = ...  # cscl.sensitivity.method
lambdas = ...  # cscl.sensitivity.lambdas
temperatures = ...  # cscl.sensitivity.temperatures
batch_sizes = ...  # cscl.sensitivity.batch_sizes
augmentations = ...  # cscl.sensitivity.augmentations
cache_chunk = ...  # cscl.sensitivity.cache_chunk
seed_subset = ...  # cscl.sensitivity.seed_subset
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "cscl_sensitivity")
C, S, A = P.cscl, P.cscl.sensitivity, P.cscl.augment
ROOT = repo_root()
TASK = ROOT / "data/processed/cscl/tasks" / S.task
uses_lm = any(a in augment.LM_METHODS for a in S.augmentations)
M = models.preflight([C.backbone, *([A.lm] if uses_lm else [])], P.models)
method = C.methods[S.method]
rows = pd.read_parquet(TASK / "rows.parquet")
views = pd.read_parquet(TASK / "views.parquet").set_index("text")["views"]
bank = frozen.check_bank(ct.StateBank.load(TASK / "states.npz"), TASK / "states.npz", M[C.backbone],
                         C.train.trainable_layers, knob="cscl.train.trainable_layers", stage="cscl_data")
variants = [(label, m, t, views, bank) for label, m, t in experiment.sensitivity_variants(
    method, C.train, temperatures=S.temperatures, batch_sizes=S.batch_sizes, grad_cache_chunk=S.cache_chunk)]

# %% [markdown]
# ## Augmentation variants: the same training and validation texts, viewed another way

# %%
source = {"next_words": augment.NextWords(M[A.lm], top_k=A.top_k, batch_size=C.train.batch_size, device=P.common.device)
          if uses_lm else None,
          "synonym_fn": augment.synonym_source(A.synonyms, encoder_dir=M[C.backbone], wordnet_dir=A.wordnet_dir,
                                             neighbours=A.neighbours) if "eda" in S.augmentations else None}
keep = terms.identity_terms(S.task) if A.keep_identity_terms else frozenset()
viewed = rows.loc[rows["split"].isin(["train", "val"]), "text"]
edits = terms.view_edits(S.task, viewed, swap=A.swap_identity_terms, mask=A.mask_proper_nouns)
augmented, examples = experiment.augmentation_variants(
    viewed, S.augmentations, bank, method, C.train, encoder_dir=M[C.backbone], alpha=A.alpha, n_aug=A.n_aug,
    seed=P.common.seed, keep=keep, edits=edits, visible_only=A.visible_only, device=P.common.device, **source)
variants += augmented
display(pd.DataFrame({"text": viewed.head(3).to_numpy(),  # noqa: F821
                      "default view 1": [views[t][0] for t in viewed.head(3)],
                      **{f"{a} view 1": e for a, e in examples.items()}}))
pd.DataFrame([{"variant": label, "temperature": m.temperature, "pretrain_batch_size": t.pretrain_batch_size,
               "grad_cache_chunk": t.grad_cache_chunk} for label, m, t, _, _ in variants])

# %%
table, predictions = experiment.run_sensitivity(variants, rows, task=S.task, method=S.method, lambdas=S.lambdas,
                                                seeds=S.seed_subset, encoder_dir=M[C.backbone], device=P.common.device)
write_csv(ROOT / "reports/cscl/train/sensitivity.csv", table)
write_parquet(ROOT / "data/processed/cscl/sensitivity/predictions.parquet", predictions, index=False)
table
