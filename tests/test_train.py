"""train_mnrl: a real (tiny) sentence-transformers run — saves atomically, changes the weights, is seeded."""

import json

import numpy as np
import pandas as pd
import pytest

from biaslab.train import train_mnrl

pytestmark = pytest.mark.slow


def tiny_triplets():
    a = [f"A story where people mock someone for reason {i}." for i in range(8)]
    p = [f"People like that are always {w}." for w in ["lazy", "dirty", "weak", "slow", "dumb", "loud", "rude", "poor"]]
    n = [f"The weather on day {i} was mild." for i in range(8)]
    return pd.DataFrame({"anchor": a, "positive": p, "negative": n})


def test_train_mnrl_saves_a_changed_model(tmp_path, minilm):
    out, summary = train_mnrl("minilm", tiny_triplets(), tmp_path / "model", epochs=1, batch_size=4,
                              learning_rate=1e-4, seed=1, device="cpu", config={"run": "t"})
    assert summary["steps"] == 2 and summary["triplets"] == 8 and np.isfinite(summary["train_loss"])
    run = json.loads((out / "biaslab_run.json").read_text())
    assert run["run"] == "t" and run["scale"] == 20.0
    from biaslab.models import load_sentence_transformer

    trained = load_sentence_transformer(str(out), "cpu")
    s = "People like that are always lazy."
    assert not np.allclose(trained.encode([s]), minilm.encode([s]), atol=1e-4)
    assert not any(p.name.startswith(".model.") for p in tmp_path.iterdir())  # no temp folder left
