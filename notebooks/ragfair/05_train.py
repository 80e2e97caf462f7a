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
from biaslab.plots import save_figure, set_style
from biaslab.ragfair import debias

# %% tags=["parameters"]
run = "lora"
seed = 42
device = "auto"
base_model = "minilm"
epochs = 1
batch_size = 16
learning_rate = 1.0e-4
warmup_ratio = 0.1
max_grad_norm = 1.0
max_seq_length = 128
tau = 0.05
beta = 1.0e-4
fair_variant = "squared"
lora_r = 8
lora_alpha = 16
lora_dropout = 0.1
lora_targets = ["query", "key", "value"]
wiseft_layers = 2
wiseft_lambda = 0.5
runs = {"lora": {"lora": True, "wiseft": False, "alpha": 1.0}, "wiseft": {"lora": False, "wiseft": True, "alpha": 1.0},
        "lora_wiseft": {"lora": True, "wiseft": True, "alpha": 1.0},
        "lora_wiseft_a0": {"lora": True, "wiseft": True, "alpha": 0.0}}

# %%
P = config.notebook_params(globals(), stage=f"ragfair_train@{run}")
T = P.ragfair.train
assert run in T.runs, f"run {run!r} is not in ragfair.train.runs ({sorted(T.runs)})"
R = T.runs[run]
ROOT = repo_root()
models.preflight([T.base_model])
set_style()
cfg = debias.method_config(T, run)
pairs = pd.read_parquet(ROOT / "data/processed/ragfair/pairs.parquet")
print(f"{run}: {cfg}\n{len(pairs)} training pairs")

# %%
out, summary = debias.train(T.base_model, pairs, ROOT / "data/models/ragfair" / run, cfg, epochs=T.epochs,
                            batch_size=T.batch_size, learning_rate=T.learning_rate, warmup_ratio=T.warmup_ratio,
                            max_grad_norm=T.max_grad_norm, seed=P.common.seed, device=P.common.device,
                            max_seq_length=T.max_seq_length, run_config={"run": run})
write_json(ROOT / f"reports/ragfair/train/{run}.json", summary | {"run": run, "method": cfg.__dict__ |
                                                                   {"lora_targets": list(cfg.lora_targets)}})
fig, ax = plt.subplots(figsize=(5, 3))
if summary["loss_curve"]:
    ax.plot(*zip(*summary["loss_curve"], strict=True), marker="o")
ax.set(xlabel="step", ylabel="NT-Xent + α·L_fair + β·‖ΔW‖²", title=f"{run} ({summary['trainable_parameters']:,} "
       "trainable parameters)")
save_figure(fig, ROOT / f"reports/ragfair/train/{run}_loss.png")
plt.show()
summary["last_terms"]
