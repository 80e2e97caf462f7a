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
# # ragcontrol — what every embedder retrieves: embedder bias and utility (Kim et al. 2025, App. "Projecting and
# Sampling", "Measuring Utility on BEIR")
#
# For each task and every setting — the base embedder, each fine-tuned run × WiSE-FT merge weight, each projection α
# (base embedder, word "female" / "republican"), each sampling (N, τ) — the document retrieved (top-1, or one seeded
# draw) for every test question from the evaluation corpus, and the **embedder bias**: the share of retrieved
# documents judged bias1 minus the share judged bias2, in percent (female − male, conservative − liberal).
# Utility: nDCG@k re-ranking TREC DL's BM25 top-100 (BEIR is not obtainable offline) and task accuracy (the top-1
# document is one of the question's own released documents).

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from biaslab import config, models
from biaslab.data import trec_dl as trec_dl_data
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root, resolve
from biaslab.plots import save_figure, set_style
from biaslab.ragcontrol import control, finetune
from biaslab.ragcontrol import evaluate as ev
from biaslab.runtime import progress, seed_everything

# %% tags=["parameters"]
seed = 42
device = "auto"
batch_size = 64
raw_dir = "data/raw"
tasks = ["GenderBias-QA", "PoliticBias-QA"]
embedder = "minilm"
max_seq_length = 128
runs = {"gender-full": {"task": "GenderBias-QA", "freeze_layers": 0},
        "gender-last2": {"task": "GenderBias-QA", "freeze_layers": 2},
        "politics-full": {"task": "PoliticBias-QA", "freeze_layers": 0},
        "politics-last2": {"task": "PoliticBias-QA", "freeze_layers": 2}}
merges = [0.5, 1.0]
alphas = [1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 2.8, 3.0]
words = {"GenderBias-QA": "female", "PoliticBias-QA": "republican"}
top_n = [3, 8]
taus = [0.0, 0.1, 0.25, 0.5, 1.0]
trec_dl = ["dl19"]
k = 10
max_queries = 15
max_questions = 40

# %%
P = config.notebook_params(globals(), stage="ragcontrol_retrieve")
C = P.ragcontrol
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
models.preflight([C.embedder])
seed_everything(P.common.seed)
set_style()
DL = {}
for y in C.utility.trec_dl:
    cand, qrels = trec_dl_data.load_candidates(y, RAW), trec_dl_data.load_qrels(y, RAW)
    keep = ev.seeded_subset(trec_dl_data.judged_queries(cand, qrels), C.utility.max_queries, P.common.seed)
    DL[y] = (cand[cand["qid"].isin(keep)], trec_dl_data.load_topics(y, RAW), qrels[qrels["qid"].isin(keep)])
print({y: d[0]["qid"].nunique() for y, d in DL.items()}, "judged TREC DL queries for utility")


def encoder_for(model) -> Encoder:
    enc = Encoder(model, device=P.common.device, batch_size=P.common.batch_size)
    enc.model.max_seq_length = C.max_seq_length
    return enc


def utility(enc) -> list[ev.Reranker]:
    """One re-ranking bench per configured TREC DL year: its passages encoded once by ``enc``."""
    return [ev.Reranker(enc, c, t, q, k=C.utility.k) for c, t, q in DL.values()]


def ndcg(benches: list[ev.Reranker], transform=None) -> float:
    """Mean nDCG@k over the configured TREC DL years."""
    return float(np.mean([b.ndcg(transform) for b in benches]))


base = encoder_for(C.embedder)  # one base embedder for every task, its TREC DL utility computed once
base_benches = utility(base)
base_ndcg = ndcg(base_benches)
rows, utility_rows, subsets = [], [], {}
for task in C.tasks:
    folder = ROOT / "data/processed/ragcontrol/tasks" / task
    test = pd.read_parquet(folder / "test_questions.parquet")
    corpus = pd.read_parquet(folder / "corpus.parquet")
    qids = test["qid"].tolist()
    subsets[task] = ev.seeded_subset(qids, C.reader.max_questions, P.common.seed)
    qv, dv = base.encode(test["question"].tolist()), base.encode(corpus["text"].tolist(), show_progress=True)
    rows.append(ev.top1_rows(task, "base", "base", qids, qv, dv, corpus))
    utility_rows.append({"task": task, "method": "base", "setting": "base", "ndcg": base_ndcg})
    # projection (base embedder, queries only)
    word = C.projection.words[task]
    direction = base.model.encode([word], normalize_embeddings=False, convert_to_numpy=True)[0]
    rows.append(ev.projection_rows(task, qids, qv, dv, corpus, direction, C.projection.alphas))
    for a in progress(C.projection.alphas, desc=f"{task}: projection utility"):
        utility_rows.append({"task": task, "method": "projection", "setting": f"alpha={a:g}",
                             "ndcg": ndcg(base_benches, lambda q, a=a, p=direction: control.project(q, p, a))})
    # sampling (base embedder)
    rows.append(ev.sampling_rows(task, qids, qv, dv, corpus, C.sampling.top_n, C.sampling.taus, P.common.seed))
    # fine-tuned runs x WiSE-FT merge weights
    for run, spec in C.train.runs.items():
        if spec.task != task:
            continue
        for m, model in finetune.wise_models(C.embedder, ROOT / "data/models/ragcontrol" / run, C.train.merges,
                                             device=P.common.device):
            enc = encoder_for(model)
            setting = f"{run}@m={m:g}"
            rows.append(ev.top1_rows(task, "fine-tune", setting, qids, enc.encode(test["question"].tolist()),
                                     enc.encode(corpus["text"].tolist(), show_progress=True), corpus))
            utility_rows.append({"task": task, "method": "fine-tune", "setting": setting,
                                 "ndcg": ndcg(utility(enc))})
retrieved = pd.concat(rows, ignore_index=True)
write_parquet(ROOT / "data/processed/ragcontrol/retrieval/retrievals.parquet", retrieved, index=False)
summary = pd.concat([ev.summarise(retrieved[retrieved["task"] == t], subsets[t]) for t in C.tasks], ignore_index=True)
summary = summary.merge(pd.DataFrame(utility_rows), on=["task", "method", "setting"], how="left")
summary["reader_subset"] = summary["task"].map({t: len(s) for t, s in subsets.items()})
write_csv(ROOT / "reports/ragcontrol/retrieval/embedders.csv", summary)
write_parquet(ROOT / "data/processed/ragcontrol/retrieval/reader_subset.parquet",
              pd.DataFrame([(t, q) for t, s in subsets.items() for q in s], columns=["task", "qid"]), index=False)
summary.round(3)

# %% [markdown]
# ## Embedder bias and utility per setting
# Fine-tuned embedders move the embedder bias towards bias1 (female / conservative) with the WiSE-FT weight m;
# projection moves it with α; sampling barely moves it (the paper's finding, App. "Sampling").

# %%
fig, axes = plt.subplots(1, len(C.tasks), figsize=(5.5 * len(C.tasks), 3.6), squeeze=False)
for ax, task in zip(axes[0], C.tasks, strict=True):
    d = summary[summary["task"] == task]
    sns.scatterplot(data=d, x="embedder_bias", y="ndcg", hue="method", style="method", s=60, ax=ax)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set(title=task, xlabel="embedder bias (%)", ylabel=f"TREC DL nDCG@{C.utility.k}")
fig.suptitle("Embedder bias vs utility per setting (cf. the appendix's utility tables)")
save_figure(fig, ROOT / "reports/ragcontrol/retrieval/bias_vs_utility.png")
plt.show()
