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
# # Fetch the public data sets
#
# Puts every data set the pipeline reads under `data/raw/<dataset>/`: from the local mirror named by the
# environment variable `BIASLAB_DATA_MIRROR` when it is set, otherwise from each data set's official
# location (a pinned commit of its public repository). Every file is checked against the size and SHA-256
# recorded in `lib/biaslab/data/manifest.json`, then every data set is read once by its reader so schema
# problems surface here. Nothing under `data/` is committed; DVC tracks it.

# %%
import pandas as pd

from biaslab import config
from biaslab.data.fetch import fetch, load_manifest, mirror_from_env
from biaslab.io import write_csv
from biaslab.paths import repo_root, resolve

# %% tags=["parameters"]
raw_dir = "data/raw"
allow_online = True
datasets = [
    "seat",
    "indibias",
    "sbic",
    "bbq",
    "twinviews_13k",
    "debiasing_rag_kim2025",
    "genderbias_ir_rekabsaz2020",
    "msmarco_fair_queries_rekabsaz2021",
    "grep_biasir",
    "trec_fair_2022",
    "wikitext2_valid_test",
    "trecdl_passage_bm25_top100_text",
]

# %%
P = config.notebook_params(globals(), stage="fetch")
ROOT = repo_root()
mirror = mirror_from_env()
print("source:", "local mirror (BIASLAB_DATA_MIRROR)" if mirror else "official locations (online)")

# %%
rows, counts = fetch(list(P.data.datasets), resolve(P.data.raw_dir, ROOT), mirror=mirror,
                     allow_online=P.data.allow_online)
files = pd.DataFrame(rows)
files.groupby("dataset").agg(files=("file", "size"), megabytes=("bytes", lambda b: round(b.sum() / 1e6, 2)))

# %% [markdown]
# Records read from each data set by its reader (schema-checked):

# %%
manifest = load_manifest()
summary = pd.DataFrame(
    [
        {"dataset": ds, "origin": manifest[ds]["origin"], "license": manifest[ds]["license"],
         "records": "; ".join(f"{k}: {v}" for k, v in c.items())}
        for ds, c in counts.items()
    ]
)
write_csv(ROOT / "reports/data/datasets.csv", summary)
summary
