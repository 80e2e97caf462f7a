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
# over seeds; one F1-vs-ΔEO figure per task; the hyper-parameter sensitivity of two-stage CL (RQ3, Fig. 4:
# `sensitivity.csv` and its figure); `claims.csv`: the paper's claims as verdicts from paired bootstrap intervals over
# the test rows (`biaslab.cscl.findings`); `geometry.csv` and its figure: why CS-InfoNCE acts on one task and not
# another.

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import claims as cl
from biaslab import config
from biaslab.cscl import experiment, findings, sensitivity
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
eo_similar_share = ...  # cscl.claims.eo_similar_share
degenerate_share = ...  # cscl.claims.degenerate_share
panels = ...  # cscl.embedding_plot.panels
perplexity = ...  # cscl.embedding_plot.perplexity
probe_folds = ...  # cscl.embedding_plot.probe_folds
pretrain_batch_size = ...  # cscl.train.pretrain_batch_size
strategy = ...  # cscl.augment.strategy
task = ...  # cscl.sensitivity.task
method = ...  # cscl.sensitivity.method
lambdas = ...  # cscl.sensitivity.lambdas
temperatures = ...  # cscl.sensitivity.temperatures
batch_sizes = ...  # cscl.sensitivity.batch_sizes
augmentations = ...  # cscl.sensitivity.augmentations
cache_chunk = ...  # cscl.sensitivity.cache_chunk
seed_subset = ...  # cscl.sensitivity.seed_subset

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

# %% [markdown]
# ## Sensitivity of two-stage CL to τ, the pre-training batch and the augmentation (§4.2 RQ3, Fig. 4)
#
# The default setting's runs are the main stage's; each other bar changes one hyper-parameter (batches above the
# gradient-cache chunk are encoded under gradient caching). The paper: ΔEO falls with λ = 5 in every setting and F1
# stays high.

# %%
S = C.sensitivity
default = experiment.default_label(C.methods[S.method], C.train.pretrain_batch_size, C.augment.strategy)
sens = sensitivity.sensitivity_frame(preds, pd.read_parquet(ROOT / "data/processed/cscl/sensitivity/predictions.parquet"),
                                  task=S.task, method=S.method, lambdas=S.lambdas, seeds=S.seed_subset, default=default)
sens = sensitivity.sensitivity_settings(sens)  # built once: the table, the claims and the competence read them
sens_table = sensitivity.sensitivity_results(sens, rounds=U.rounds, confidence=U.confidence, seed=P.common.seed)
write_csv(OUT / "sensitivity.csv", sens_table)
fig = sensitivity.sensitivity_figure(sens_table, S.task)
save_figure(fig, OUT / f"fig_sensitivity_{S.task}.png")
plt.show()
sens_table

# %% [markdown]
# ## Competence and the paper's claims
#
# First the competence table: every setting must predict more than one class and beat the majority-class classifier
# on macro-F1 (`docs/cscl.md`); a claim comparing a setting that fails is `untestable`. Then the claims, judged by
# `biaslab.claims.finalize` (Holm across the claims; intervals over seeds and test rows), and one check per CL method
# that CS-InfoNCE acts: it lowers the group a probe reads from the test features within each class.

# %%
tests, train = findings.task_inputs(ROOT / "data/processed/cscl/tasks", C.tasks)
features = {s: experiment.load_features(ROOT / f"data/processed/cscl/features/seed{s}.npz") for s in C.seeds}
leakage = findings.Leakage(features, tests, folds=C.embedding_plot.probe_folds, seed=P.common.seed)
claim_rows, competence = findings.paper_claims(preds, sens, leakage, findings.majority_labels(train), C.methods,
                                               C.claims, task=S.task, method=S.method, default=default,
                                               level=U.confidence, rounds=U.rounds, seed=P.common.seed)
write_csv(OUT / "competence.csv", competence)
claims = cl.write(OUT / "claims.csv", claim_rows)
write_json(OUT / "metrics.json", {"summary": findings.summary_records(summary), "claims": cl.summary(claims)})
display(competence)  # noqa: F821
cl.markdown(claims)

# %% [markdown]
# ## Embeddings (App. C.2, Fig. 10)
#
# t-SNE of the first seed's test-set features: CE, and the contrastive method at its smallest λ (0: SupCon only) and
# its largest λ (CS-InfoNCE on). Each panel's title gives how well a linear probe reads the protected group inside
# each class (cross-validated accuracy over the majority share; 0 = chance) — the quantity CS-InfoNCE pushes down.

# %%
E = C.embedding_plot
first = C.seeds[0]
panels = findings.embedding_panels(C.methods, E.panels, C.tasks)
group_leakage = findings.panel_leakage(leakage, first, panels)
for task, keys in panels.items():
    leak = group_leakage[group_leakage["task"] == task].set_index("setting")["group_read_over_chance"]
    fig = findings.embedding_figure([(label, features[first][key]) for label, key in keys.items()], tests[task], task,
                                    perplexity=E.perplexity, seed=P.common.seed, leakage=leak)
    save_figure(fig, OUT / f"fig_embeddings_{task}.png")
    plt.show()
write_csv(OUT / "group_leakage.csv", group_leakage)
group_leakage

# %% [markdown]
# ## Why CS-InfoNCE acts on one task and not another (docs/cscl.md)
#
# Fig. 10's picture as numbers, for every setting and seed (`geometry.csv`): the probe's group read within class,
# the mean cosine of two test examples of one class, and the *same-group premium* — how much closer two examples of
# the same group are than two of different groups inside a class (0: mixed; above CE's: the groups cluster apart
# more than under CE) — with the negatives CS-InfoNCE has per anchor (only the other examples of the anchor's
# (y, a) cell in its batch).

# %%
geometry = findings.geometry(leakage, train, batch_size=C.train.pretrain_batch_size)
write_csv(OUT / "geometry.csv", geometry)
fig = findings.geometry_figure(geometry, C.methods)
save_figure(fig, OUT / "fig_geometry.png")
plt.show()
geometry.groupby(["task", "setting"], sort=False).mean(numeric_only=True).drop(columns="seed")
