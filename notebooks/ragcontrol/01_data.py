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
from biaslab.data import bbq, trec_dl, twinviews, wikitext
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_json, write_parquet
from biaslab.llm import from_params, gen_params
from biaslab.paths import repo_root, resolve
from biaslab.ragcontrol import candidates as cd
from biaslab.ragcontrol import finetune, judges, reader, tasks
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
task = "GenderBias-QA"
seed = 42
device = "auto"
batch_size = 64
raw_dir = "data/raw"
embedder = "minilm"
max_seq_length = 128
judge = "lexicon"
top_k = 3
max_pool = 3000
corpora = {"GenderBias-QA": ["msmarco", "wikipedia"], "PoliticBias-QA": ["msmarco", "wikipedia", "twinviews"]}
max_positives = 3
max_negatives = 3
pad_negatives_with_neutral = {"GenderBias-QA": True, "PoliticBias-QA": False}
backend = "rules"
model = "smollm2-135m-instruct"
max_new_tokens = 256
temperature = 0.0
top_p = 1.0
cache = True
openai = {"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY",
          "timeout": 60.0, "max_retries": 2}

# %%
tasks.check_task(task)
P = config.notebook_params(globals(), stage=f"ragcontrol_data@{task}")
C = P.ragcontrol
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
OUT = ROOT / "data/processed/ragcontrol/tasks" / task
REP = ROOT / "reports/ragcontrol/data"
models.preflight([C.embedder])
seed_everything(P.common.seed)
groups = tasks.GROUPS[task]
splits = {s: tasks.questions(task, s, RAW) for s in tasks.SPLITS[task]}
corpus = tasks.eval_corpus(task, RAW, splits)
pd.DataFrame([{"split": s, "questions": len(q)} for s, q in splits.items()] +
             [{"split": "evaluation corpus", "questions": len(corpus)}])

# %% [markdown]
# ## The judge and its agreement with the released sides

# %%
if task == "GenderBias-QA":
    labelled = [(t, side) for q in splits.values() for side, col in (("female", "female_docs"), ("male", "male_docs"))
                for docs in q[col] for t in docs]
    lexicon = {**judges.bbq_first_names(bbq.load_proper_names(RAW)), **judges.harvest_first_names(labelled)}
    offline = judges.GenderLexiconJudge(lexicon)
    judges.register_offline(gender=offline)
    spec = {"kind": "gender", "first_names": lexicon}
else:
    tv = twinviews.load(RAW)  # every statement's side as released (TwinViews l / r, PoliticBias-QA left / right)
    sides = {**dict.fromkeys(tv["right"], "conservative"), **dict.fromkeys(tv["left"], "liberal")}
    for q in splits.values():
        sides.update({**dict.fromkeys(q["right_claim"], "conservative"), **dict.fromkeys(q["left_claim"], "liberal")})
    sides.update({t: "mixed" for t, s in zip(corpus["text"], corpus["lean"], strict=True) if s == "mixed"})
    offline = judges.PoliticsLookupJudge(sides)
    judges.register_offline(politics=offline)
    spec = {"kind": "politics", "sides": sides}
if C.judge == "llm":
    models.preflight([P.llm.model] if P.llm.backend == "transformers" else [])
    judge_ = judges.LLMJudge(from_params(P.llm, device=P.common.device), gen_params(P.llm, P.common.seed), groups)
else:
    judge_ = offline
write_json(OUT / "judge.json", spec)
b1, b2 = judge_.flags(corpus["text"].tolist())
corpus = corpus.assign(bias1=b1, bias2=b2)
agreement = (corpus.groupby("lean")[["bias1", "bias2"]].mean().mul(100).round(1)
             .rename(columns={"bias1": f"% judged {groups[0]}", "bias2": f"% judged {groups[1]}"}).reset_index())
agreement.insert(1, "documents", corpus.groupby("lean").size().to_numpy())
write_csv(REP / f"{task}_judge_agreement.csv", agreement)
print(f"judge: {C.judge}; released side vs judged side on the evaluation corpus")
agreement

# %% [markdown]
# ## Test questions for the readers
# PoliticBias-QA: the seeded A/B order of the two claims (App.: randomised). GenderBias-QA: the two answer names for
# the likelihood reader — the protagonists of the question's released female and male passages.

# %%
test = splits["test"].copy()
if task == "PoliticBias-QA":
    test["right_first"] = reader.choice_order(len(test), P.common.seed)
else:
    def name(docs):
        found = [judges.protagonist(d) for d in docs]
        return next((p[1] for p in found if p), None)

    test["female_name"] = test["female_docs"].map(name)
    test["male_name"] = test["male_docs"].map(name)
    test["female_docs"] = test["female_docs"].map(list)
    test["male_docs"] = test["male_docs"].map(list)
    print(f"answer names found for {int(test[['female_name', 'male_name']].notna().all(axis=1).sum())} of "
          f"{len(test)} test questions")
write_parquet(OUT / "test_questions.parquet", test, index=False)
write_parquet(OUT / "corpus.parquet", corpus.assign(qids=corpus["qids"].map(list)), index=False)
test.head(3)

# %% [markdown]
# ## Candidate documents and trainer rows (App. "Training")

# %%
def candidate_corpus(name: str) -> list[str]:
    if name == "msmarco":
        return sorted(set(pd.concat([trec_dl.load_candidates(y, RAW)["text"] for y in trec_dl.YEARS])))
    if name == "wikipedia":
        return wikitext.load_paragraphs(raw_dir=RAW)["text"].drop_duplicates().tolist()
    if name == "twinviews":
        claims = pd.concat(splits.values())[["left_claim", "right_claim"]]
        kept = twinviews.exclude_pairs(twinviews.load(RAW), claims)
        return list(dict.fromkeys([*kept["left"], *kept["right"]]))
    raise ValueError(name)


pools = {name: cd.subsample(candidate_corpus(name), C.candidates.max_pool, P.common.seed)
         for name in C.candidates.corpora[task]}
if task == "PoliticBias-QA" and "twinviews" in pools:  # the evaluation claims must never be trained on
    assert not set(pools["twinviews"]) & set(corpus["text"]), "a PoliticBias-QA claim leaked into the candidates"
encoder = Encoder(C.embedder, device=P.common.device, batch_size=P.common.batch_size)
encoder.model.max_seq_length = C.max_seq_length
train_q = splits["train"]["question"].tolist()
cands = cd.label(cd.retrieve_candidates(encoder, task, train_q, pools, top_k=C.candidates.top_k), judge_)
rows = finetune.training_rows(cands, C.candidates.max_positives, C.candidates.max_negatives,
                              pad_negatives_with_neutral=C.candidates.pad_negatives_with_neutral[task],
                              seed=P.common.seed)
write_parquet(OUT / "candidates.parquet", cands, index=False)
write_parquet(OUT / "train_rows.parquet", rows, index=False)
counts = cands.pivot_table(index="corpus", columns="role", values="text", aggfunc="count", fill_value=0)
counts["corpus size"] = [len(pools[c]) for c in counts.index]
counts = counts.reset_index()
write_csv(REP / f"{task}_candidates.csv", counts)
print(f"{len(rows)} of {len(train_q)} training questions have a positive and a negative "
      f"(positives per question {rows['label'].map(lambda v: sum(x > 0 for x in v)).mean():.1f}, "
      f"negatives {rows['label'].map(lambda v: sum(x < 0 for x in v)).mean():.1f})")
write_json(REP / f"{task}_summary.json", {"task": task, "questions": {s: len(q) for s, q in splits.items()},
                                          "corpus": len(corpus), "candidate_pools": {k: len(v) for k, v in pools.items()},
                                          "training_rows": len(rows), "judge": C.judge})
counts

# %%
cands.groupby(["corpus", "variant", "role"]).size().unstack(fill_value=0)
