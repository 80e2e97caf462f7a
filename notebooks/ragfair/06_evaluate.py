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
import numpy as np
import pandas as pd
import seaborn as sns

from biaslab import config, models
from biaslab.data import seat as seat_data
from biaslab.embed import Encoder
from biaslab.io import write_csv, write_json
from biaslab.paths import repo_root, resolve
from biaslab.plots import save_figure, set_style
from biaslab.ragfair import bbq_build, bbq_seat, cards, debias, extrinsic, paper
from biaslab.runtime import seed_everything

# %% tags=["parameters"]
seed = 42
device = "auto"
batch_size = 64
raw_dir = "data/raw"
base_model = "minilm"
tau = 0.05
folds = 5
ridge_alphas = [0.1, 1.0, 10.0, 100.0]
fraction = 0.1
seat_categories = ["Gender_identity"]
max_rows_per_category = 80
seat_n_samples = 2000
bootstrap_rounds = 10
tests = []
checkpoints = [{"name": "Baseline (frozen encoder)", "mask": False},
               {"name": "LoRA-only", "run": "lora", "mask": False},
               {"name": "WiSE-FT", "run": "wiseft", "mask": False},
               {"name": "Head masking", "mask": True},
               {"name": "LoRA + masking", "run": "lora", "mask": True},
               {"name": "WiSE-FT + masking", "run": "wiseft", "mask": True},
               {"name": "LoRA + WiSE-FT", "run": "lora_wiseft", "mask": False},
               {"name": "Full framework", "run": "lora_wiseft", "mask": True},
               {"name": "Full without fairness (alpha=0)", "run": "lora_wiseft_a0", "mask": True}]
include_all_runs = False
runs = {"lora": {"lora": True, "wiseft": False, "alpha": 1.0}, "wiseft": {"lora": False, "wiseft": True, "alpha": 1.0},
        "lora_wiseft": {"lora": True, "wiseft": True, "alpha": 1.0},
        "lora_wiseft_a0": {"lora": True, "wiseft": True, "alpha": 0.0}}

# %%
P = config.notebook_params(globals(), stage="ragfair_evaluate")
E, T, H, PR = P.ragfair.evaluate, P.ragfair.train, P.ragfair.head_mask, P.ragfair.probing
ROOT = repo_root()
OUT = ROOT / "reports/ragfair/results"
models.preflight([T.base_model])
seed_everything(P.common.seed)
set_style()
bbq = pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet")
evaluation = bbq_build.sample(bbq[bbq["split"] == "eval"], E.max_rows_per_category, seed=P.common.seed)
mask_sets = bbq_seat.seat_sets(bbq[(bbq["split"] == "train") & bbq["category"].isin(H.seat_categories)])
seat_tests = seat_data.load_tests(P.ragfair.seat.tests or None, resolve(P.data.raw_dir, ROOT))
listed = {(c.run, c.mask) for c in E.checkpoints}
extra = [config.RagfairCheckpoint(name=r, run=r) for r in T.runs if E.include_all_runs and (r, False) not in listed]
checkpoint_list = [*E.checkpoints, *extra]
print(f"{len(evaluation)} evaluation rows over {evaluation['category'].nunique()} categories; "
      f"{len(seat_tests)} SEAT tests; {len(checkpoint_list)} checkpoints")

# %%
card_of, masked_heads, embed_of = {}, {}, {}
seat_texts = list(dict.fromkeys(t for s in bbq_seat.seat_sets(evaluation) for t in s.texts()))
for ck in checkpoint_list:
    model = cards.load_checkpoint(ck.run, T.base_model, ROOT / "data/models/ragfair", P.common.device)
    if ck.mask:
        importance = debias.head_importance(model, mask_sets)
        heads = debias.heads_to_mask(importance, H.fraction)
        debias.apply_head_mask(model, heads)
        masked_heads[ck.name] = heads
    enc = Encoder(model, batch_size=P.common.batch_size)
    card_of[ck.name] = cards.bias_card(enc, evaluation, seat_tests=seat_tests, seat_n_samples=E.seat_n_samples,
                                       tau=PR.tau, folds=PR.folds, alphas=PR.ridge_alphas, seed=P.common.seed)
    embed_of[ck.name] = dict(zip(seat_texts, enc.encode(seat_texts), strict=True))
    print(f"{ck.name}: {json.dumps({k: round(v, 4) for k, v in card_of[ck.name].summary.items()})}")

# %% [markdown]
# ## Bias cards — one row per checkpoint

# %%
card_table = pd.DataFrame([{"checkpoint": ck.name, "run": ck.run or "(base)", "mask": ck.mask,
                            "heads_masked": len(masked_heads.get(ck.name, [])), **card_of[ck.name].summary}
                           for ck in checkpoint_list])
per_category = pd.concat([c.per_category.assign(checkpoint=n) for n, c in card_of.items()], ignore_index=True)
write_csv(OUT / "bias_cards.csv", card_table)
write_csv(OUT / "bias_cards_per_category.csv", per_category)
write_json(OUT / "masked_heads.json", {k: [list(h) for h in v] for k, v in masked_heads.items()})
card_table.round(4)

# %% [markdown]
# ## Table 2 (ours beside the paper's; the paper's comes from its synthetic evaluation set)

# %%
table2 = card_table[["checkpoint", "spd", "eod", "acc_at_1", "bbq_seat_abs_es", "seat_fairness"]].copy()
for i, col in enumerate(("paper_spd", "paper_eod", "paper_acc_at_1")):
    table2[col] = table2["checkpoint"].map(lambda n, i=i: paper.TABLE2.get(n, (np.nan,) * 3)[i])
write_csv(OUT / "table2.csv", table2)
table2.round(4)

# %%
full = "Full framework"
ablation_rows = {"Full framework": full, "− fairness term (α = 0)": "Full without fairness (alpha=0)",
                 "− LoRA": "WiSE-FT + masking", "− WiSE-FT": "LoRA + masking", "− head masking": "LoRA + WiSE-FT"}
names = set(card_table["checkpoint"])
ablation = pd.DataFrame([{"ablation": a, "checkpoint": c, **card_table.set_index("checkpoint").loc[
    c, ["spd", "eod", "acc_at_1", "bbq_seat_abs_es"]].to_dict()} for a, c in ablation_rows.items() if c in names])
write_csv(OUT / "ablation_minus_one.csv", ablation)
ablation.round(4)

# %%
long = table2.melt(id_vars="checkpoint", value_vars=["spd", "eod"], var_name="metric", value_name="gap")
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
sns.barplot(data=long, y="checkpoint", x="gap", hue="metric", ax=axes[0])
axes[0].set(xlabel="group gap (0 = fair)", ylabel="")
sns.barplot(data=table2, y="checkpoint", x="acc_at_1", ax=axes[1], color="grey")
axes[1].set(xlabel="Acc@1 (%)", ylabel="", yticklabels=[])
fig.suptitle("Reproduces the paper's Table 2: fairness (SPD, EOD) and utility (Acc@1) per debiasing recipe")
save_figure(fig, OUT / "table2.png")
plt.show()

# %% [markdown]
# ## Intrinsic vs extrinsic bias across checkpoints (§3.3.1)

# %%
intr = per_category[["checkpoint", "category", "bbq_seat_abs_es"]]
extr = per_category[["checkpoint", "category", "spd", "eod"]]
rng = np.random.default_rng(P.common.seed)
boot = [cards.bootstrap_frames(card_of, evaluation, embed_of, rng) for _ in range(E.bootstrap_rounds)]
# the paper's protocol (z-scored per category) and the same on raw magnitudes
corr = {f"{ext}{suffix}": extrinsic.correlate(intr, extr, value_int="bbq_seat_abs_es", value_ext=ext, boot=boot,
                                              zscore=z)
        for ext in ("spd", "eod") for suffix, z in (("", True), ("_raw", False))}
corr["paper_ci"] = paper.CORRELATION_CI
write_json(OUT / "correlation.json", corr)
print(json.dumps(corr, indent=1))

# %%
def znorm(df, col):
    wide = df.pivot_table(index="checkpoint", columns="category", values=col)
    z = (wide - wide.mean()) / wide.std(ddof=0).replace(0, np.nan)
    return np.sqrt((z.fillna(0.0) ** 2).sum(axis=1))


pts = pd.DataFrame({"‖SEAT ES‖ (z)": znorm(intr, "bbq_seat_abs_es"), "‖SPD‖ (z)": znorm(extr, "spd"),
                    "‖EOD‖ (z)": znorm(extr, "eod")})
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, ext in zip(axes, ("‖SPD‖ (z)", "‖EOD‖ (z)"), strict=True):
    sns.regplot(data=pts, x="‖SEAT ES‖ (z)", y=ext, ax=ax, ci=None)
    key = "spd" if "SPD" in ext else "eod"
    ax.set_title(f"Pearson r = {corr[key]['pearson_r']:.2f}, Spearman ρ = {corr[key]['spearman_rho']:.2f}")
fig.suptitle("Reproduces the paper's §4.2 analysis: intrinsic vs extrinsic bias across encoder checkpoints")
save_figure(fig, OUT / "intrinsic_vs_extrinsic.png")
plt.show()

# %%
metrics = {"checkpoints": len(card_table), "evaluation_rows": len(evaluation),
           "table2": table2.set_index("checkpoint")[["spd", "eod", "acc_at_1", "bbq_seat_abs_es"]].round(4)
           .to_dict(orient="index"),
           "correlation": {k: {m: corr[k][m] for m in ("pearson_r", "spearman_rho", "pearson_ci", "spearman_ci")
                               if m in corr[k]} for k in ("spd", "eod", "spd_raw", "eod_raw")}}
write_json(OUT / "metrics.json", metrics)
