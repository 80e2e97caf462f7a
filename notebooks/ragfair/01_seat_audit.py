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
# # ragfair — SEAT audit of the encoder (paper §3.2.1)
#
# The Sentence Encoder Association Test (May et al., 2019) on every SEAT/WEAT test in the data: the
# association s(w, A, B) (eq. 1), the effect size (eq. 2, sample standard deviation as in the reference
# code), a one-sided permutation p-value (exact when C(|X|+|Y|, |X|) ≤ `exact_limit`, else `n_samples`
# random partitions) and the paper's fairness score 1 − |ES| / E_max with E_max = 2 (eq. 3).
# Embeddings use the model's own sentence-transformers pooling (mean pooling + normalisation for
# all-MiniLM-L6-v2).
#
# The paper applies SEAT to target/attribute groups that an LLM (DeepSeek-Chat) extracted from BBQ rows
# (its Table 1); that construction belongs to the ragfair reproduction proper. Here the encoder is audited on
# the standard tests of May et al. and bias-bench, which is the foundation every later ragfair stage reuses.

# %%
import matplotlib.pyplot as plt

from biaslab import config, models
from biaslab.data import seat as seat_data
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root, resolve
from biaslab.plots import save_figure, set_style
from biaslab.ragfair.seat_audit import plot_effect_sizes, run_seat_tests, summarise
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
model = ...  # ragfair.seat.model
tests = ...  # ragfair.seat.tests
n_samples = ...  # ragfair.seat.n_samples
exact_limit = ...  # ragfair.seat.exact_limit
e_max = ...  # ragfair.seat.e_max
alpha = ...  # ragfair.seat.alpha
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "ragfair_seat")
S = P.ragfair.seat
ROOT = repo_root()
OUT = ROOT / "reports/ragfair/seat"
M = models.preflight([S.model], P.models)
seed_everything(P.common.seed)
set_style()

# %%
seat_tests = seat_data.load_tests(list(S.tests), resolve(P.data.raw_dir, ROOT))
encoder = Encoder(M[S.model], device=P.common.device, batch_size=P.common.batch_size)
print(f"{len(seat_tests)} SEAT tests; encoder {S.model} ({encoder.dim}-d)")

# %%
table = run_seat_tests(seat_tests, encoder, n_samples=S.n_samples, exact_limit=S.exact_limit, e_max=S.e_max,
                       alpha=S.alpha, seed=P.common.seed)
write_csv(OUT / "seat_results.csv", table)
table[["test", "X", "Y", "A", "B", "effect_size", "p_value", "p_method", "fairness_score"]].round(4)

# %% [markdown]
# ## Headline numbers
# Mean fairness score and the number of tests with p < α, over all tests and by level (word vs. sentence
# templates). The paper reports an average fairness of 0.543 over its BBQ-derived groups (Table 1), which are
# not the tests audited here; the number is shown for orientation only.

# %%
metrics = {"model": S.model, "e_max": S.e_max, "alpha": S.alpha, **summarise(table)}
write_json(OUT / "metrics.json", metrics)
metrics

# %%
fig = plot_effect_sizes(table, model=S.model, alpha=S.alpha, e_max=S.e_max)
save_figure(fig, OUT / "effect_sizes.png")
plt.show()
