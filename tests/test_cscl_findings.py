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
                                    ("one_stage", 0.0, unfair), ("one_stage", 5.0, unfair), ("adv", 1.0, unfair)):
            frames.append(pd.DataFrame({"task": task, "method": method, "value": value, "seed": s, "row": range(n),
                                        "y": y, "a": a, "pred": pred}))
    return pd.concat(frames, ignore_index=True)


METHODS = {"ce": SimpleNamespace(mode="ce"), "two_stage": SimpleNamespace(mode="contrastive"),
           "one_stage": SimpleNamespace(mode="one_stage"), "adv": SimpleNamespace(mode="adversarial")}


def test_claims_call_the_fairer_setting_fairer():
    got = {c.claim: c for c in findings.claims(preds(), METHODS, f1_bound=0.05, degenerate_share=0.99, rounds=200, confidence=0.95, seed=0)}
    assert got["t: two_stage with λ = 5 lowers ΔEO vs λ = 0"].verdict == "reproduced"
    assert got["t: two-stage CL (two_stage, λ = 5) has a lower ΔEO than CE"].verdict == "reproduced"
    assert got["t: two-stage CL (λ = 5) has a lower ΔEO than adv (λ_adv = 1)"].verdict == "reproduced"
    # the fair predictions are also more accurate here: the "cost in F1" is contradicted, not assumed
    assert got["t: two_stage with λ = 5 costs F1 vs λ = 0"].verdict == "contradicted"
    assert got["t: ΔEO moves more with λ in two-stage (two_stage, 0 → 5) than in one-stage CL (one_stage, "
               "0 → 5)"].verdict == "reproduced"
    assert got["t: two-stage F1 (λ = 5) is comparable or better than one-stage (λ = 5), within −0.05"].verdict == \
        "reproduced"
    one = got["t: one_stage with λ = 5 lowers ΔEO vs λ = 0"]  # identical predictions: exactly 0, never a verdict
    assert one.our_value == 0 and one.verdict == "inconclusive"
    assert got["t: one-stage CL (one_stage, λ = 5) has a lower ΔEO than CE"].verdict == "inconclusive"


def test_identical_settings_are_never_called_different():
    p = preds()
    p.loc[p["method"] == "two_stage", "pred"] = p.loc[(p["method"] == "ce")].set_index(["seed", "row"]).loc[
        list(zip(p.loc[p["method"] == "two_stage", "seed"], p.loc[p["method"] == "two_stage", "row"], strict=True)),
        "pred"].to_numpy()
    got = {c.claim: c for c in findings.claims(p, {k: v for k, v in METHODS.items() if k != "one_stage"},
                                               f1_bound=0.05, degenerate_share=0.99, rounds=200, confidence=0.95, seed=0)}
    same = got["t: two_stage with λ = 5 lowers ΔEO vs λ = 0"]
    assert same.our_value == 0 and same.verdict == "inconclusive"


def test_summary_is_mean_and_std_over_seeds():
    res = pd.DataFrame({"task": "t", "method": "ce", "mode": "ce", "value": None, "seed": [0, 1, 2],
                        "f1": [0.5, 0.6, 0.7], "accuracy": 0.5, "tpr_gap": 0.1, "fpr_gap": 0.2, "eo_gap": [0.3, 0.3, 0.6]})
    s = findings.summary(res).iloc[0]
    assert s["f1_mean"] == 0.6 and abs(s["f1_std"] - 0.1) < 1e-12 and s["seeds"] == 3 and np.isnan(s["value"])


def test_a_constant_classifier_is_never_called_fairer():
    p = preds()
    p.loc[(p["method"] == "two_stage") & (p["value"] == 5.0), "pred"] = 1  # everything positive: ΔEO 0
    got = {c.claim: c for c in findings.claims(p, METHODS, f1_bound=0.05, degenerate_share=0.99, rounds=50,
                                               confidence=0.95, seed=0)}
    c = got["t: two_stage with λ = 5 lowers ΔEO vs λ = 0"]
    assert c.our_value < 0 and c.ci_high < 0  # the interval alone would say "reproduced"
    assert c.verdict == "inconclusive" and "two_stage (5) predicts one class" in c.rule


def test_fast_f1_equals_sklearn():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for k, n in ((2, 50), (5, 40), (21, 30)):
        y, p = rng.integers(0, k, n), rng.integers(0, k, n)
        assert abs(findings.fast_f1(y, p) - f1_score(y, p, average="macro", zero_division=0)) < 1e-12
    y, p = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
    assert abs(findings.fast_f1(y, p, pos_label=1) - f1_score(y, p, zero_division=0)) < 1e-12
    assert findings.fast_f1(np.zeros(5, int), np.zeros(5, int), pos_label=1) == 0.0  # no positive anywhere
