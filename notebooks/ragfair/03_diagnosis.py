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
# # ragfair — where is the bias? SEAT per BBQ category and layer probing (paper §3.2, §4.1, Table 1, Fig. 1)
#
# The frozen encoder on a sample of BBQ (whole counterfactual groups, `max_rows_per_category`):
#
# * **Table 1** — a SEAT test per category whose target and attribute sets come from the BBQ rows
#   (`biaslab.ragfair.bbq_seat`; the paper had an LLM extract them), fairness = 1 − |ES| / 2;
# * **Fig. 1** — per layer, the softmax-normalised preference of q ‖ c for the stereotyped over the other group
#   (`biaslab.ragfair.probing`), a Ridge probe that predicts it from the layer's q ‖ c embedding (cross-validated
#   R², against a label-shuffled control), and Spearman's ρ between depth and the mean preference.

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from biaslab import config, models
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style
from biaslab.ragfair import bbq_build, bbq_seat, paper, probing
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
model = ...  # ragfair.probing.model
max_rows_per_category = ...  # ragfair.probing.max_rows_per_category
tau = ...  # ragfair.probing.tau
folds = ...  # ragfair.probing.folds
ridge_alphas = ...  # ragfair.probing.ridge_alphas
shuffles = ...  # ragfair.probing.shuffles
seat_n_samples = ...  # ragfair.probing.seat_n_samples
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
exact_limit = ...  # ragfair.seat.exact_limit
e_max = ...  # ragfair.seat.e_max
alpha = ...  # ragfair.seat.alpha

# %%
P = config.stage_params(globals(), "ragfair_diagnosis")
D = P.ragfair.probing
ROOT = repo_root()
OUT = ROOT / "reports/ragfair/diagnosis"
M = models.preflight([D.model], P.models)
seed_everything(P.common.seed)
set_style()
bbq = bbq_build.sample(pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet"), D.max_rows_per_category,
                       seed=P.common.seed)
enc = Encoder(M[D.model], device=P.common.device, batch_size=P.common.batch_size)
print(f"{len(bbq)} BBQ rows, {bbq['category'].nunique()} categories, encoder {D.model} ({enc.n_layers} layers "
      "incl. embeddings)")

# %% [markdown]
# ## Table 1 — SEAT fairness per category (ours beside the paper's)

# %%
table1 = bbq_seat.run(bbq_seat.seat_sets(bbq), enc, n_samples=D.seat_n_samples, exact_limit=P.ragfair.seat.exact_limit,
                      e_max=P.ragfair.seat.e_max, seed=P.common.seed)
table1 = table1.merge(paper.table1(), on="category", how="left")
write_csv(OUT / "table1_bbq_seat.csv", table1)
table1.round(4)

# %% [markdown]
# ## Layer probing (Fig. 1)

# %%
probe = probing.probe_all(bbq, enc, tau=D.tau, folds=D.folds, alphas=D.ridge_alphas, seed=P.common.seed,
                          shuffles=D.shuffles)
write_csv(OUT / "probing.csv", probe)
trend = probing.depth_trend(probe)
write_csv(OUT / "depth_trend.csv", trend)
trend.round(3)

# %%
fig, ax = plt.subplots(figsize=(7, 4.2))
heat = probe.pivot(index="category", columns="layer", values="bias_mean")
sns.heatmap(heat, annot=True, fmt=".2f", cmap="vlag", center=0, ax=ax, cbar_kws={"label": "mean Bias(ℓ)"})
ax.set(xlabel="layer (0 = embeddings)", ylabel="")
ax.set_title(f"Mean probed Bias(ℓ) per layer and BBQ category ({D.model}, τ = {D.tau}; cf. the paper's Fig. 1)")
save_figure(fig, OUT / "fig1_probing_heatmap.png")
plt.show()

# %%
long = probe.melt(id_vars=["category", "layer"], value_vars=["r2", "r2_shuffled"], var_name="probe", value_name="R²")
g = sns.relplot(data=long, x="layer", y="R²", hue="category", style="probe", kind="line", marker="o", height=3.6,
                aspect=1.6)
g.figure.suptitle("Ridge probe of Bias(ℓ) from E_cq(ℓ): cross-validated R², real vs label-shuffled targets", y=1.03)
save_figure(g.figure, OUT / "probe_r2.png")
plt.show()

# %%
metrics = {
    "model": D.model, "rows": len(bbq),
    "seat_mean_fairness": float(table1["fairness"].mean()), "paper_mean_fairness": paper.MEAN_FAIRNESS,
    f"seat_tests_p_below_{P.ragfair.seat.alpha:g}": int((table1["p_value"] < P.ragfair.seat.alpha).sum()),
    "depth_spearman_mean": float(trend["spearman_rho"].mean()), "paper_depth_spearman": paper.DEPTH_SPEARMAN,
    "probe_r2_mean": float(probe["r2"].mean()), "probe_r2_shuffled_mean": float(probe["r2_shuffled"].mean()),
}
write_json(OUT / "metrics.json", metrics)
print(json.dumps(metrics, indent=1))
