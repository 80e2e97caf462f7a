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
from biaslab.data.fetch import dataset_rows, fetch, mirror_from_env
from biaslab.io import write_csv
from biaslab.paths import repo_root, resolve

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
raw_dir = ...  # data.raw_dir
datasets = ...  # data.datasets
allow_online = ...  # data.allow_online

# %%
P = config.stage_params(globals(), "fetch")
ROOT = repo_root()
mirror = mirror_from_env()
print("source:", "local mirror (BIASLAB_DATA_MIRROR)" if mirror else "official locations (online)")

# %%
rows, counts = fetch(list(P.data.datasets), resolve(P.data.raw_dir, ROOT), mirror=mirror,
                     allow_online=P.data.allow_online)
files = pd.DataFrame(rows)
files["megabytes"] = files["bytes"] / 1e6
files.groupby("dataset").agg(files=("file", "size"), megabytes=("megabytes", "sum")).round(2)

# %% [markdown]
# Records read from each data set by its reader (schema-checked):

# %%
summary = pd.DataFrame(dataset_rows(counts))
write_csv(ROOT / "reports/data/datasets.csv", summary)
summary
