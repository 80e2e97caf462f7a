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
# # ragfair — train one debiasing recipe (paper §3.4, §3.5, §4.3)
#
# One run = one entry of `ragfair.train.runs` (LoRA, WiSE-FT or both, with fairness weight α). The objective is
# NT-Xent(query, neutral passage; τ) + α · L_fair + β · ‖ΔW‖²_F (`biaslab.ragfair.debias`), trained with the
# sentence-transformers trainer (AdamW, linear warm-up, gradient clipping, no repeated text in a batch). The saved
# checkpoint has LoRA merged and the WiSE-FT interpolation applied; head masking is added in evaluation.

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import config, models
from biaslab.io import write_json
from biaslab.paths import repo_root
from biaslab.plots import loss_curve, save_figure, set_style
from biaslab.ragfair import debias

# %% tags=["parameters"]
run = "lora"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
base_model = ...  # ragfair.train.base_model
epochs = ...  # ragfair.train.epochs
batch_size = ...  # ragfair.train.batch_size
learning_rate = ...  # ragfair.train.learning_rate
warmup_ratio = ...  # ragfair.train.warmup_ratio
max_grad_norm = ...  # ragfair.train.max_grad_norm
max_seq_length = ...  # ragfair.train.max_seq_length
tau = ...  # ragfair.train.tau
beta = ...  # ragfair.train.beta
fair_variant = ...  # ragfair.train.fair_variant
lora_r = ...  # ragfair.train.lora_r
lora_alpha = ...  # ragfair.train.lora_alpha
lora_dropout = ...  # ragfair.train.lora_dropout
lora_targets = ...  # ragfair.train.lora_targets
wiseft_layers = ...  # ragfair.train.wiseft_layers
wiseft_lambda = ...  # ragfair.train.wiseft_lambda
gradient_probe_batches = ...  # ragfair.train.gradient_probe_batches
runs = ...  # ragfair.train.runs
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"ragfair_train@{run}")
T = P.ragfair.train
assert run in T.runs, f"run {run!r} is not in ragfair.train.runs ({sorted(T.runs)})"
R = T.runs[run]
ROOT = repo_root()
M = models.preflight([T.base_model], P.models)
set_style()
cfg = debias.method_config(T, run)
pairs = pd.read_parquet(ROOT / "data/processed/ragfair/pairs.parquet")
print(f"{run}: {cfg}\n{len(pairs)} training pairs")

# %%
out, summary = debias.train(M[T.base_model], pairs, ROOT / "data/models/ragfair" / run, cfg, epochs=T.epochs,
                            batch_size=T.batch_size, learning_rate=T.learning_rate, warmup_ratio=T.warmup_ratio,
                            max_grad_norm=T.max_grad_norm, seed=P.common.seed, device=P.common.device,
                            max_seq_length=T.max_seq_length, record={"base": T.base_model, "run": run},
                            probe_batches=T.gradient_probe_batches)
write_json(ROOT / f"reports/ragfair/train/{run}.json", summary | {"run": run, "method": cfg.__dict__ |
                                                                   {"lora_targets": list(cfg.lora_targets)}})
fig = loss_curve(summary, ylabel="NT-Xent + α·L_fair + β·‖ΔW‖²",
                 title=f"{run} ({summary['trainable_parameters']:,} trainable parameters)")
save_figure(fig, ROOT / f"reports/ragfair/train/{run}_loss.png")
plt.show()
summary["last_terms"]
