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
# # intersect — reference corpora (paper §3.1.1, App. A.1)
#
# Builds INDI-REFERENCE (from the 561 public IndiBias pairs) or SBIC-REFERENCE (from the SBIC dev + test
# aggregates; the train split is not obtainable here) for one corpus (`corpus` = `indic` | `western`).
# Biased sentences: one distilled per IndiBias pair with the Fig. 11 prompt / SBIC posts sampled per
# `targetCategory` up to the Table 3 counts. Unbiased sentences: rewrites with the Fig. 12 prompt, labelled
# `unbiased` with the original label kept as `bias_context`. All generation goes through the LLM layer and its
# cache; with the offline `rules` backend the texts are real data — see the module docstring of
# `biaslab.intersect.reference` for exactly what is used.

# %%
from biaslab import config, models
from biaslab.data import indibias, sbic
from biaslab.embed import Encoder
from biaslab.intersect import reference
from biaslab.io import write_csv, write_parquet
from biaslab.llm import from_params, gen_params, needs_model
from biaslab.paths import repo_root, resolve
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
corpus = "indic"  # the member this notebook runs
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
backend = ...  # llm.backend
model = ...  # llm.model
max_new_tokens = ...  # llm.max_new_tokens
temperature = ...  # llm.temperature
top_p = ...  # llm.top_p
cache = ...  # llm.cache
openai = ...  # llm.openai
indi_n_unbiased = ...  # intersect.reference.indi_n_unbiased
sbic_n_unbiased = ...  # intersect.reference.sbic_n_unbiased
sbic_unbiased_max_offensive = ...  # intersect.reference.sbic_unbiased_max_offensive
sbic_neutral_pool = ...  # intersect.reference.sbic_neutral_pool
sbic_caps = ...  # intersect.reference.sbic_caps

# %%
assert corpus in ("indic", "western"), f"corpus must be indic or western, got {corpus!r}"
P = config.stage_params(globals(), f"intersect_reference@{corpus}")
R = P.intersect.reference
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
OUT = ROOT / "data/processed/intersect" / corpus
M = models.preflight([P.models.encoder, *needs_model(P.llm)], P.models)
seed_everything(P.common.seed)
llm = from_params(P.llm, device=P.common.device, model_dirs=M)
gen = gen_params(P.llm, P.common.seed)
print(f"LLM backend: {llm.backend} ({llm.model})")

# %%
if corpus == "indic":
    ref = reference.build_indi_reference(indibias.load(RAW), llm, gen, n_unbiased=R.indi_n_unbiased,
                                         seed=P.common.seed)
    paper = reference.PAPER_INDI
else:
    posts = sbic.load_dev_test(RAW)
    enc = Encoder(M[P.models.encoder], device=P.common.device, batch_size=P.common.batch_size)
    ref = reference.build_sbic_reference(posts, llm, gen, caps=R.sbic_caps, n_unbiased=R.sbic_n_unbiased,
                                         seed=P.common.seed, encoder=enc,
                                         max_offensive=R.sbic_unbiased_max_offensive,
                                         neutral_pool=R.sbic_neutral_pool)
    paper = reference.PAPER_SBIC
write_parquet(OUT / "reference.parquet", ref, index=False)
ref.sample(8, random_state=0)

# %% [markdown]
# Label distribution beside the paper's table (Table 2 for INDI-REFERENCE, Table 3 for SBIC-REFERENCE):

# %%
labels = reference.label_table(ref, paper)
write_csv(ROOT / f"reports/intersect/reference/{corpus}_labels.csv", labels)
labels
