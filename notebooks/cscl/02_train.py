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
# # cscl — every method at every trade-off value, one seed (Chi et al. 2022, §4.2, App. B.2, Tables 3–5)
#
# One run per seed of `cscl.seeds` (the paper reports mean ± std over five). For each task: CE; two-stage CL
# (L_sup + λ·L_CS-InfoNCE on two EDA views, then the MLP head on the frozen encoder); one-stage CL
# ((1 − γ)·CE + γ·L_sup + λ·L_CS-InfoNCE); adversarial training (y-conditioned discriminator, gradient reversal)
# and diverse adversaries; INLP by class on the CE encoder of the same seed. Test predictions are kept per example
# so the analysis can put bootstrap intervals on every number. With `cscl.train.trainable_layers` below the
# encoder's depth only the top layers train, on the frozen states the data stage saved.

# %%
import pandas as pd

from biaslab import config, models
from biaslab.cscl import experiment
from biaslab.cscl import train as ct
from biaslab.io import write_csv, write_parquet
from biaslab.paths import repo_root

# %% tags=["parameters"]
run_seed = 0  # the member this notebook runs (one of cscl.seeds)
# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill
# -p or with `biaslab run STAGE --set name=value` to override it.
device = ...  # common.device
tasks = ...  # cscl.tasks
backbone = ...  # cscl.backbone
batch_size = ...  # cscl.train.batch_size
pretrain_batch_size = ...  # cscl.train.pretrain_batch_size
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
class_weight = ...  # cscl.train.class_weight
methods = ...  # cscl.methods
allow_downloads = ...  # models.allow_downloads
encoder = ...  # models.encoder
local_dirs = ...  # models.local_dirs

# %%
P = config.stage_params(globals(), f"cscl_train@{run_seed}")
run_seed = int(run_seed)
C = P.cscl
ROOT = repo_root()
DATA = ROOT / "data/processed/cscl"
TASKS = DATA / "tasks"
M = models.preflight([C.backbone], P.models)
order = list(C.methods)
if any(m.mode == "inlp" for m in C.methods.values()):
    ce = [n for n in order if C.methods[n].mode == "ce"]
    if not ce:
        raise ValueError("cscl.methods: INLP starts from a CE encoder; add a method with mode: ce")
    order = ce + [n for n in order if n not in ce]  # the CE encoder first, so INLP can reuse it

# %%
results, predictions, features = [], [], {}
for task in C.tasks:
    rows = pd.read_parquet(TASKS / task / "rows.parquet")
    views = pd.read_parquet(TASKS / task / "views.parquet").set_index("text")["views"]
    bank = ct.StateBank.load(TASKS / task / "states.npz")
    if bank.n_frozen != ct.frozen_count(M[C.backbone], C.train.trainable_layers):
        raise ValueError(f"{TASKS / task / 'states.npz'} holds {bank.n_frozen} frozen layers, cscl.train."
                         "trainable_layers asks for another number: rerun the cscl_data stage")
    test = rows[rows["split"] == "test"].reset_index(drop=True)
    ce_features = None
    for name in order:
        method = C.methods[name]
        if method.mode == "inlp":  # one INLP run serves every value of the grid
            inlp = experiment.run_inlp(method, rows, ce_features, train=C.train, seed=run_seed)
        for value in ([None] if method.mode == "ce" else method.grid):
            if method.mode == "inlp":
                res = inlp[value]
            else:
                res = experiment.run_method(method, value, rows, views, bank=bank, encoder_dir=M[C.backbone],
                                            train=C.train, seed=run_seed, device=P.common.device)
                if method.mode == "ce":
                    ce_features = res["features"]
            s = res["scores"]
            results.append({"task": task, "method": name, "mode": method.mode, "value": value, "seed": run_seed,
                            **{k: s[k] for k in ("f1", "macro_f1", "accuracy", "tpr_gap", "fpr_gap", "eo_gap", "n")},
                            "top_pred_share": experiment.top_prediction_share(res["pred"])})
            predictions.append(test[["y", "a"]].assign(task=task, method=name, value=value, seed=run_seed,
                                                       row=range(len(test)), pred=res["pred"]))
            features[f"{task}|{name}|{value}"] = res["test_features"].astype("float32")
            print(f"{task} {name} {value}: F1 {s['f1']:.3f}, ΔEO {s['eo_gap']:.3f}")

table = pd.DataFrame(results)
write_csv(ROOT / f"reports/cscl/train/seed{run_seed}.csv", table)
write_parquet(DATA / "predictions" / f"seed{run_seed}.parquet", pd.concat(predictions, ignore_index=True), index=False)
experiment.save_features(DATA / "features" / f"seed{run_seed}.npz", features)  # test-set features per setting (embedding plots)
table
