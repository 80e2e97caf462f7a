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
# # cscl — is two-stage CL sensitive to its hyper-parameters? (Chi et al. 2022, §4.2 RQ3, Fig. 4)
#
# Two-stage CL at λ = 0 and λ = 5 with one hyper-parameter varied at a time around the default setting: the
# temperature τ and the pre-training batch size (batches above `cscl.sensitivity.cache_chunk` examples are
# encoded under gradient caching — the same loss and gradient in chunks, as the paper trains its 256-example
# batches). The default setting is not retrained: its runs are the main training stage's. The analysis stage
# turns these predictions into the figure and the RQ3 claims. The augmentation axis (EDA, back-translation,
# contextual-LM insert / substitute) is not varied: only EDA is available offline.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.cscl import experiment
from biaslab.cscl import train as ct
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
device = ...  # common.device
tasks = ...  # cscl.tasks
seeds = ...  # cscl.seeds
backbone = ...  # cscl.backbone
batch_size = ...  # cscl.train.batch_size
learning_rate = ...  # cscl.train.learning_rate
epochs = ...  # cscl.train.epochs
pretrain_epochs = ...  # cscl.train.pretrain_epochs
patience = ...  # cscl.train.patience
head_hidden = ...  # cscl.train.head_hidden
head_epochs = ...  # cscl.train.head_epochs
head_learning_rate = ...  # cscl.train.head_learning_rate
max_length = ...  # cscl.train.max_length
trainable_layers = ...  # cscl.train.trainable_layers
grad_cache_chunk = ...  # cscl.train.grad_cache_chunk
methods = ...  # cscl.methods
task = ...  # cscl.sensitivity.task
method = ...  # cscl.sensitivity.method
lambdas = ...  # cscl.sensitivity.lambdas
temperatures = ...  # cscl.sensitivity.temperatures
batch_sizes = ...  # cscl.sensitivity.batch_sizes
cache_chunk = ...  # cscl.sensitivity.cache_chunk
seed_subset = ...  # cscl.sensitivity.seed_subset
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), "cscl_sensitivity")
C, S = P.cscl, P.cscl.sensitivity
ROOT = repo_root()
TASK = ROOT / "data/processed/cscl/tasks" / S.task
M = models.preflight([C.backbone], P.models)
method = C.methods[S.method]
variants = experiment.sensitivity_variants(method, C.train, temperatures=S.temperatures, batch_sizes=S.batch_sizes,
                                           grad_cache_chunk=S.cache_chunk)
rows = pd.read_parquet(TASK / "rows.parquet")
views = pd.read_parquet(TASK / "views.parquet").set_index("text")["views"]
bank = ct.StateBank.load(TASK / "states.npz")
if bank.n_frozen != ct.frozen_count(M[C.backbone], C.train.trainable_layers):
    raise ValueError(f"{TASK / 'states.npz'} holds {bank.n_frozen} frozen layers, cscl.train.trainable_layers asks "
                     "for another number: rerun the cscl_data stage")
test = rows[rows["split"] == "test"].reset_index(drop=True)
pd.DataFrame([{"variant": label, "temperature": m.temperature, "batch_size": t.batch_size,
               "grad_cache_chunk": t.grad_cache_chunk} for label, m, t in variants])

# %%
results, predictions = [], []
for seed in S.seed_subset:
    for label, m, t in variants:
        for lam in S.lambdas:
            res = experiment.run_method(m, lam, rows, views, bank=bank, encoder_dir=M[C.backbone], train=t, seed=seed,
                                        device=P.common.device)
            s = res["scores"]
            results.append({"task": S.task, "method": S.method, "variant": label, "value": lam, "seed": seed,
                            **{k: s[k] for k in ("f1", "macro_f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap", "n")},
                            "top_pred_share": experiment.top_prediction_share(res["pred"]),
                            "epochs_run": res["log"]["epochs_run"]})
            predictions.append(test[["y", "a"]].assign(task=S.task, method=S.method, variant=label, value=lam,
                                                       seed=seed, row=range(len(test)), pred=res["pred"]))
            print(f"{label} λ={lam:g} seed {seed}: F1 {s['f1']:.3f}, ΔEO {s['eo_gap']:.3f}")

table = pd.DataFrame(results)
write_csv(ROOT / "reports/cscl/train/sensitivity.csv", table)
write_parquet(ROOT / "data/processed/cscl/sensitivity/predictions.parquet", pd.concat(predictions, ignore_index=True),
              index=False)
table
