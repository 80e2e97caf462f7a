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
# # fairrank — training pairs, re-ranking lists and document bias terms (Seyedsalehi et al., §3.3, §4.2)
#
# The paper trains OpenMatch cross-encoders on 3M MS MARCO pairs and evaluates on MS MARCO dev queries; the
# collection is not here. Offline and real (`biaslab.fairrank.prepare`), in the folds of `fairrank.data.folds`
# (default: two): training pairs from the judged passages of one TREC DL year's BM25 top-100 (+ the 100 MS MARCO
# training triples), evaluation by re-ranking the other year's BM25 lists — every evaluated query pooled (`trecdl`:
# DL19's 43 and DL20's 54) and DL19's 30 fairness-sensitive ones of Rekabsaz et al. 2021 (`dl19_fair`).
# Every passage's bias terms — Ψ (eqs. 14–15), ζ (eq. 22) and the counts behind ARaB, NFaiRR and the gendered-term
# gap — are computed here, once. With `fairrank.train.trainable_layers` below the encoder's depth, the frozen
# bottom layers run here once per (query, passage) pair and backbone.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.data import msmarco, rekabsaz, trec_dl
from biaslab.fairrank import prepare
from biaslab.fairrank import train as ft
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root, resolve

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
raw_dir = ...  # data.raw_dir
backbones = ...  # fairrank.backbones
relevance = ...  # fairrank.data.relevance
negatives = ...  # fairrank.data.negatives
max_pairs = ...  # fairrank.data.max_pairs
toy_triples = ...  # fairrank.data.toy_triples
rerank_depth = ...  # fairrank.data.rerank_depth
folds = ...  # fairrank.data.folds
neutrality_threshold = ...  # fairrank.loss.neutrality_threshold
family = ...  # fairrank.train.family
max_length = ...  # fairrank.train.max_length
trainable_layers = ...  # fairrank.train.trainable_layers
score_batch_size = ...  # fairrank.train.score_batch_size
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "fairrank_data")
C = P.fairrank
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
OUT = ROOT / "data/processed/fairrank"
M = models.preflight(C.backbones, P.models)

# %% [markdown]
# ## Training pairs and the lists to re-rank, per fold; every passage's bias terms

# %%
D = C.data
cand = {y: trec_dl.load_candidates(y, RAW) for y in trec_dl.YEARS}
qrels = {y: trec_dl.load_qrels(y, RAW) for y in trec_dl.YEARS}
topics = {y: trec_dl.load_topics(y, RAW) for y in trec_dl.YEARS}
judged = {y: trec_dl.judged_queries(cand[y], qrels[y]) for y in trec_dl.YEARS}
F, terms = prepare.build_folds(
    cand, qrels, topics, judged, D.folds, relevance=D.relevance, negatives=D.negatives, max_pairs=D.max_pairs,
    seed=P.common.seed, toy=msmarco.load_toy_triples(RAW) if D.toy_triples else None,
    wordlists=(rekabsaz.load_wordlist("genderspecific", RAW), rekabsaz.load_wordlist("representative", RAW)),
    neutrality_threshold=C.loss.neutrality_threshold)
evaluated = F.lists.drop_duplicates("qid")
fair_qids = sorted(set(rekabsaz.load_fair_queries("trecdl19", RAW)["qid"].astype(str))
                   & set(evaluated.loc[evaluated["fold"] == "dl19", "qid"]))
queries = pd.DataFrame({"query_set": ["trecdl"] * len(evaluated) + ["dl19_fair"] * len(fair_qids),
                        "qid": [*evaluated["qid"], *fair_qids]})
sizes = prepare.fold_sizes(F, fair_qids, D.rerank_depth)
write_csv(ROOT / "reports/fairrank/data/sizes.csv", sizes)
sizes

# %%
write_parquet(OUT / "pairs.parquet", F.pairs, index=False)
write_parquet(OUT / "lws_pool.parquet", F.pool, index=False)
write_parquet(OUT / "lists.parquet", F.lists, index=False)
write_parquet(OUT / "queries.parquet", queries, index=False)
write_parquet(OUT / "qrels.parquet", F.qrels, index=False)
write_parquet(OUT / "docs.parquet", F.docs, index=False)
write_parquet(OUT / "terms.parquet", terms, index=False)
psi_share = terms["psi"].value_counts(normalize=True).round(3)
print(f"{len(terms)} passages; share with ζ < 1: {(terms['zeta'] < 1).mean():.3f}; share per Ψ:", psi_share.to_dict())
train_docs = set(F.pairs["pos"]) | set(F.pairs["neg"])
terms[terms["docid"].isin(train_docs)][["psi", "zeta", "def_f", "def_m", "rep_f", "rep_m"]].describe().round(3)

# %% [markdown]
# ## The frozen bottom of each backbone, once per query and passage (bi-encoder) or (query, passage) pair

# %%
lists = F.lists[F.lists["rank"] <= D.rerank_depth]  # what the rankers re-rank
rows = pd.concat([prepare.pointwise_rows(F.pairs)[["qid", "query", "docid"]], F.pool[["qid", "query", "docid"]],
                  lists[["qid", "query", "docid"]]])
texts = dict(zip(F.docs["docid"], F.docs["text"], strict=True))
print("\n".join(ft.save_state_banks(M, C.backbones, rows, texts, trainable_layers=C.train.trainable_layers,
                                    family=C.train.family, max_length=C.train.max_length,
                                    batch_size=C.train.score_batch_size, device=P.common.device, out_dir=OUT / "states")))
