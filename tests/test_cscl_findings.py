"""cscl claims from synthetic predictions: a fair method is called fairer, a tie is inconclusive."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from biaslab.cscl import findings


def preds(task="t", n=300, seeds=(0, 1, 2)):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 2, n)
    frames = []
    for s in seeds:
        noise = np.random.default_rng(s).random(n)
        fair = np.where(noise < 0.85, y, 1 - y)  # the same error rate in both groups
        unfair = np.where((a == 1) & (y == 0) & (noise < 0.6), 1, fair)  # false positives for group 1
        for method, value, pred in (("ce", None, unfair), ("two_stage", 0.0, unfair), ("two_stage", 5.0, fair),
                                    ("adv", 1.0, unfair)):
            frames.append(pd.DataFrame({"task": task, "method": method, "value": value, "seed": s, "row": range(n),
                                        "y": y, "a": a, "pred": pred}))
    return pd.concat(frames, ignore_index=True)


METHODS = {"ce": SimpleNamespace(mode="ce"), "two_stage": SimpleNamespace(mode="contrastive"),
           "adv": SimpleNamespace(mode="adversarial")}


def test_claims_call_the_fairer_setting_fairer():
    got = {c.claim: c for c in findings.claims(preds(), METHODS, f1_bound=0.05, rounds=200, confidence=0.95, seed=0)}
    assert got["t: two_stage with λ = 5 lowers ΔEO vs λ = 0"].verdict == "reproduced"
    assert got["t: two-stage CL (two_stage, λ = 5) has a lower ΔEO than CE"].verdict == "reproduced"
    assert got["t: two-stage CL (λ = 5) has a lower ΔEO than adv (λ_adv = 1)"].verdict == "reproduced"
    assert got["t: two_stage with λ = 5 keeps F1 (vs λ = 0)"].verdict in ("reproduced", "inconclusive", "contradicted")


def test_identical_settings_are_never_called_different():
    p = preds()
    p.loc[p["method"] == "two_stage", "pred"] = p.loc[(p["method"] == "ce")].set_index(["seed", "row"]).loc[
        list(zip(p.loc[p["method"] == "two_stage", "seed"], p.loc[p["method"] == "two_stage", "row"], strict=True)),
        "pred"].to_numpy()
    got = {c.claim: c for c in findings.claims(p, METHODS, f1_bound=0.05, rounds=200, confidence=0.95, seed=0)}
    same = got["t: two_stage with λ = 5 lowers ΔEO vs λ = 0"]
    assert same.our_value == 0 and same.verdict == "inconclusive"


def test_summary_is_mean_and_std_over_seeds():
    res = pd.DataFrame({"task": "t", "method": "ce", "mode": "ce", "value": None, "seed": [0, 1, 2],
                        "f1": [0.5, 0.6, 0.7], "accuracy": 0.5, "tpr_gap": 0.1, "fpr_gap": 0.2, "eo_gap": [0.3, 0.3, 0.6]})
    s = findings.summary(res).iloc[0]
    assert s["f1_mean"] == 0.6 and abs(s["f1_std"] - 0.1) < 1e-12 and s["seeds"] == 3 and np.isnan(s["value"])
