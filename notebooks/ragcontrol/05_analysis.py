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
import numpy as np
import pandas as pd
import seaborn as sns

from biaslab import config
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style
from biaslab.ragcontrol import control

# %% tags=["parameters"]
tasks = ["GenderBias-QA", "PoliticBias-QA"]
readers = {"smollm2": {"engine": "transformers", "name": "smollm2-135m-instruct", "gender_mode": "likelihood",
                       "politics_mode": "claim"}}

# %%
P = config.notebook_params(globals(), stage="ragcontrol_analysis")
ROOT = repo_root()
OUT = ROOT / "reports/ragcontrol/results"
set_style()
emb = pd.read_csv(ROOT / "reports/ragcontrol/retrieval/embedders.csv")
reader_keys = list(P.ragcontrol.readers)  # one ragcontrol_rag@<key> stage each
rag = pd.concat([pd.read_csv(ROOT / f"reports/ragcontrol/rag/{k}.csv") for k in reader_keys], ignore_index=True)
data = rag.merge(emb[["task", "method", "setting", "embedder_bias", "ndcg", "task_accuracy"]]
                 .rename(columns={"embedder_bias": "embedder_bias_all"}), on=["task", "method", "setting"], how="left")
data["family"] = data["method"].replace({"base": "fine-tune"})  # the base embedder is m = 0 of every family
data[data["method"] != "sampling"].round(2)

# %% [markdown]
# ## Linear fits: RAG bias = sensitivity × embedder bias + offset (per task, reader and control method)

# %%
fits = []
for (task, rdr, fam), g in data[data["method"] != "no document"].groupby(["task", "reader", "family"]):
    fits.append({"task": task, "reader": rdr, "method": fam,
                 **control.linear_fit(g["embedder_bias"], g["rag_bias"]),
                 "embedder_bias_min": g["embedder_bias"].min(), "embedder_bias_max": g["embedder_bias"].max()})
for (task, rdr), g in data[data["method"] != "no document"].groupby(["task", "reader"]):
    fits.append({"task": task, "reader": rdr, "method": "all settings",
                 **control.linear_fit(g["embedder_bias"], g["rag_bias"]),
                 "embedder_bias_min": g["embedder_bias"].min(), "embedder_bias_max": g["embedder_bias"].max()})
fits = pd.DataFrame(fits)
write_csv(OUT / "fits.csv", fits)
fits.round(3)

# %%
def scatter_fit(ax, g, fit, title):
    sns.scatterplot(data=g, x="embedder_bias", y="rag_bias", hue="method", style="method", s=55, ax=ax)
    if np.isfinite(fit["slope"]):
        xs = np.linspace(g["embedder_bias"].min(), g["embedder_bias"].max(), 2)
        ax.plot(xs, fit["slope"] * xs + fit["intercept"], color="black", lw=1,
                label=f"s = {fit['slope']:.2f} [{fit['slope_lo']:.2f}, {fit['slope_hi']:.2f}], R² = {fit['r2']:.2f}")
    ax.axhline(0, color="grey", lw=0.6)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set(xlabel="embedder bias (%)", ylabel="RAG bias (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


for fam, fig_name, caption in (("fine-tune", "fig_training", "Fig. 'training-full'"),
                               ("projection", "fig_projection", "Fig. 'proj'")):
    fig, axes = plt.subplots(len(reader_keys), len(P.ragcontrol.tasks), squeeze=False,
                             figsize=(5.2 * len(P.ragcontrol.tasks), 3.8 * len(reader_keys)))
    for i, rdr in enumerate(reader_keys):
        for j, task in enumerate(P.ragcontrol.tasks):
            g = data[(data["task"] == task) & (data["reader"] == rdr) & (data["family"] == fam)]
            f = fits[(fits["task"] == task) & (fits["reader"] == rdr) & (fits["method"] == fam)]
            scatter_fit(axes[i, j], g, f.iloc[0] if len(f) else {"slope": np.nan}, f"{task}\nreader {rdr}")
    fig.suptitle(f"RAG bias vs embedder bias, {fam} (regenerates the appendix's {caption})", y=1.02)
    save_figure(fig, OUT / f"{fig_name}.png")
    plt.show()

# %% [markdown]
# ## Sensitivity per reader (App. "All 6 LLMs"): the fitted slope with its 95 % CI, training vs projection

# %%
sens = fits[fits["method"].isin(["fine-tune", "projection"])]
fig, axes = plt.subplots(1, len(P.ragcontrol.tasks), squeeze=False,
                         figsize=(max(4.0, 1.4 * len(reader_keys) + 2.5) * len(P.ragcontrol.tasks), 3.6))
for j, task in enumerate(P.ragcontrol.tasks):
    ax = axes[0, j]
    for k, (fam, marker) in enumerate((("fine-tune", "o"), ("projection", "s"))):
        g = sens[(sens["task"] == task) & (sens["method"] == fam)].set_index("reader").reindex(reader_keys)
        x = np.arange(len(reader_keys)) + (k - 0.5) * 0.2
        ax.errorbar(x, g["slope"], yerr=[g["slope"] - g["slope_lo"], g["slope_hi"] - g["slope"]], fmt=marker,
                    capsize=3, label=fam)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xticks(np.arange(len(reader_keys)), reader_keys)
    ax.set_xlim(-0.5, len(reader_keys) - 0.5)
    ax.set(title=task, xlabel="reader", ylabel="sensitivity s (slope, 95 % CI)")
    ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, OUT / "fig_sensitivity.png")
plt.show()
pd.concat([pd.read_csv(ROOT / f"reports/ragcontrol/rag/{k}_generation_check.csv") for k in reader_keys],
          ignore_index=True)

# %% [markdown]
# ## Projection strength α and sampling temperature τ (App. "Projecting and Sampling")

# %%
proj = data[data["method"] == "projection"].assign(alpha=lambda d: d["setting"].str.removeprefix("alpha=").astype(float))
samp = data[data["method"] == "sampling"].copy()
samp[["N", "tau"]] = samp["setting"].str.extract(r"N=(\d+),tau=([\d.]+)").astype(float)
fig, axes = plt.subplots(2, len(P.ragcontrol.tasks), squeeze=False, figsize=(5.2 * len(P.ragcontrol.tasks), 7))
for j, task in enumerate(P.ragcontrol.tasks):
    ax = axes[0, j]
    g = proj[proj["task"] == task]
    ax.plot(g["alpha"], g["embedder_bias"], "k--", marker="o", label="embedder")
    for rdr, h in g.groupby("reader"):
        ax.plot(h["alpha"], h["rag_bias"], marker="s", label=f"RAG ({rdr})")
    ax.set(title=f"{task}: projection (Fig. 'alpha')", xlabel="α", ylabel="bias (%)")
    ax.legend(fontsize=7)
    ax = axes[1, j]
    g = samp[samp["task"] == task]
    for n, h in g.groupby("N"):
        ax.plot(h["tau"], h["embedder_bias_expected"], "--", marker="o", label=f"embedder, N={n:g} (expected)")
        for rdr, k in h.groupby("reader"):
            ax.plot(k["tau"], k["rag_bias"], marker="s", label=f"RAG, N={n:g} ({rdr})")
    ax.set(title=f"{task}: sampling (Fig. 'sampling')", xlabel="τ", ylabel="bias (%)")
    ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, OUT / "fig_alpha_sampling.png")
plt.show()

# %% [markdown]
# ## Utility and the Pareto frontier of |RAG bias| vs utility (Tables 'utility-finetune', 'utility-project')

# %%
base_ndcg = data[data["method"] == "base"].set_index(["task", "reader"])["ndcg"]
util = data[data["method"].isin(["base", "fine-tune", "projection"])].copy()
util["ndcg_change"] = util["ndcg"] - [base_ndcg[(t, r)] for t, r in zip(util["task"], util["reader"], strict=True)]
write_csv(OUT / "utility_finetune.csv", util[util["method"].isin(["base", "fine-tune"])][
    ["task", "reader", "setting", "embedder_bias", "rag_bias", "ndcg", "ndcg_change", "task_accuracy"]])
write_csv(OUT / "utility_project.csv", util[util["method"].isin(["base", "projection"])][
    ["task", "reader", "setting", "embedder_bias", "rag_bias", "ndcg", "ndcg_change", "task_accuracy"]])
fronts = []
fig, axes = plt.subplots(len(reader_keys), len(P.ragcontrol.tasks), squeeze=False,
                         figsize=(5.2 * len(P.ragcontrol.tasks), 3.8 * len(reader_keys)))
for i, rdr in enumerate(reader_keys):
    for j, task in enumerate(P.ragcontrol.tasks):
        g = util[(util["task"] == task) & (util["reader"] == rdr)].reset_index(drop=True)
        front = g.loc[control.pareto_front(g["rag_bias"], g["ndcg"])]
        fronts.append(front.assign(frontier=True))
        ax = axes[i, j]
        sns.scatterplot(data=g.assign(abs_rag=g["rag_bias"].abs()), x="abs_rag", y="ndcg", hue="method", ax=ax)
        ax.plot(front["rag_bias"].abs(), front["ndcg"], "k-", lw=1, label="Pareto frontier")
        ax.set(xlabel="|RAG bias| (%)", ylabel="TREC DL nDCG")
        ax.set_title(f"{task}\nreader {rdr}", fontsize=9)
        ax.legend(fontsize=7)
fig.suptitle("Bias–utility trade-off and its Pareto frontier (cf. the appendix's frontier figures)", y=1.02)
save_figure(fig, OUT / "fig_pareto.png")
plt.show()
write_csv(OUT / "pareto_frontier.csv", pd.concat(fronts, ignore_index=True)[
    ["task", "reader", "method", "setting", "rag_bias", "ndcg"]])

# %% [markdown]
# ## Fine-tuning vs projecting vs sampling (App. "Fine-tuning vs. Projecting vs. Sampling")

# %%
rows = []
for (task, rdr, fam), g in data[data["method"] != "no document"].groupby(["task", "reader", "family"]):
    best = g.loc[g["rag_bias"].abs().idxmin()]
    f = fits[(fits["task"] == task) & (fits["reader"] == rdr) & (fits["method"] == fam)].iloc[0]
    rows.append({"task": task, "reader": rdr, "method": fam,
                 "embedder_bias_range": g["embedder_bias"].max() - g["embedder_bias"].min(),
                 "rag_bias_range": g["rag_bias"].max() - g["rag_bias"].min(), "sensitivity": f["slope"],
                 "r2": f["r2"], "least_biased_setting": best["setting"], "its_rag_bias": best["rag_bias"],
                 "its_ndcg_change": (best["ndcg"] - base_ndcg[(task, rdr)]) if fam != "sampling" else 0.0})
comparison = pd.DataFrame(rows)
write_csv(OUT / "comparison.csv", comparison)
no_doc = data[data["method"] == "no document"].set_index(["task", "reader"])["rag_bias"]
checks = {}
for (task, rdr), g in comparison.groupby(["task", "reader"]):
    c = g.set_index("method")
    util_drop = util[(util["task"] == task) & (util["reader"] == rdr)].groupby("method")["ndcg_change"].min()
    checks[f"{task} | {rdr}"] = {
        "no_document_rag_bias": float(no_doc[(task, rdr)]),
        "fine_tune_slope": float(c.loc["fine-tune", "sensitivity"]), "fine_tune_r2": float(c.loc["fine-tune", "r2"]),
        "projection_slope": float(c.loc["projection", "sensitivity"]),
        "sampling_moves_embedder_bias_less_than_fine_tuning": bool(
            c.loc["sampling", "embedder_bias_range"] < c.loc["fine-tune", "embedder_bias_range"]),
        "worst_ndcg_change_fine_tune": float(util_drop.get("fine-tune", np.nan)),
        "worst_ndcg_change_projection": float(util_drop.get("projection", np.nan)),
    }
write_json(OUT / "metrics.json", {"fits": fits.to_dict("records"), "checks": checks})
comparison.round(3)

# %%
pd.DataFrame(checks).T
