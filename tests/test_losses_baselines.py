"""Soft Hamming loss against a direct computation; classifier label decoding; Fig. 21 answer parsing."""

from itertools import pairwise

import numpy as np
import pytest
import torch

from biaslab.intersect import baselines as bl
from biaslab.losses import soft_hamming_loss

from conftest import model_dir


def test_soft_hamming_matches_direct_computation():
    z = torch.tensor([[2.0, -1.0, 0.0], [0.5, 0.5, -3.0]])
    y = torch.tensor([[1, 0, 1], [0, 1, 0]])
    p = 1 / (1 + np.exp(-z.numpy() / 0.7))
    direct = np.mean(p * (1 - y.numpy()) + (1 - p) * y.numpy())
    assert soft_hamming_loss(z, y, 0.7).item() == pytest.approx(direct, rel=1e-6)
    # perfect, confident predictions drive it to 0; its gradient is finite
    assert soft_hamming_loss(torch.tensor([[50.0, -50.0]]), torch.tensor([[1, 0]]), 0.7).item() < 1e-6
    z.requires_grad_(True)
    soft_hamming_loss(z, y, 0.7).backward()
    assert torch.isfinite(z.grad).all()


def test_multi_hot_and_decode():
    space = ["caste", "gender", "unbiased"]
    assert bl.to_multi_hot([["gender"], ["caste", "gender"], ["x"]], space).tolist() == [
        [0, 1, 0], [1, 1, 0], [0, 0, 0]]
    probs = np.array([[0.7, 0.6, 0.1], [0.2, 0.1, 0.9], [0.3, 0.4, 0.1], [0.9, 0.2, 0.95]])
    assert bl.decode(probs, space, 0.5) == [["caste", "gender"], ["unbiased"], ["gender"], ["unbiased"]]


def test_parse_llm_labels():
    space = ["caste", "gender", "physical-appearance", "unbiased"]
    assert bl.parse_llm_labels("gender, caste", space) == ["caste", "gender"]
    assert bl.parse_llm_labels("Physical-Appearance", space) == ["physical-appearance"]
    assert bl.parse_llm_labels("unbiased", space) == ["unbiased"]
    assert bl.parse_llm_labels("I cannot tell", space) == ["unbiased"]
    assert bl.label_space(__import__("pandas").DataFrame({"labels": [["b", "a"], ["unbiased"]]})) == [
        "a", "b", "unbiased"]


@pytest.mark.slow
def test_classifier_learns_a_separable_toy_task(capsys):
    texts = ["women are bad drivers"] * 6 + ["the caste system is fair"] * 6 + ["a sunny day in the park"] * 6
    labels = [["gender"]] * 6 + [["caste"]] * 6 + [["unbiased"]] * 6
    space = ["caste", "gender", "unbiased"]
    for loss in ("bce", "soft_hamming"):
        clf = bl.MultiLabelClassifier(model_dir("minilm"), space, loss=loss, tau=0.7, device="cpu", max_length=32)
        log = clf.fit(texts, labels, epochs=8, batch_size=6, learning_rate=1e-3, head_learning_rate=1e-3,
                      converge_tol=0.01, seed=0, val_fraction=0.1, patience=3 if loss == "soft_hamming" else None)
        assert np.isfinite(log["train_loss"]) and len(log["loss_per_epoch"]) == round(log["epochs_run"])
        assert log["stopped_by"] in ("converged", "early_stopping", "max_epochs")
        if log["stopped_by"] == "converged":  # stopped by the tolerance: the last epoch moved the loss < 1 %
            assert log["last_change"] < 0.01 and log["epochs_run"] < 8
        assert clf.predict(["women are bad drivers", "a sunny day in the park"], 0.5) == [["gender"], ["unbiased"]]
        printed = capsys.readouterr()
        printed = printed.out + printed.err  # the trainer's log, printed into the executed notebook ...
        assert "loss" in printed and "runtime" not in printed and "per_second" not in printed  # ... sans wall-clock


@pytest.mark.slow
def test_a_classifier_stops_once_its_training_loss_settles():
    """converge_tol: training ends at the first epoch whose mean loss is within the tolerance of the one before; a
    tolerance no epoch meets runs every epoch (max_epochs)."""
    texts = ["women are bad drivers", "the caste system is fair", "a sunny day in the park"] * 4
    labels = [["gender"], ["caste"], ["unbiased"]] * 4
    space = ["caste", "gender", "unbiased"]
    runs = {}
    for tol in (0.5, 1e-9):
        clf = bl.MultiLabelClassifier(model_dir("minilm"), space, loss="bce", tau=0.7, device="cpu", max_length=16)
        runs[tol] = clf.fit(texts, labels, epochs=4, batch_size=12, learning_rate=1e-4, head_learning_rate=1e-3,
                            converge_tol=tol, seed=0, val_fraction=0.1, patience=None)
    loose, strict = runs[0.5], runs[1e-9]
    assert strict["stopped_by"] == "max_epochs" and strict["epochs_run"] == 4 and len(strict["loss_per_epoch"]) == 4
    losses = loose["loss_per_epoch"]
    changes = [abs(b / a - 1) for a, b in pairwise(losses)]
    assert loose["stopped_by"] == "converged" and loose["epochs_run"] == len(losses) < 4
    assert changes[-1] == pytest.approx(loose["last_change"], rel=1e-3) and changes[-1] < 0.5  # its first settled epoch
    assert all(c >= 0.5 for c in changes[:-1])


def test_the_majority_label_set_is_the_most_frequent_one():
    import pandas as pd

    train = pd.DataFrame({"labels": [["b", "a"], ["a", "b"], ["c"], ["unbiased"], ["c"]]})
    assert bl.majority_set(train) == ["a", "b"]  # a tie of two sets: the first in sorted order
