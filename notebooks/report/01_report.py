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
# # The reproduction report
#
# One page over every paper: the scale it ran at, its claims with the verdicts its analysis computed, and each of
# the paper's tables and figures beside the files that regenerate it (`reports/paper_values/<paper>.yaml`). Writes
# `reports/index.html` (CSV previews, figures linked relatively) and `reports/README.md`. Every number comes from a
# stage's output (`biaslab.report` collects, `biaslab.render` writes the pages).

# %%
import yaml
from IPython.display import Markdown

from biaslab import config, render, stages
from biaslab.io import write_text
from biaslab.paths import repo_root

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
papers = ...  # report.papers

# %%
P = config.stage_params(globals(), "report")
ROOT = repo_root()
# The scale column compares the whole of params.yaml with the paper-scale file: both are read as data here (the
# stage lists both files as dependencies).
params_now = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
paper_scale = yaml.safe_load((ROOT / "configs/paper-scale.yaml").read_text(encoding="utf-8"))
# dvc.yaml names the stage (and so the executed notebook) behind every output: each table and figure links to it.
# DVC cannot list dvc.yaml as a dependency; a link that goes stale fails the report's browser test.
readme, page = render.build(ROOT / "reports", P.report.papers, params_now, paper_scale, stages.made_by(ROOT))
write_text(ROOT / "reports/README.md", readme)
write_text(ROOT / "reports/index.html", page)
Markdown(readme)
