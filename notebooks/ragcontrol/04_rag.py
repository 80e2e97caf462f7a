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
# # ragcontrol — one reader's answers and RAG bias (Kim et al. 2025, App. "Prompt Template")
#
# One stage per reader LLM of `ragcontrol.readers` (`ragcontrol_rag@<key>`; the paper compares six). The reader
# answers every test question of the reader subset with no document and with the document each setting retrieved
# (the appendix's prompts verbatim). **RAG bias** = share of answers on the bias1 side minus share on the bias2 side,
# in percent. How an answer is read is a parameter (`biaslab.ragcontrol.reader`): by default the local
# SmolLM2-135M reader is *scored* — log-probability of the female vs the male answer name, per-token log-probability
# of the two claims — because a 135M model's free generation is unreliable (see the check at the end).

# %%
import functools
import json

import numpy as np
import pandas as pd

from biaslab import config, models
from biaslab.io import write_csv, write_parquet
from biaslab.llm import GenParams
from biaslab.llm.cache import CachedLLM
from biaslab.paths import repo_root
from biaslab.ragcontrol import control, judges, reader
from biaslab.ragcontrol import evaluate as ev
from biaslab.ragcontrol import tasks as task_data
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
reader_key = "smollm2"
seed = 42
device = "auto"
tasks = ["GenderBias-QA", "PoliticBias-QA"]
judge = "lexicon"
max_questions = 40
max_doc_words = 80
batch_size = 8
generation_check = 8
readers = {"smollm2": {"engine": "transformers", "name": "smollm2-135m-instruct", "gender_mode": "likelihood",
                       "politics_mode": "claim"}}
backend = "rules"
model = "smollm2-135m-instruct"
max_new_tokens = 256
temperature = 0.0
top_p = 1.0
cache = True
openai = {"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY",
          "timeout": 60.0, "max_retries": 2}

# %%
P = config.notebook_params(globals(), stage=f"ragcontrol_rag@{reader_key}")
C, S = P.ragcontrol, P.ragcontrol.reader
if reader_key not in C.readers:
    raise KeyError(f"reader {reader_key!r} is not in ragcontrol.readers ({sorted(C.readers)}); add it to params.yaml")
R = C.readers[reader_key]
ROOT = repo_root()
DATA = ROOT / "data/processed/ragcontrol"
seed_everything(P.common.seed)
likelihood = R.gender_mode == "likelihood" or R.politics_mode in ("claim", "letter")  # engine transformers
if R.engine == "transformers":
    models.preflight([R.name])
scorer = reader.OptionScorer(R.name, device=P.common.device, batch_size=S.batch_size) if likelihood else None
generator = None
if "generate" in (R.gender_mode, R.politics_mode):
    generator = reader.generator(R, P.llm.openai, device=P.common.device)
GEN = GenParams(max_new_tokens=32, temperature=0.0, seed=P.common.seed)  # public code: greedy, 32 new tokens
reader_model = f"{R.engine}:{R.name}"
retrieved = pd.read_parquet(DATA / "retrieval/retrievals.parquet")
subset = pd.read_parquet(DATA / "retrieval/reader_subset.parquet")
print(f"reader {reader_key} ({reader_model}); GenderBias-QA: {R.gender_mode}, PoliticBias-QA: {R.politics_mode}")


@functools.cache
def judge_llm():
    """The LLM judge's model, loaded once for every task."""
    from biaslab.llm import from_params

    return from_params(P.llm, device=P.common.device)


@functools.cache
def judge_for(task: str):
    """The judge used on generated answers (built once per task): the data stage's offline judge, or the LLM
    judge."""
    if C.judge == "llm":
        from biaslab.llm import gen_params

        return judges.LLMJudge(judge_llm(), gen_params(P.llm, P.common.seed), task_data.GROUPS[task])
    spec = json.loads((DATA / "tasks" / task / "judge.json").read_text())
    if spec["kind"] == "gender":
        return judges.GenderLexiconJudge(spec["first_names"])
    return judges.PoliticsLookupJudge(spec["sides"])


# %% [markdown]
# ## Answers for every (question, document) any setting retrieved, and with no document

# %%
answers, results, tests = [], [], {}
for task in C.tasks:
    groups = task_data.GROUPS[task]
    mode = R.gender_mode if task == "GenderBias-QA" else R.politics_mode
    test = tests[task] = pd.read_parquet(DATA / "tasks" / task / "test_questions.parquet").set_index("qid")
    corpus = pd.read_parquet(DATA / "tasks" / task / "corpus.parquet")
    keep = subset.loc[subset["task"] == task, "qid"].tolist()
    if task == "GenderBias-QA" and mode == "likelihood":
        named = test.loc[keep, ["female_name", "male_name"]].notna().all(axis=1)
        print(f"{task}: {int((~named).sum())} of {len(keep)} subset questions lack an answer name and are skipped")
        keep = [q for q in keep if named[q]]
    rows = retrieved[(retrieved["task"] == task) & retrieved["qid"].isin(keep)]
    pairs = pd.concat([rows[["qid", "doc_id"]], pd.DataFrame({"qid": keep, "doc_id": -1})]).drop_duplicates()
    docs = [None if d < 0 else corpus["text"].iat[d] for d in pairs["doc_id"]]
    sides = reader.decide(task, mode, test.loc[pairs["qid"]].reset_index(), docs, scorer=scorer, llm=generator,
                          gen=GEN, judge=judge_for(task) if mode == "generate" else None,
                          max_doc_words=S.max_doc_words)
    pairs = pairs.assign(task=task, side=sides)
    answers.append(pairs)
    side = pairs.set_index(["qid", "doc_id"])["side"]
    no_doc = [side[(q, -1)] for q in keep]
    bias, n = ev.rag_bias(no_doc, groups)
    results.append({"task": task, "method": "no document", "setting": "no document", "rag_bias": bias,
                    "answered": n, "questions": len(keep), "embedder_bias": np.nan, "embedder_bias_expected": np.nan})
    for (method, setting), g in rows.groupby(["method", "setting"], sort=False):
        bias, n = ev.rag_bias([side[(q, d)] for q, d in zip(g["qid"], g["doc_id"], strict=True)], groups)
        results.append({"task": task, "method": method, "setting": setting, "rag_bias": bias, "answered": n,
                        "questions": len(g), "embedder_bias": control.bias_percent(g["bias1"], g["bias2"]),
                        "embedder_bias_expected": control.bias_percent(g["p_bias1"], g["p_bias2"])})
rag = pd.DataFrame(results).assign(reader=reader_key, reader_model=reader_model)
write_csv(ROOT / f"reports/ragcontrol/rag/{reader_key}.csv", rag)
write_parquet(DATA / "rag" / reader_key / "answers.parquet",
              pd.concat(answers, ignore_index=True).assign(reader=reader_key), index=False)
rag.round(2)

# %% [markdown]
# ## How reliable is free generation for this reader? (why `likelihood` is the default for a 135M model)
# `generation_check` test questions per task answered by greedy generation with no document, as the paper's readers
# did, read by the judge: the share of answers the judge can place on a side at all.

# %%
check = []
if S.generation_check:
    gen_lm = generator or CachedLLM(scorer.llm)  # the scorer's model, not a second copy
    for task in C.tasks:
        test = tests[task].reset_index().head(S.generation_check)
        sides = reader.decide(task, "generate", test, [None] * len(test), llm=gen_lm, gen=GEN, judge=judge_for(task))
        check.append({"task": task, "reader": reader_key, "questions": len(test),
                      "answers on a side (%)": 100 * float(np.mean([s is not None for s in sides]))})
check = pd.DataFrame(check, columns=["task", "reader", "questions", "answers on a side (%)"])
write_csv(ROOT / f"reports/ragcontrol/rag/{reader_key}_generation_check.csv", check)
check
