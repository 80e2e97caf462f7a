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
# collection is not here. Offline and real (`biaslab.fairrank.prepare`): training pairs from the judged passages
# of TREC DL20's BM25 top-100 (+ the 100 MS MARCO training triples), evaluation by re-ranking TREC DL19's BM25
# lists — all 43 queries (`dl19`) and the 30 fairness-sensitive ones of Rekabsaz et al. 2021 (`dl19_fair`).
# Every passage's bias terms — Ψ (eqs. 14–15), ζ (eq. 22) and the counts behind ARaB, NFaiRR and the gendered-term
# gap — are computed here, once. With `fairrank.train.trainable_layers` below the encoder's depth, the frozen
# bottom layers run here once per (query, passage) pair and backbone.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.data import msmarco, rekabsaz, trec_dl
from biaslab.fairrank import bias, prepare
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
# ## Training pairs (DL20) and the lists to re-rank (DL19)

# %%
D = C.data
cand = {y: trec_dl.load_candidates(y, RAW) for y in trec_dl.YEARS}
qrels = {y: trec_dl.load_qrels(y, RAW) for y in trec_dl.YEARS}
topics = {y: trec_dl.load_topics(y, RAW) for y in trec_dl.YEARS}
pairs = prepare.judged_pairs(cand["dl20"], qrels["dl20"], topics["dl20"], relevance=D.relevance, negatives=D.negatives)
available = len(pairs)
pairs = prepare.sample_pairs(pairs, D.max_pairs, P.common.seed)
docs = pd.concat([cand["dl19"][["docid", "text"]], cand["dl20"][["docid", "text"]]])
if D.toy_triples:
    toy, toy_docs = prepare.toy_pairs(msmarco.load_toy_triples(RAW))
    pairs, docs = pd.concat([pairs, toy], ignore_index=True), pd.concat([docs, toy_docs])
docs = docs.drop_duplicates("docid").reset_index(drop=True)
eval_qids = trec_dl.judged_queries(cand["dl19"], qrels["dl19"])
fair_qids = sorted(set(rekabsaz.load_fair_queries("trecdl19", RAW)["qid"].astype(str)) & set(eval_qids))
prepare.check_disjoint(pairs["qid"], eval_qids)
full_lists = prepare.eval_lists(cand["dl19"], topics["dl19"], eval_qids)  # the BM25 ranker and NFaiRR's background
lists = full_lists[full_lists["rank"] <= D.rerank_depth].reset_index(drop=True)  # what the rankers re-rank
queries = pd.DataFrame({"query_set": ["dl19"] * len(eval_qids) + ["dl19_fair"] * len(fair_qids),
                        "qid": [*eval_qids, *fair_qids]})
sizes = pd.DataFrame([
    {"what": "training pairs (DL20 judged, sampled)", "ours": int((~pairs["qid"].str.startswith("toy:")).sum()),
     "available": available, "paper": "3,000,000 MS MARCO pairs"},
    {"what": "training queries (DL20)", "ours": int(pairs.loc[~pairs["qid"].str.startswith("toy:"), "qid"].nunique()),
     "available": int(cand["dl20"]["qid"].nunique()), "paper": "~200,000"},
    {"what": "MS MARCO training triples", "ours": int(pairs["qid"].str.startswith("toy:").sum()), "available": 100,
     "paper": "(part of the 3M pairs)"},
    {"what": "evaluation queries (dl19)", "ours": len(eval_qids), "available": 43, "paper": "1,765 gender-neutral"},
    {"what": "fairness-sensitive queries (dl19_fair)", "ours": len(fair_qids), "available": 30,
     "paper": "215 socially sensitive"},
    {"what": "passages re-ranked per query", "ours": D.rerank_depth, "available": 100, "paper": "BM25 top-1000 (OpenMatch)"},
])
write_csv(ROOT / "reports/fairrank/data/sizes.csv", sizes)
sizes

# %% [markdown]
# ## Document bias terms, once per passage

# %%
terms = bias.document_terms(docs, rekabsaz.load_wordlist("genderspecific", RAW),
                            rekabsaz.load_wordlist("representative", RAW),
                            neutrality_threshold=C.loss.neutrality_threshold)
pool = prepare.biased_negatives(cand["dl20"], qrels["dl20"], topics["dl20"], terms, pairs["qid"].unique(),
                                relevance=D.relevance, negatives=D.negatives)  # LWS's bias-aware negatives
write_parquet(OUT / "pairs.parquet", pairs, index=False)
write_parquet(OUT / "lws_pool.parquet", pool, index=False)
write_parquet(OUT / "lists.parquet", full_lists, index=False)
write_parquet(OUT / "queries.parquet", queries, index=False)
write_parquet(OUT / "qrels.parquet", qrels["dl19"][qrels["dl19"]["qid"].isin(set(eval_qids))], index=False)
write_parquet(OUT / "docs.parquet", docs, index=False)
write_parquet(OUT / "terms.parquet", terms, index=False)
psi_share = terms["psi"].value_counts(normalize=True).round(3)
print(f"{len(terms)} passages; share with ζ < 1: {(terms['zeta'] < 1).mean():.3f}; share per Ψ:", psi_share.to_dict())
train_docs = set(pairs["pos"]) | set(pairs["neg"])
terms[terms["docid"].isin(train_docs)][["psi", "zeta", "def_f", "def_m", "rep_f", "rep_m"]].describe().round(3)

# %% [markdown]
# ## The frozen bottom of each backbone, once per query and passage (bi-encoder) or (query, passage) pair

# %%
rows = pd.concat([prepare.pointwise_rows(pairs)[["qid", "query", "docid"]], pool, lists[["qid", "query", "docid"]]])
texts = dict(zip(docs["docid"], docs["text"], strict=True))
print("\n".join(ft.save_state_banks(M, C.backbones, rows, texts, trainable_layers=C.train.trainable_layers,
                                    family=C.train.family, max_length=C.train.max_length,
                                    batch_size=C.train.score_batch_size, device=P.common.device, out_dir=OUT / "states")))
