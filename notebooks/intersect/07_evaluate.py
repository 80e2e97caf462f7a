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
# # intersect — detection results (paper §5, Figs. 2–5, App. A.5)
#
# Every trained BiasRetriever and the frozen base retriever ("S-BERT-Base") embed each held-out paragraph,
# retrieve the top-k sentences of a reference corpus and aggregate their labels (`aggregation`, see
# `biaslab.intersect.detect`). Scores: Jaccard and exact match on D_test,Ci (seen), D_test,N−Ci (unseen) and
# D_test,N (all), mean ± std over the subsets C1–C3 that were trained; in-domain (same corpus) and cross-domain
# (the other corpus's test sets and reference corpus). The k sweep covers App. A.5.

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from biaslab import claims as cl
from biaslab import config, models
from biaslab.intersect import evaluate as ev
from biaslab.intersect import findings
from biaslab.io import write_csv, write_json, write_parquet
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
confidence = ...  # common.uncertainty.confidence
device = ...  # common.device
batch_size = ...  # common.batch_size
base_model = ...  # intersect.train.base_model
runs = ...  # intersect.train.runs
k = ...  # intersect.evaluate.k
k_sweep = ...  # intersect.evaluate.k_sweep
aggregation = ...  # intersect.evaluate.aggregation
threshold = ...  # intersect.evaluate.threshold
top_m = ...  # intersect.evaluate.top_m
weighted = ...  # intersect.evaluate.weighted
plateau_from = ...  # intersect.evaluate.plateau_from
plateau_bound = ...  # intersect.evaluate.plateau_bound
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "intersect_evaluate")
E, T = P.intersect.evaluate, P.intersect.train
ROOT = repo_root()
OUT = ROOT / "reports/intersect/results"
M = models.preflight([T.base_model], P.models)
set_style()
corpora = {c: ev.CorpusData(*(pd.read_parquet(ROOT / f"data/processed/intersect/{c}/{f}.parquet")
                              for f in ("paragraphs", "reference", "splits")))
           for c in ("indic", "western")}
agg = {"method": E.aggregation, "threshold": E.threshold, "top_m": E.top_m, "weighted": E.weighted}
ks = sorted(set(E.k_sweep) | ({E.k} if isinstance(E.k, int) else set()))

# %%
per_paragraph, val = ev.score_runs(T.runs, corpora, models_dir=ROOT / "data/models/intersect", base_dir=M[T.base_model],
                                   base_name=T.base_model, ks=ks, device=P.common.device,
                                   batch_size=P.common.batch_size, **agg)
# the retrieval depth: fixed, or the best mean Jaccard of the trained retrievers on their validation paragraphs
K, k_table, k_chosen_on = ev.evaluation_depth(E.k, val)
write_csv(OUT / "k_selection.csv", k_table)
print(f"evaluation depth k = {K} ({'fixed' if k_chosen_on == 'fixed' else 'chosen on the validation split'})")
write_parquet(ROOT / "data/processed/intersect/detection_per_paragraph.parquet", per_paragraph, index=False)
results = ev.aggregate(per_paragraph)
write_csv(OUT / "detection_long.csv", results)
# classifier and zero-shot baselines do not retrieve: their scores join the table at every k
baselines = pd.read_csv(OUT / "baselines_long.csv")
baselines = baselines.merge(pd.DataFrame({"k": ks}), how="cross")
results = pd.concat([results, baselines], ignore_index=True)
summary = ev.summarise(results, K)
write_csv(OUT / "summary.csv", summary)
summary.round(3)

# %% [markdown]
# ## Competence of the baselines, uncertainty and the paper's claims
# First the baselines' competence (`docs/intersect.md`): each classifier trained to convergence, beating the
# majority label set, scoring unlike the other classifier; the zero-shot LLM beating the majority label set. A
# claim against a baseline that fails is `untestable`. Then paired per-paragraph Jaccard differences (the same
# held-out paragraphs of each subset C_i) with Student-t intervals at each claim's Holm level; each claim a verdict
# computed from them (docs/claims.md). Last, one check per triplet strategy that it mines triplets SR-k4 does not.

# %%
U = P.common.uncertainty
clf = pd.read_parquet(ROOT / "data/processed/intersect/baselines_per_paragraph.parquet").assign(k=K)
competence = findings.competence(clf, pd.read_csv(OUT / "baselines_log.csv"), level=U.confidence)
write_csv(OUT / "competence.csv", competence)
display(competence)  # noqa: F821
triplets = {c: pd.read_parquet(ROOT / f"data/processed/intersect/{c}/triplets.parquet") for c in corpora}
claims = cl.write(OUT / "claims.csv", cl.finalize(findings.claims(
    pd.concat([per_paragraph, clf], ignore_index=True), k=K, plateau_from=E.plateau_from, k_max=max(ks),
    plateau_bound=E.plateau_bound, competence_table=competence) + findings.triplet_checks(triplets),
    level=U.confidence, competence_table=competence))
claims

# %%
metrics = {"k": K, "k_chosen_on": k_chosen_on, "aggregation": agg,
           "jaccard": ev.headline(summary), "claims": cl.summary(claims)}
write_json(OUT / "metrics.json", metrics)
metrics

# %% [markdown]
# ## In-domain and cross-domain Jaccard (the paper's Figs. 2 and 3; error bars = std over C1–C3)

# %%
for domain, fname, paper_fig in (("in-domain", "fig2_in_domain.png", "Fig. 2"),
                                 ("cross-domain", "fig3_cross_domain.png", "Fig. 3")):
    d = results[(results["k"] == K) & (results["domain"] == domain)]
    if d.empty:
        continue
    g = sns.catplot(data=d, x="test_set", y="jaccard", hue="model", col="test_corpus", kind="bar",
                    errorbar="sd", order=["seen", "unseen", "all"], height=3.2, aspect=1.2)
    g.set_axis_labels("test set", f"Jaccard @ k={K}")
    g.figure.suptitle(f"{domain.capitalize()} detection: Jaccard @ k={K} per test set (mean ± sd over subsets; "
                      f"cf. the paper's {paper_fig})", y=1.04)
    save_figure(g.figure, OUT / fname)
    plt.show()

# %% [markdown]
# ## Retrieval depth (the paper's Figs. 4 and 5, App. A.5)

# %%
sweep = ev.sweep_frame(results[results["model"].str.contains("Retriever|S-BERT")])
write_csv(OUT / "k_sweep.csv", sweep)
g = sns.relplot(data=sweep, x="k", y="jaccard", hue="model", style="domain", col="test_corpus", kind="line",
                marker="o", height=3.2, aspect=1.2)
g.set_axis_labels("k (retrieved sentences)", "Jaccard on D_test,N")
g.figure.suptitle("Jaccard on D_test,N against retrieval depth k (cf. the paper's Figs. 4/5)", y=1.04)
save_figure(g.figure, OUT / "fig4_5_k_sweep.png")
plt.show()

# %% [markdown]
# ## Triplet-strategy ablation (the paper's Fig. 6, App. A.6: in-domain, D_test,N, k = 20)
# Only the strategies listed in `intersect.train.runs` appear (the paper-scale configuration trains all four on
# C1–C3).

# %%
k_abl = 20 if 20 in ks else K
abl = results[(results["k"] == k_abl) & (results["domain"] == "in-domain") & (results["test_set"] == "all")
              & results["model"].str.contains("Retriever|S-BERT")]
g = sns.catplot(data=abl, x="model", y="jaccard", col="train_corpus", kind="bar", errorbar="sd", height=3.2,
                aspect=1.3)
g.set_axis_labels("", f"Jaccard on D_test,N @ k={k_abl}")
g.set_xticklabels(rotation=20, ha="right")
g.figure.suptitle(f"Jaccard on D_test,N per trained triplet strategy and the frozen base, k = {k_abl} "
                  "(cf. the paper's Fig. 6)", y=1.04)
save_figure(g.figure, OUT / "fig6_strategy_ablation.png")
plt.show()
