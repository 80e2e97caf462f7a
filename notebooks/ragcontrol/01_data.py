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
# # ragcontrol — task data, judge and training candidates (Kim et al. 2025, App. "Dataset Creation", "Training")
#
# One task per run (GenderBias-QA or PoliticBias-QA):
#
# 1. the released questions and the evaluation ("validation") corpus with each document's released side;
# 2. the judge (`biaslab.ragcontrol.judges`) — offline: pronouns + first names for gender, the released claim side
#    for politics — and its agreement with the released sides;
# 3. candidate documents for every *training* question: top-k per corpus for the original and the two
#    group-steered queries with the base embedder, judged positive (female / conservative) or negative
#    (male / liberal), and the trainer rows built from them (`biaslab.ragcontrol.finetune.training_rows`).

# %%
import pandas as pd

from biaslab import config, models
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_json, write_parquet
from biaslab.llm import from_params, gen_params, needs_model
from biaslab.paths import repo_root, resolve
from biaslab.ragcontrol import candidates as cd
from biaslab.ragcontrol import finetune, judges, prepare, tasks
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
task = "GenderBias-QA"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
embedder = ...  # ragcontrol.embedder
max_seq_length = ...  # ragcontrol.max_seq_length
judge = ...  # ragcontrol.judge
max_test_questions = ...  # ragcontrol.max_test_questions
top_k = ...  # ragcontrol.candidates.top_k
corpora = ...  # ragcontrol.candidates.corpora
max_pool = ...  # ragcontrol.candidates.max_pool
max_positives = ...  # ragcontrol.candidates.max_positives
max_negatives = ...  # ragcontrol.candidates.max_negatives
pad_negatives_with_neutral = ...  # ragcontrol.candidates.pad_negatives_with_neutral
backend = ...  # llm.backend
model = ...  # llm.model
max_new_tokens = ...  # llm.max_new_tokens
temperature = ...  # llm.temperature
top_p = ...  # llm.top_p
cache = ...  # llm.cache
openai = ...  # llm.openai
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
tasks.check_task(task)
P = config.stage_params(globals(), f"ragcontrol_data@{task}")
C = P.ragcontrol
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
OUT = ROOT / "data/processed/ragcontrol/tasks" / task
REP = ROOT / "reports/ragcontrol/data"
M = models.preflight([C.embedder, *(needs_model(P.llm) if C.judge == "llm" else [])], P.models)
seed_everything(P.common.seed)
groups = tasks.GROUPS[task]
splits = {s: tasks.questions(task, s, RAW) for s in tasks.SPLITS[task]}
corpus = tasks.eval_corpus(task, RAW, splits)
splits["test"], corpus = prepare.test_subset(splits["test"], corpus, C.max_test_questions, P.common.seed)
pd.DataFrame([{"split": s, "questions": len(q)} for s, q in splits.items()] +
             [{"split": "evaluation corpus", "questions": len(corpus)}])

# %% [markdown]
# ## The judge and its agreement with the released sides

# %%
offline, spec = prepare.offline_judge(task, splits, corpus, RAW)
judges.register_offline(**{spec["kind"]: offline})
if C.judge == "llm":
    judge_ = judges.LLMJudge(from_params(P.llm, device=P.common.device, model_dirs=M), gen_params(P.llm, P.common.seed),
                             groups)
else:
    judge_ = offline
write_json(OUT / "judge.json", spec)
b1, b2 = judge_.flags(corpus["text"].tolist())
corpus = corpus.assign(bias1=b1, bias2=b2)
agreement = prepare.judge_agreement(corpus, groups)
write_csv(REP / f"{task}_judge_agreement.csv", agreement)
print(f"judge: {C.judge}; released side vs judged side on the evaluation corpus")
agreement

# %% [markdown]
# ## Test questions for the readers
# PoliticBias-QA: the seeded A/B order of the two claims (App.: randomised). GenderBias-QA: the two answer names for
# the likelihood reader — the protagonists of the question's released female and male passages.

# %%
test = prepare.reader_questions(task, splits["test"], P.common.seed)
if task == "GenderBias-QA":
    print(f"answer names found for {int(test[['female_name', 'male_name']].notna().all(axis=1).sum())} of "
          f"{len(test)} test questions")
write_parquet(OUT / "test_questions.parquet", test, index=False)
write_parquet(OUT / "corpus.parquet", corpus.assign(qids=corpus["qids"].map(list)), index=False)
test.head(3)

# %% [markdown]
# ## Candidate documents and trainer rows (App. "Training")

# %%
pools = prepare.candidate_pools(C.candidates.corpora[task], RAW, splits, corpus, max_pool=C.candidates.max_pool,
                                seed=P.common.seed)
encoder = Encoder(M[C.embedder], device=P.common.device, batch_size=P.common.batch_size)
encoder.model.max_seq_length = C.max_seq_length
train_q = splits["train"]["question"].tolist()
cands = cd.label(cd.retrieve_candidates(encoder, task, train_q, pools, top_k=C.candidates.top_k), judge_)
rows = finetune.training_rows(cands, C.candidates.max_positives, C.candidates.max_negatives,
                              pad_negatives_with_neutral=C.candidates.pad_negatives_with_neutral[task],
                              seed=P.common.seed)
write_parquet(OUT / "candidates.parquet", cands, index=False)
write_parquet(OUT / "train_rows.parquet", rows, index=False)
counts = prepare.candidate_counts(cands, pools)
write_csv(REP / f"{task}_candidates.csv", counts)
stats = prepare.row_stats(rows)
print(f"{len(rows)} of {len(train_q)} training questions have a positive and a negative "
      f"(positives per question {stats['positives_per_question']:.1f}, "
      f"negatives {stats['negatives_per_question']:.1f})")
write_json(REP / f"{task}_summary.json", {"task": task, "questions": {s: len(q) for s, q in splits.items()},
                                          "corpus": len(corpus), "candidate_pools": {k: len(v) for k, v in pools.items()},
                                          "training_rows": len(rows), "judge": C.judge})
counts

# %%
cands.groupby(["corpus", "variant", "role"]).size().unstack(fill_value=0)
