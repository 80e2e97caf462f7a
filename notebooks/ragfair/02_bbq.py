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
# # ragfair — the BBQ table (paper §3.1.2, §3.2, App. 6.2)
#
# The paper uses all nine single-axis BBQ categories. Six are released here; the others (Gender_identity — the
# category §3.2 diagnoses —, Race_ethnicity and SES) are regenerated from the released templates and vocabularies by
# `biaslab.ragfair.bbq_generate` (its docstring states the rules). To show the generator reproduces BBQ's structure,
# the categories in `check_categories` — which *are* released — are regenerated too and compared template by
# template with the released files. Templates are then split into training and evaluation templates per category
# (`eval_fraction`): debiasing trains on the former only, every bias measurement uses the latter.

# %%
from biaslab import config
from biaslab.io import write_csv, write_json, write_parquet
from biaslab.paths import repo_root, resolve
from biaslab.ragfair import bbq_build, bbq_generate
from biaslab.ragfair.pairs import split_templates

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
raw_dir = ...  # data.raw_dir
categories = ...  # ragfair.bbq.categories
regenerate_seed = ...  # ragfair.bbq.regenerate_seed
max_pairs = ...  # ragfair.bbq.max_pairs
check_categories = ...  # ragfair.bbq.check_categories
eval_fraction = ...  # ragfair.bbq.eval_fraction

# %%
P = config.stage_params(globals(), "ragfair_bbq")
B = P.ragfair.bbq
ROOT = repo_root()
RAW = resolve(P.data.raw_dir, ROOT)
OUT = ROOT / "reports/ragfair/bbq"
WORK = ROOT / "data/processed/ragfair/bbq_regenerated"

# %% [markdown]
# ## Does the generator reproduce a released category? (structure per template)

# %%
checks, per_template = bbq_generate.check_categories(B.check_categories, WORK / "check", RAW, seed=B.regenerate_seed,
                                                    max_pairs=B.max_pairs)
write_csv(OUT / "generator_check.csv", checks)
write_csv(OUT / "generator_check_per_template.csv", per_template)
failed = [c for c in checks.columns if checks[c].dtype == bool and not checks[c].all()]
assert not failed, f"the regenerated categories differ from the released ones in: {failed}"
checks

# %% [markdown]
# ## The table every ragfair stage reads

# %%
bbq = bbq_build.build(B.categories, RAW, WORK, seed=B.regenerate_seed, max_pairs=B.max_pairs)
bbq["split"] = split_templates(bbq, B.eval_fraction, seed=P.common.seed)
write_parquet(ROOT / "data/processed/ragfair/bbq.parquet", bbq, index=False)
coverage = bbq_build.coverage(bbq)
write_csv(OUT / "coverage.csv", coverage)
write_json(OUT / "summary.json", {"rows": len(bbq), "categories": int(bbq["category"].nunique()),
                                  "regenerated": sorted(bbq.loc[bbq["source"] == "regenerated", "category"].unique())})
coverage
