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
# # ragcontrol — RAG bias against embedder bias, the three controls compared, utility (Kim et al. 2025)
#
# The paper's headline: per reader LLM, RAG bias is linear in embedder bias, RAG ≈ s · embedder + b, with the slope
# s the reader's *sensitivity* to the embedder; reverse-biasing the embedder moves RAG bias along that line;
# projection moves it too but costs more utility than fine-tuning; sampling does not move the embedder bias at all.
# Everything below is computed from this run's retrievals and answers.

# %%
import matplotlib.pyplot as plt
import pandas as pd

from biaslab import claims as cl
from biaslab import config
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style
from biaslab.ragcontrol import analysis, figures, findings

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
rounds = ...  # common.uncertainty.rounds
confidence = ...  # common.uncertainty.confidence
sampling_bound = ...  # ragcontrol.claims.sampling_bound
follow_floor = ...  # ragcontrol.claims.follow_floor
tasks = ...  # ragcontrol.tasks
readers = ...  # ragcontrol.readers

# %%
P = config.stage_params(globals(), "ragcontrol_analysis")
TASKS = P.ragcontrol.tasks
ROOT = repo_root()
OUT = ROOT / "reports/ragcontrol/results"
set_style()
emb = pd.read_csv(ROOT / "reports/ragcontrol/retrieval/embedders.csv")
reader_keys = list(P.ragcontrol.readers)  # one ragcontrol_rag@<key> stage each
rag = pd.concat([pd.read_csv(ROOT / f"reports/ragcontrol/rag/{k}.csv") for k in reader_keys], ignore_index=True)
data = analysis.joined(emb, rag)
data[data["method"] != "sampling"].round(2)

# %% [markdown]
# ## Linear fits: RAG bias = sensitivity × embedder bias + offset (per task, reader and control method)

# %%
fits = analysis.fits(data, confidence=P.common.uncertainty.confidence)
write_csv(OUT / "fits.csv", fits)
fits.round(3)

# %%
for fam, fig_name, caption in (("fine-tune", "fig_training", "Fig. 'training-full'"),
                               ("projection", "fig_projection", "Fig. 'proj'")):
    fig = figures.rag_vs_embedder(data, fits, fam, reader_keys, TASKS, caption)
    save_figure(fig, OUT / f"{fig_name}.png")
    plt.show()

# %% [markdown]
# ## Sensitivity per reader (App. "All 6 LLMs"): the fitted slope with its 95 % CI, training vs projection

# %%
fig = figures.sensitivity(analysis.sensitivity(fits, reader_keys), reader_keys, TASKS)
save_figure(fig, OUT / "fig_sensitivity.png")
plt.show()
pd.concat([pd.read_csv(ROOT / f"reports/ragcontrol/rag/{k}_generation_check.csv") for k in reader_keys],
          ignore_index=True)

# %% [markdown]
# ## Projection strength α and sampling temperature τ (App. "Projecting and Sampling")

# %%
fig = figures.alpha_sampling(analysis.projection_sweep(data), analysis.sampling_sweep(data), TASKS)
save_figure(fig, OUT / "fig_alpha_sampling.png")
plt.show()

# %% [markdown]
# ## Utility and the Pareto frontier of |RAG bias| vs utility (Tables 'utility-finetune', 'utility-project')

# %%
util = analysis.utility(data)
write_csv(OUT / "utility_finetune.csv", util[util["method"].isin(["base", "fine-tune"])][analysis.UTILITY_COLUMNS])
write_csv(OUT / "utility_project.csv", util[util["method"].isin(["base", "projection"])][analysis.UTILITY_COLUMNS])
fronts = analysis.pareto(util)
fig = figures.pareto(util, fronts, reader_keys, TASKS)
save_figure(fig, OUT / "fig_pareto.png")
plt.show()
write_csv(OUT / "pareto_frontier.csv", fronts[["task", "reader", "method", "setting", "rag_bias", "ndcg"]])

# %% [markdown]
# ## Fine-tuning vs projecting vs sampling (App. "Fine-tuning vs. Projecting vs. Sampling")

# %%
comparison = analysis.comparison(data, fits)
write_csv(OUT / "comparison.csv", comparison)
checks = analysis.checks(data, comparison, util)
checks_table = checks
comparison.round(3)

# %%
pd.DataFrame(checks).T

# %% [markdown]
# ## Uncertainty, competence and the appendix's claims
# Per setting, RAG bias and embedder bias with bootstrap intervals over the reader's questions. Then the competence
# check — does each reader take the side of a one-sided retrieved document? (a slope of RAG bias on embedder bias
# means nothing for a reader that ignores its context) — and each claim judged by `biaslab.claims.finalize` (Holm
# across the claims; docs/claims.md): slopes re-fitted on resampled questions, paired differences per question or per
# judged TREC DL query.

# %%
U = P.common.uncertainty
DATA = ROOT / "data/processed/ragcontrol"
answers = pd.concat([pd.read_parquet(DATA / "rag" / k / "answers.parquet") for k in reader_keys], ignore_index=True)
retrievals = pd.read_parquet(DATA / "retrieval/retrievals.parquet")
questions = findings.question_table(retrievals, answers)
intervals = findings.setting_intervals(questions, rounds=U.rounds, confidence=U.confidence, seed=P.common.seed)
write_csv(OUT / "intervals.csv", intervals)
following = findings.context_following(retrievals, answers)
claim_rows, competence = findings.paper_claims(
    questions, pd.read_parquet(DATA / "retrieval/utility_per_query.parquet"), following, P.ragcontrol.claims,
    level=U.confidence, rounds=U.rounds, seed=P.common.seed)
write_csv(OUT / "competence.csv", competence)
display(competence)  # noqa: F821
claims = cl.write(OUT / "claims.csv", claim_rows)
claims

# %%
write_json(OUT / "metrics.json", {"fits": fits.to_dict("records"), "checks": checks_table, "claims": cl.summary(claims)})
