"""cscl building blocks: SupCon and CS-InfoNCE against a direct re-computation of their definitions, the
equalized-odds gaps against fairlearn and hand-worked numbers, INLP on data with a known protected direction."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from biaslab.losses import cs_infonce_loss, supcon_loss
from biaslab.metrics.fairness import equalized_odds_gaps


def views(batch: int, n_views: int = 2, dim: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(batch, n_views, dim, generator=g), dim=-1)


def direct(features, positive, candidate, tau, mode="all"):
    """The loss written as the definition reads: one anchor (example i, view v) at a time."""
    b, nv = features.shape[:2]
    anchors = [(i, v) for v in (range(nv) if mode == "all" else [0]) for i in range(b)]
    total = 0.0
    for i, v in anchors:
        z = features[i, v]
        others = [(j, w) for w in range(nv) for j in range(b) if (j, w) != (i, v)]
        den = sum(math.exp(float(z @ features[j, w]) / tau) for j, w in others if candidate(i, j))
        pos = [(j, w) for j, w in others if positive(i, j)]
        total += -sum(float(z @ features[j, w]) / tau - math.log(den) for j, w in pos) / len(pos)
    return total / len(anchors)


@pytest.mark.parametrize("mode", ["all", "one"])
def test_supcon_equals_its_definition_and_simclr_without_labels(mode):
    f = views(6, n_views=2, seed=1)
    y = torch.tensor([0, 1, 0, 2, 1, 0])  # class 2 has a single example: its other view is its only positive
    got = supcon_loss(f, y, temperature=0.5, contrast_mode=mode)
    want = direct(f, lambda i, j: bool(y[i] == y[j]), lambda i, j: True, 0.5, mode)
    assert got.item() == pytest.approx(want, rel=1e-5)
    simclr = supcon_loss(f, None, temperature=0.5, contrast_mode=mode)
    assert simclr.item() == pytest.approx(direct(f, lambda i, j: i == j, lambda i, j: True, 0.5, mode), rel=1e-5)
    assert simclr.item() != pytest.approx(got.item())  # labels change the positives


def test_supcon_with_three_views_and_a_gradient():
    f = views(4, n_views=3, seed=2).requires_grad_()
    y = torch.tensor([1, 1, 0, 0])
    loss = supcon_loss(f, y, temperature=0.1)
    assert loss.item() == pytest.approx(direct(f.detach(), lambda i, j: bool(y[i] == y[j]), lambda i, j: True, 0.1),
                                        rel=1e-5)
    loss.backward()
    assert f.grad is not None and f.grad.abs().sum() > 0


def test_cs_infonce_equals_its_definition_with_a_single_member_cell():
    f = views(7, seed=3)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    a = torch.tensor([0, 0, 1, 0, 0, 1, 1])  # (y=0, a=1) has one example
    got = cs_infonce_loss(f, y, a, temperature=0.2)
    want = direct(f, lambda i, j: i == j, lambda i, j: bool(y[i] == y[j] and a[i] == a[j]), 0.2)
    assert got.item() == pytest.approx(want, rel=1e-5)
    # the lone example's anchors see only their own other view: log 1 = 0, so the loss is the mean of the rest
    per_anchor_zero = direct(f[[2]], lambda i, j: i == j, lambda i, j: True, 0.2)
    assert per_anchor_zero == pytest.approx(0.0, abs=1e-7)
    # one group only: CS-InfoNCE is SupCon's denominator restricted to the class, i.e. SimCLR within each class
    same = torch.zeros(7, dtype=torch.long)
    within = direct(f, lambda i, j: i == j, lambda i, j: bool(y[i] == y[j]), 0.2)
    assert cs_infonce_loss(f, y, same, temperature=0.2).item() == pytest.approx(within, rel=1e-5)


def test_bad_shapes_and_a_batch_without_positives_fail_clearly():
    f = views(3, n_views=1)
    with pytest.raises(ValueError, match="no positive"):
        supcon_loss(f, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match=r"\[batch, n_views, dim\]"):
        supcon_loss(f[:, 0], torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="labels .* for a batch of 3"):
        cs_infonce_loss(views(3), torch.tensor([0, 1]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="contrast_mode"):
        supcon_loss(views(3), None, contrast_mode="some")


def test_equalized_odds_gaps_binary_match_fairlearn():
    from fairlearn.metrics import MetricFrame, false_positive_rate, true_positive_rate

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    a = rng.choice(["black", "white", "other"], 400)
    pred = np.where(rng.random(400) < 0.8, y, 1 - y)
    pred[(a == "black") & (y == 0)] = 1  # a false-positive gap for one group
    got = equalized_odds_gaps(y, pred, a)
    mf = MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate}, y_true=y, y_pred=pred,
                     sensitive_features=a)
    want_tpr = float((mf.by_group["tpr"] - mf.overall["tpr"]).abs().sum())
    want_fpr = float((mf.by_group["fpr"] - mf.overall["fpr"]).abs().sum())
    assert got["tpr_gap"] == pytest.approx(want_tpr) and got["fpr_gap"] == pytest.approx(want_fpr)
    assert got["eo_gap"] == pytest.approx(want_tpr + want_fpr) and got["fpr_gap"] > 0.3
    from sklearn.metrics import f1_score
    assert got["f1"] == pytest.approx(f1_score(y, pred)) and got["accuracy"] == pytest.approx((y == pred).mean())


def test_equalized_odds_gaps_multiclass_by_hand():
    y = np.array([0, 0, 1, 1, 2, 2, 0, 1])
    p = np.array([0, 1, 1, 1, 2, 0, 0, 1])
    a = np.array(["f", "f", "f", "f", "m", "m", "m", "m"])
    got = equalized_odds_gaps(y, p, a)
    # class 0: TPR all 2/3, f 1/2, m 1/1 -> 1/6 + 1/3; FPR all 1/5, f 0/2, m 1/3 -> 1/5 + 2/15
    # class 1: TPR all 3/3, f 2/2, m 1/1 -> 0;      FPR all 1/5, f 1/2, m 0/3 -> 3/10 + 1/5
    # class 2: TPR all 1/2, f (no row) -> nothing, m 1/2 -> 0; FPR all 0/6, f 0/4, m 0/2 -> 0
    assert got["tpr_gap"] == pytest.approx(1 / 6 + 1 / 3)
    assert got["fpr_gap"] == pytest.approx(1 / 5 + 2 / 15 + 3 / 10 + 1 / 5)
    assert got["f1"] == got["macro_f1"]
    with pytest.raises(ValueError, match="differ in length"):
        equalized_odds_gaps(y, p, a[:-1])


def test_eo_gaps_equal_a_class_by_class_computation_to_the_bit():
    """The bootstrap's eo_gaps (every class at once) against the definition computed class by class: the same
    floats, not just close ones — claims.csv's intervals must not move with the implementation."""
    from biaslab.metrics.fairness import eo_gaps

    def by_class(y, p, gidx, n_groups, classes):
        tpr_gap = fpr_gap = 0.0
        rates = []
        for cls in classes:
            hit, pos = p == cls, y == cls
            tpr = hit[pos].mean() if pos.sum() else np.nan
            fpr = hit[~pos].mean() if (~pos).sum() else np.nan
            gp = np.bincount(gidx[pos], minlength=n_groups).astype(float)
            gtp = np.bincount(gidx[pos & hit], minlength=n_groups).astype(float)
            gn = np.bincount(gidx[~pos], minlength=n_groups).astype(float)
            gfp = np.bincount(gidx[~pos & hit], minlength=n_groups).astype(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                tpr_a, fpr_a = gtp / gp, gfp / gn
            tpr_gap += float(np.nansum(np.abs(tpr_a - tpr)))
            fpr_gap += float(np.nansum(np.abs(fpr_a - fpr)))
            rates.append((cls, tpr_a, fpr_a, tpr, fpr, gp + gn))
        return tpr_gap, fpr_gap, rates

    rng = np.random.default_rng(3)
    for n_groups in (1, 2, 3, 5, 9):
        for n_classes in (2, 5, 21):
            n = int(rng.integers(5, 300))
            y, p = rng.integers(0, n_classes, n), rng.integers(0, n_classes, n)
            agree = rng.random(n) < 0.5  # true positives in every class
            p[agree] = y[agree]
            gidx = rng.integers(0, n_groups, n)
            # every class; the positive class alone (binary); classes absent from the rows and unsorted
            for classes in (np.unique(np.concatenate([y, p])), np.array([n_classes - 1]),
                            np.array([n_classes + 3, 1, 0])):
                got, want = eo_gaps(y, p, gidx, n_groups, classes), by_class(y, p, gidx, n_groups, classes)
                assert got[:2] == want[:2], (n_groups, n_classes, classes)
                r = got[2]
                assert len(r.classes) == len(want[2])
                for c, w in enumerate(want[2]):
                    g = (r.classes[c], r.tpr[c], r.fpr[c], r.tpr_all[c], r.fpr_all[c], r.rows[c])
                    assert g[0] == w[0] and all(np.array_equal(a, b, equal_nan=True) for a, b in zip(g[1:], w[1:], strict=True))


def test_inlp_removes_the_protected_direction_and_keeps_the_task():
    from sklearn.linear_model import LogisticRegression

    from biaslab.cscl.inlp import debiasing_projection

    rng = np.random.default_rng(0)
    n, dim = 1200, 48  # many more dimensions than iterations, as with sentence embeddings
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 2, n)
    X = rng.normal(size=(n, dim))
    X[:, 0] += 3 * (2 * y - 1)  # the task direction
    X[:, 1] += 2 * (2 * a - 1) + 0.5 * (2 * y - 1)  # the protected direction, slightly mixed with the task
    X[:, 2] += 1.0 * (2 * a - 1)
    tr, dv, te = slice(0, 600), slice(600, 900), slice(900, None)
    P, rowspaces, Ws = debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=4, seed=0)
    assert P.shape == (dim, dim) and np.allclose(P, P.T) and np.allclose(P @ P, P, atol=1e-8)
    assert len(rowspaces) == len(Ws) == 4

    def probe(target, proj):
        return LogisticRegression().fit(X[tr] @ proj, target[tr]).score(X[te] @ proj, target[te])

    assert probe(a, np.eye(dim)) > 0.85 and probe(a, P) < 0.6 and probe(y, P) > 0.95
    assert np.array_equal(P, debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=4, seed=0)[0])  # seeded
    # Without an accuracy floor, classifiers trained on what is left keep removing directions — here the task's
    # (the INLP paper's caveat); min_accuracy skips the near-chance ones and the task survives ten iterations
    assert probe(y, debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=10, seed=0)[0]) < 0.7
    P10, kept, _ = debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=10, min_accuracy=0.55, seed=0)
    assert 0 < len(kept) < 10 and probe(a, P10) < 0.6 and probe(y, P10) > 0.95
    Pc, rc, _ = debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=6, by_class=True, seed=1,
                                     main_train=y[tr], main_dev=y[dv])
    assert len(rc) == 6 and probe(a, Pc) < 0.6 and probe(y, Pc) > 0.95
    with pytest.raises(ValueError, match="main_train"):
        debiasing_projection(X[tr], a[tr], X[dv], a[dv], n_classifiers=2, by_class=True)


def test_inlp_grid_from_one_run_is_each_run_bit_for_bit():
    """cscl's INLP grid ({20, 50}) is served by one run (debiasing_projections): each entry must be exactly the
    separate run's projection, kept rows and weights — with skipped iterations (a class with one group, the
    accuracy floor) in between."""
    from biaslab.cscl.inlp import debiasing_projection, debiasing_projections

    rng = np.random.default_rng(3)
    n, dim = 900, 24
    y = rng.integers(0, 3, n)
    a = rng.integers(0, 2, n)
    a[y == 2] = 0  # class 2 holds one protected group: by_class iterations that draw it are skipped
    X = rng.normal(size=(n, dim))
    X[:, 0] += 2 * (2 * a - 1)
    X[:, 1] += y
    tr, dv = slice(0, 600), slice(600, None)
    plain = {"min_accuracy": 0.0, "by_class": False, "seed": 0}
    for kw in (plain, plain | {"min_accuracy": 0.55},
               plain | {"by_class": True, "main_train": y[tr], "main_dev": y[dv], "seed": 2}):
        grid = debiasing_projections(X[tr], a[tr], X[dv], a[dv], [6, 1, 3], **kw)
        assert sorted(grid) == [1, 3, 6]
        for k, (P, rows, Ws) in grid.items():
            Q, rows1, Ws1 = debiasing_projection(X[tr], a[tr], X[dv], a[dv], k, **kw)
            assert np.array_equal(P, Q) and len(rows) == len(rows1) == len(Ws) == len(Ws1)
            assert all(np.array_equal(u, v) for u, v in zip(rows + Ws, rows1 + Ws1, strict=True))
    kept = [len(grid[k][1]) for k in (1, 3, 6)]
    assert kept[-1] < 6  # the by_class run did skip iterations
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="n_classifiers"):
            debiasing_projection(X[tr], a[tr], X[dv], a[dv], bad)
    for bad in ([], [3, 2.5], [True]):
        with pytest.raises(ValueError, match="n_classifiers"):
            debiasing_projections(X[tr], a[tr], X[dv], a[dv], bad, **plain)


def test_run_inlp_gives_each_grid_value_what_a_run_of_its_own_gives():
    """One INLP run serves the grid: each value's result equals a grid of that value alone."""
    from types import SimpleNamespace

    import pandas as pd

    from biaslab.cscl import experiment

    rng = np.random.default_rng(5)
    n, dim = 240, 16
    rows = pd.DataFrame({"y": rng.integers(0, 2, n), "a": rng.integers(0, 2, n),
                         "split": np.repeat(["train", "val", "test"], [140, 50, 50])})
    X = rng.normal(size=(n, dim)).astype(np.float32)
    X[:, 0] += rows["a"].to_numpy()
    feats = {s: X[(rows["split"] == s).to_numpy()] for s in ("train", "val", "test")}
    train = SimpleNamespace(head_hidden=8, head_epochs=2, batch_size=32, head_learning_rate=1e-2, patience=0,
                            class_weight="none")

    def method(grid):
        return SimpleNamespace(grid=grid, min_accuracy=0.0, by_class=True)

    both = experiment.run_inlp(method([1, 3]), rows, feats, train=train, seed=0)
    assert list(both) == [1, 3]
    for v, got in both.items():
        alone = experiment.run_inlp(method([v]), rows, feats, train=train, seed=0)[v]
        assert np.array_equal(got["test_features"], alone["test_features"]) and np.array_equal(got["pred"], alone["pred"])
        assert got["log"]["classifiers_kept"] == alone["log"]["classifiers_kept"] == v
    assert not np.array_equal(both[1]["test_features"], both[3]["test_features"])
    other = experiment.run_inlp(method([1]), rows, feats, train=train, seed=1)[1]  # another seed: another run
    assert not np.array_equal(other["test_features"], both[1]["test_features"])
    floats = experiment.run_inlp(method([1.0, 3.0]), rows, feats, train=train, seed=0)  # params.yaml's grid, as parsed
    assert list(floats) == [1.0, 3.0] and all(np.array_equal(floats[v]["pred"], both[int(v)]["pred"]) for v in floats)
    with pytest.raises(ValueError, match="n_classifiers"):
        experiment.run_inlp(method([2.5]), rows, feats, train=train, seed=0)
