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
# # ragcontrol — reverse-bias one embedder (Kim et al. 2025, App. "Training")
#
# One run = one entry of `ragcontrol.train.runs`: the base embedder fine-tuned on its task's trainer rows with the
# multi-positive contrastive loss (scale 50; positives female / conservative, negatives male / liberal), fully or
# only the last k MLPs (`freeze_layers`, as the public code). The WiSE-FT family (merge weights m) is built from
# this checkpoint in the retrieval stage.

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import config, models
from biaslab.io import write_json
from biaslab.paths import repo_root
from biaslab.plots import loss_curve, save_figure, set_style
from biaslab.ragcontrol import finetune

# %% tags=["parameters"]
run = "gender-full"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
embedder = ...  # ragcontrol.embedder
epochs = ...  # ragcontrol.train.epochs
batch_size = ...  # ragcontrol.train.batch_size
learning_rate = ...  # ragcontrol.train.learning_rate
weight_decay = ...  # ragcontrol.train.weight_decay
warmup_steps = ...  # ragcontrol.train.warmup_steps
scale = ...  # ragcontrol.train.scale
max_seq_length = ...  # ragcontrol.train.max_seq_length
runs = ...  # ragcontrol.train.runs
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"ragcontrol_train@{run}")
T = P.ragcontrol.train
assert run in T.runs, f"run {run!r} is not in ragcontrol.train.runs ({sorted(T.runs)})"
R = T.runs[run]
ROOT = repo_root()
M = models.preflight([P.ragcontrol.embedder], P.models)
set_style()
rows = pd.read_parquet(ROOT / "data/processed/ragcontrol/tasks" / R.task / "train_rows.parquet")
rows["label"] = rows["label"].map(list)
print(f"{run}: {R.task}, freeze_layers={R.freeze_layers}; {len(rows)} training questions")

# %%
out, summary = finetune.train(
    M[P.ragcontrol.embedder], rows, ROOT / "data/models/ragcontrol" / run, freeze_layers=R.freeze_layers,
    epochs=R.epochs or T.epochs, batch_size=T.batch_size, learning_rate=R.learning_rate or T.learning_rate,
    weight_decay=T.weight_decay, warmup_steps=T.warmup_steps, scale=T.scale, max_seq_length=T.max_seq_length,
    seed=P.common.seed, device=P.common.device, record={"base": P.ragcontrol.embedder, "run": run, "task": R.task})
write_json(ROOT / f"reports/ragcontrol/train/{run}.json", summary | {"run": run, "task": R.task,
                                                                     "freeze_layers": R.freeze_layers})
fig = loss_curve(summary, ylabel="multi-positive contrastive loss",
                 title=f"{run} ({summary['trainable_parameters']:,} trainable parameters)")
save_figure(fig, ROOT / f"reports/ragcontrol/train/{run}_loss.png")
plt.show()
pd.Series(summary).drop("loss_curve")
