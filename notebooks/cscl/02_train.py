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
# # cscl — every method at every trade-off value, one seed (Chi et al. 2022, §4.2, App. B.2, Tables 3–5)
#
# One run per seed of `cscl.seeds` (the paper reports mean ± std over five). For each task: CE; two-stage CL
# (L_sup + λ·L_CS-InfoNCE on two EDA views, then the MLP head on the frozen encoder); one-stage CL
# ((1 − γ)·CE + γ·L_sup + λ·L_CS-InfoNCE); adversarial training (y-conditioned discriminator, gradient reversal)
# and diverse adversaries; INLP by class on the CE encoder of the same seed. Test predictions are kept per example
# so the analysis can put bootstrap intervals on every number. With `cscl.train.trainable_layers` below the
# encoder's depth only the top layers train, on the frozen states the data stage saved.

# %%
from biaslab import config, models
from biaslab.cscl import experiment
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
run_seed = 0  # the member this notebook runs (one of cscl.seeds)
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
device = ...  # common.device
tasks = ...  # cscl.tasks
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
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"cscl_train@{run_seed}")
run_seed = int(run_seed)
C = P.cscl
ROOT = repo_root()
DATA = ROOT / "data/processed/cscl"
M = models.preflight([C.backbone], P.models)

# %%
table, predictions, features = experiment.run_seed(C.methods, C.tasks, DATA / "tasks", encoder_dir=M[C.backbone],
                                                   train=C.train, seed=run_seed, device=P.common.device)
write_csv(ROOT / f"reports/cscl/train/seed{run_seed}.csv", table)
write_parquet(DATA / "predictions" / f"seed{run_seed}.parquet", predictions, index=False)
experiment.save_features(DATA / "features" / f"seed{run_seed}.npz", features)  # test-set features per setting (embedding plots)
table
