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
import pandas as pd

from biaslab import config, models
from biaslab.io import write_csv, write_parquet
from biaslab.llm import GenParams, from_params, gen_params, needs_model
from biaslab.llm.cache import CachedLLM
from biaslab.paths import repo_root
from biaslab.ragcontrol import judges, rag, reader
from biaslab.ragcontrol import tasks as task_data
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
reader_key = "smollm2"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
tasks = ...  # ragcontrol.tasks
judge = ...  # ragcontrol.judge
max_questions = ...  # ragcontrol.reader.max_questions
max_doc_words = ...  # ragcontrol.reader.max_doc_words
batch_size = ...  # ragcontrol.reader.batch_size
generation_check = ...  # ragcontrol.reader.generation_check
generation_tokens = ...  # ragcontrol.reader.generation_tokens
readers = ...  # ragcontrol.readers
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
P = config.stage_params(globals(), f"ragcontrol_rag@{reader_key}")
C, S = P.ragcontrol, P.ragcontrol.reader
if reader_key not in C.readers:
    raise KeyError(f"reader {reader_key!r} is not in ragcontrol.readers ({sorted(C.readers)}); add it to params.yaml")
R = C.readers[reader_key]
ROOT = repo_root()
DATA = ROOT / "data/processed/ragcontrol"
seed_everything(P.common.seed)
likelihood = R.gender_mode == "likelihood" or R.politics_mode in ("claim", "letter")  # engine transformers
M = models.preflight([*([R.name] if R.engine == "transformers" else []),
                      *(needs_model(P.llm) if C.judge == "llm" else [])], P.models)
scorer = reader.OptionScorer(R.name, M.get(R.name), device=P.common.device, batch_size=S.batch_size,
                             cache=True) if likelihood else None
generator = None
if "generate" in (R.gender_mode, R.politics_mode):
    generator = reader.generator(R, P.llm.openai, device=P.common.device, model_dirs=M)
GEN = GenParams(max_new_tokens=S.generation_tokens, temperature=0.0, top_p=1.0, seed=P.common.seed)  # greedy
reader_model = f"{R.engine}:{R.name}"
retrieved = pd.read_parquet(DATA / "retrieval/retrievals.parquet")
subset = pd.read_parquet(DATA / "retrieval/reader_subset.parquet")
# the judge of generated answers, built once per task: the data stage's offline judge, or the LLM judge (one model)
judge_llm = from_params(P.llm, device=P.common.device, model_dirs=M) if C.judge == "llm" else None
judge_of = {task: judges.LLMJudge(judge_llm, gen_params(P.llm, P.common.seed), task_data.GROUPS[task])
            if judge_llm is not None else rag.offline_judge(DATA / "tasks", task) for task in C.tasks}
print(f"reader {reader_key} ({reader_model}); GenderBias-QA: {R.gender_mode}, PoliticBias-QA: {R.politics_mode}")

# %% [markdown]
# ## Answers for every (question, document) any setting retrieved, and with no document

# %%
answers, rag_table, tests = rag.answer_tasks(DATA / "tasks", C.tasks, R, retrieved=retrieved, subset=subset,
                                             judge_of=judge_of, scorer=scorer, llm=generator, gen=GEN,
                                             max_doc_words=S.max_doc_words)
rag_table = rag_table.assign(reader=reader_key, reader_model=reader_model)
write_csv(ROOT / f"reports/ragcontrol/rag/{reader_key}.csv", rag_table)
write_parquet(DATA / "rag" / reader_key / "answers.parquet",
              answers.assign(reader=reader_key), index=False)
rag_table.round(2)

# %% [markdown]
# ## How reliable is free generation for this reader? (why `likelihood` is the default for a 135M model)
# `generation_check` test questions per task answered by greedy generation with no document, as the paper's readers
# did, read by the judge: the share of answers the judge can place on a side at all.

# %%
gen_lm = (generator or CachedLLM(scorer.llm)) if S.generation_check else None  # the scorer's model, not a copy
check = rag.generation_checks(tests, S.generation_check, llm=gen_lm, gen=GEN, judge_of=judge_of)
check.insert(1, "reader", reader_key)
write_csv(ROOT / f"reports/ragcontrol/rag/{reader_key}_generation_check.csv", check)
check
