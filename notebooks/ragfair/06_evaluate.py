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
# # ragfair — bias cards, Table 2 and the intrinsic–extrinsic correlation (paper §3.3, §4.2, §4.3)
#
# Every checkpoint of `ragfair.evaluate.checkpoints` (the frozen encoder, each trained recipe, and each with head
# masking) is measured on the *evaluation* templates of BBQ (never trained on):
#
# * intrinsic — SEAT on the 50 sent-bias / bias-bench tests, SEAT per BBQ category (`bbq_seat`), layer probing;
# * extrinsic — question → context retrieval with SPD, EOD and Acc@1 per category (`biaslab.ragfair.extrinsic`).
#
# Head masking (§3.4.1) ranks the heads of the checkpoint it is applied to by ∂|ES| / ∂m on the BBQ SEAT sets of
# `head_mask.seat_categories`, computed on *training* templates, and zeroes the top `fraction`.
# Table 2 lists SPD, EOD, Acc@1 and SEAT per checkpoint beside the paper's numbers (which come from a synthetic
# LLM-written evaluation set, so only directions are comparable); the minus-one ablations reuse the same rows; the
# correlation is Pearson / Spearman between the norms of per-category |ES| and SPD (or EOD) across checkpoints —
# z-scored per category as the paper does, and on raw magnitudes (`extrinsic.correlate` says why both) — with a
# 10-round bootstrap over question rows (§3.3.1).

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd

from biaslab import claims as cl
from biaslab import config, models
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style
from biaslab.ragfair import bbq_seat, cards, evaluation, findings, perturb
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
device = ...  # common.device
batch_size = ...  # common.batch_size
rounds = ...  # common.uncertainty.rounds
confidence = ...  # common.uncertainty.confidence
raw_dir = ...  # data.raw_dir
tests = ...  # ragfair.seat.tests
base_model = ...  # ragfair.train.base_model
runs = ...  # ragfair.train.runs
tau = ...  # ragfair.probing.tau
folds = ...  # ragfair.probing.folds
ridge_alphas = ...  # ragfair.probing.ridge_alphas
fraction = ...  # ragfair.head_mask.fraction
seat_categories = ...  # ragfair.head_mask.seat_categories
max_rows_per_category = ...  # ragfair.evaluate.max_rows_per_category
seat_n_samples = ...  # ragfair.evaluate.seat_n_samples
bootstrap_rounds = ...  # ragfair.evaluate.bootstrap_rounds
perturbation_rounds = ...  # ragfair.evaluate.perturbation_rounds
perturbation_cosine = ...  # ragfair.evaluate.perturbation_cosine
checkpoints = ...  # ragfair.evaluate.checkpoints
include_all_runs = ...  # ragfair.evaluate.include_all_runs
acc_drop_bound = ...  # ragfair.evaluate.acc_drop_bound
acc_at_1 = ...  # ragfair.evaluate.acc_at_1
acc_floor = ...  # ragfair.evaluate.acc_floor
acts = ...  # ragfair.evaluate.acts
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
exact_limit = ...  # ragfair.seat.exact_limit
e_max = ...  # ragfair.seat.e_max
alpha = ...  # ragfair.seat.alpha
shuffles = ...  # ragfair.probing.shuffles

# %%
P = config.stage_params(globals(), "ragfair_evaluate")
E, T, H = P.ragfair.evaluate, P.ragfair.train, P.ragfair.head_mask
ROOT = repo_root()
OUT = ROOT / "reports/ragfair/results"
M = models.preflight([T.base_model], P.models)
seed_everything(P.common.seed)
set_style()
bbq = pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet")
rows, seat_tests, card_args = cards.evaluation_setup(bbq, P, ROOT)
mask_sets = bbq_seat.seat_sets(bbq[(bbq["split"] == "train") & bbq["category"].isin(H.seat_categories)])
checkpoints = evaluation.checkpoint_list(E.checkpoints, T.runs, E.include_all_runs)
print(f"{len(rows)} evaluation rows over {rows['category'].nunique()} categories; "
      f"{len(seat_tests)} SEAT tests; {len(checkpoints)} checkpoints")

# %%
card_of, masked_heads, embed_of = evaluation.evaluate(
    checkpoints, base_dir=M[T.base_model], models_dir=ROOT / "data/models/ragfair", evaluation=rows,
    mask_sets=mask_sets, mask_fraction=H.fraction, seat_tests=seat_tests, device=P.common.device,
    batch_size=P.common.batch_size, card_args=card_args)

# %% [markdown]
# ## Bias cards — one row per checkpoint

# %%
card_table = evaluation.card_table(checkpoints, card_of, masked_heads)
per_category = evaluation.per_category(card_of)
write_csv(OUT / "bias_cards.csv", card_table)
write_csv(OUT / "bias_cards_per_category.csv", per_category)
write_json(OUT / "masked_heads.json", {k: [list(h) for h in v] for k, v in masked_heads.items()})
card_table.round(4)

# %% [markdown]
# ## Table 2 (ours beside the paper's; the paper's comes from its synthetic evaluation set)

# %%
table2 = evaluation.table2(card_table)
write_csv(OUT / "table2.csv", table2)
table2.round(4)

# %%
ablation = evaluation.ablation(card_table)
write_csv(OUT / "ablation_minus_one.csv", ablation)
ablation.round(4)

# %%
U = P.common.uncertainty
intervals = findings.intervals(card_of, rounds=U.rounds, confidence=U.confidence, seed=P.common.seed)
write_csv(OUT / "intervals.csv", intervals)
fig = evaluation.table2_figure(table2, intervals)
save_figure(fig, OUT / "table2.png")
plt.show()

# %% [markdown]
# ## Intrinsic vs extrinsic bias across checkpoints (§3.3.1)

# %% [markdown]
# Beyond the paper: the same measurements with every vector moved to cosine `perturbation_cosine` with itself
# (`perturb.perturbation_check`). A row bootstrap keeps each retrieval decision fixed; this asks whether the
# decisions — and the correlation built on them — survive a change as small as bf16 arithmetic makes.

# %%
perturbed, stability = perturb.perturbation_check(card_of, rows, embed_of, rounds=E.perturbation_rounds,
                                                  cosine=E.perturbation_cosine, seed=P.common.seed,
                                                  acc_at_1=E.acc_at_1)
write_csv(OUT / "perturbation.csv", stability)
fig = evaluation.perturbation_figure(stability, E.perturbation_rounds, E.perturbation_cosine)
save_figure(fig, OUT / "perturbation.png")
plt.show()
stability.round(4)

# %%
corr = evaluation.correlations(card_of, rows, embed_of, per_category, rounds=E.bootstrap_rounds, seed=P.common.seed,
                               perturbed=perturbed, perturbation_cosine=E.perturbation_cosine)
write_json(OUT / "correlation.json", corr)
print(json.dumps(corr, indent=1))

# %%
fig = evaluation.correlation_figure(evaluation.norm_points(per_category), corr)
save_figure(fig, OUT / "intrinsic_vs_extrinsic.png")
plt.show()

# %% [markdown]
# ## Competence and the paper's claims
# Every checkpoint's SPD, EOD and Acc@1 has a bootstrap interval over the evaluation rows (resampled within BBQ
# categories) and its paired difference from the frozen baseline on the same resamples (`intervals.csv`, the bars
# of the Table 2 figure). Then the competence check
# (the frozen encoder's Acc@1 at least `acc_floor` %: else every claim is untestable) and each claim of §4.1–4.3
# judged by magnitude against the paper's effect (`biaslab.claims.finalize`: Holm across the claims; docs/claims.md).

# %% [markdown]
# Beyond the paper, a check rather than a claim: does the fairness term act at all? The same LoRA recipe trained
# at an exaggerated α (`ragfair.evaluate.acts`) must lower L_fair on its training pairs and change retrieval against
# its α = 0 control; the two `check` rows of the claims table below.

# %%
acts = evaluation.acts(E.acts, T.runs, checkpoints=checkpoints, card_of=card_of, base_dir=M[T.base_model],
                       models_dir=ROOT / "data/models/ragfair", evaluation=rows, acc_at_1=E.acc_at_1,
                       device=P.common.device, batch_size=P.common.batch_size)
trend = pd.read_csv(ROOT / "reports/ragfair/diagnosis/depth_trend.csv")
table1 = pd.read_csv(ROOT / "reports/ragfair/diagnosis/table1_bbq_seat.csv")
claim_rows, competence = findings.paper_claims(card_of, corr, trend, table1, E, level=U.confidence,
                                               rounds=U.rounds, seed=P.common.seed, checks=acts)
write_csv(OUT / "competence.csv", competence)
display(competence)  # noqa: F821
claims = cl.write(OUT / "claims.csv", claim_rows)
claims

# %%
write_json(OUT / "metrics.json", evaluation.metrics(card_table, table2, corr, len(rows)) | {
    "claims": cl.summary(claims)})
