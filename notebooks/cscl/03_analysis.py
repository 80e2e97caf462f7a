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
# # cscl — methods over seeds, trade-off figures and the paper's claims (Chi et al. 2022, §5, Figs. 2–3)
#
# `methods.csv`: every (task, method, trade-off value, seed) with F1, ΔTPR, ΔFPR, ΔEO; `summary.csv`: mean ± std
# over seeds; one F1-vs-ΔEO figure per task; `claims.csv`: the paper's claims as verdicts from paired bootstrap
# intervals over the test rows (`biaslab.cscl.findings`).

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import claims as cl
from biaslab import config
from biaslab.cscl import findings
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
rounds = ...  # common.uncertainty.rounds
confidence = ...  # common.uncertainty.confidence
tasks = ...  # cscl.tasks
seeds = ...  # cscl.seeds
methods = ...  # cscl.methods
f1_bound = ...  # cscl.claims.f1_bound

# %%
P = config.stage_params(globals(), "cscl_analysis")
C, U = P.cscl, P.common.uncertainty
ROOT = repo_root()
OUT = ROOT / "reports/cscl/results"
set_style()
results = pd.concat([pd.read_csv(ROOT / f"reports/cscl/train/seed{s}.csv") for s in C.seeds], ignore_index=True)
preds = pd.concat([pd.read_parquet(ROOT / f"data/processed/cscl/predictions/seed{s}.parquet") for s in C.seeds],
                  ignore_index=True)
write_csv(OUT / "methods.csv", results)
summary = findings.summary(results)
write_csv(OUT / "summary.csv", summary)
summary

# %%
for task in C.tasks:
    fig = findings.tradeoff_figure(summary, task)
    save_figure(fig, OUT / f"fig_tradeoff_{task}.png")
    plt.show()

# %%
claims = cl.write(OUT / "claims.csv", findings.claims(preds, C.methods, f1_bound=C.claims.f1_bound, rounds=U.rounds,
                                                      confidence=U.confidence, seed=P.common.seed))
write_json(OUT / "metrics.json", {"summary": summary.to_dict("records"), "claims": cl.summary(claims)})
cl.markdown(claims)
