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
# # Bias cards across papers
#
# One row per checkpoint the pipeline trains — ragfair's fairness fine-tunes, intersect's bias retrievers,
# ragcontrol's reverse-biased embedders, fairrank's rankers, cscl's classifiers — and the base encoder, each
# measured the same way by the function of the paper that owns the measure (`biaslab.cards.measure`): SEAT,
# BBQ-SEAT and layer probing (ragfair §3.3), BBQ retrieval SPD / EOD / Acc@1 (ragfair §3.3.2), embedder bias on
# GenderBias-QA / PoliticBias-QA (ragcontrol §3), ARaB / NFaiRR / MRR@10 as a re-ranker of TREC DL19 (fairrank
# §4), ΔEO (cscl §4). The question no single paper asks: does a mitigation from one paper lower the bias another
# paper measures?

# %%
from functools import partial

import pandas as pd

from biaslab import config
from biaslab.cards import changes as bias_changes
from biaslab.cards import load as card_load
from biaslab.cards import measure
from biaslab.io import write_csv
from biaslab.paths import repo_root
from biaslab.plots import save_figure, set_style
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
seed = ...  # common.seed
rounds = ...  # common.uncertainty.rounds
confidence = ...  # common.uncertainty.confidence
device = ...  # common.device
batch_size = ...  # common.batch_size
raw_dir = ...  # data.raw_dir
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs
tests = ...  # ragfair.seat.tests
exact_limit = ...  # ragfair.seat.exact_limit
e_max = ...  # ragfair.seat.e_max
alpha = ...  # ragfair.seat.alpha
tau = ...  # ragfair.probing.tau
folds = ...  # ragfair.probing.folds
ridge_alphas = ...  # ragfair.probing.ridge_alphas
shuffles = ...  # ragfair.probing.shuffles
max_rows_per_category = ...  # ragfair.evaluate.max_rows_per_category
seat_n_samples = ...  # ragfair.evaluate.seat_n_samples
perturbation_rounds = ...  # ragfair.evaluate.perturbation_rounds
perturbation_cosine = ...  # ragfair.evaluate.perturbation_cosine
acc_at_1 = ...  # ragfair.evaluate.acc_at_1
relevance = ...  # fairrank.data.relevance
rerank_depth = ...  # fairrank.data.rerank_depth
cutoffs = ...  # fairrank.eval.cutoffs
mrr_cutoff = ...  # fairrank.eval.mrr_cutoff
base_models = ...  # cards.base_models
papers = ...  # cards.papers
embedder_tasks = ...  # cards.embedder_tasks
rank_query_set = ...  # cards.rank_query_set
rank_measures = ...  # cards.rank_measures
moved_top = ...  # cards.moved_top
max_seq_length = ...  # cards.max_seq_length
permutation_rounds = ...  # cards.permutation_rounds
p_adjust = ...  # cards.p_adjust

# %%
P = config.stage_params(globals(), "cards")
C, U = P.cards, P.common.uncertainty
ROOT = repo_root()
OUT = ROOT / "reports/cards"
seed_everything(P.common.seed)
set_style()
probes = card_load.load_probes(ROOT, P)
checkpoints = measure.encoder_checkpoints(ROOT, C.base_models, C.papers)
print(f"{len(checkpoints)} encoders; {len(probes.bbq_rows)} BBQ rows, {len(probes.seat_tests)} SEAT tests, "
      f"{sum(len(t) for t, _ in probes.embedder_tasks.values())} embedder-bias questions, "
      f"{len(probes.rank_args['qids'])} ranking queries")

# %%
load = partial(card_load.load_encoder, root=ROOT, models_settings=P.models, device=P.common.device,
               batch_size=P.common.batch_size, max_seq_length=C.max_seq_length)
encoder_rows, units = measure.checkpoint_cards(checkpoints, probes, load)
per_query = pd.read_csv(ROOT / "reports/fairrank/results/per_query.csv", dtype={"qid": str})
rankers = measure.ranker_rows(per_query, C.rank_query_set, C.rank_measures)
units.append(measure.ranker_units(per_query, C.rank_query_set, C.rank_measures))
classifiers = measure.classifier_rows(pd.read_csv(ROOT / "reports/cscl/results/methods.csv"))
cards = measure.table(encoder_rows, [rankers, classifiers])
write_csv(OUT / "cards.csv", cards)
cards.drop(columns=["source", "mitigation", "not_measured"]).round(3)

# %% [markdown]
# ## Which mitigation moved which measure
#
# Change in bias against each row's reference (encoders: the base encoder; fairrank's rankers: its base ranker;
# cscl's classifiers: CE on the same task); negative = less biased, in the measure's own units. The re-ranking
# measures (means over the DL19 fairness queries) and embedder bias (a mean over test questions) get a paired
# bootstrap interval over the same queries / questions (`ci_low`, `ci_high`) and a paired randomisation test
# (`p_value`); the table's tests are adjusted as one family (`q_value`, `significant` at the false discovery rate
# 1 − confidence), since with one test per change about one in twenty unchanged measures would look moved by
# chance. BBQ SPD / EOD carry a noise band instead — their range when every vector is moved by ragfair's
# perturbation noise (`spd_min` … `eod_max` in cards.csv) — because a top-1 retrieval among BBQ's templated
# contexts flips on cosine differences of 1e-5: a change whose band overlaps the reference's is marked
# `beyond_noise = False`. SEAT, probing and ΔEO changes are point estimates (the papers' own stages carry their
# intervals). A change inside its band, with an interval that includes 0, or not significant after the adjustment
# is not counted as a movement.

# %%
changes = bias_changes.bias_change(cards, C.base_models[0], pd.concat(units, ignore_index=True), rounds=U.rounds,
                                   confidence=U.confidence, seed=P.common.seed, test_rounds=C.permutation_rounds,
                                   p_adjust=C.p_adjust)
tested = changes["p_value"].notna()
print(f"{int(tested.sum())} changes tested; {int((tested & (changes['p_value'] <= 1 - U.confidence)).sum())} with "
      f"p <= {1 - U.confidence:.2f}, {int(changes['significant'].eq(True).sum())} significant after the {C.p_adjust} "
      "adjustment")
top = bias_changes.moved(changes, C.moved_top)
write_csv(OUT / "bias_change.csv", changes)
write_csv(OUT / "moved.csv", top)
top.round(3)

# %%
fig = bias_changes.heatmap_figure(changes, U.confidence)
save_figure(fig, OUT / "heatmap.png")
