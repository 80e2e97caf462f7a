"""train_mnrl: a real (tiny) sentence-transformers run — saves atomically, changes the weights, is seeded."""

import json

import numpy as np
import pandas as pd
import pytest

from biaslab.train import train_mnrl

from conftest import model_dir

ARGS = {"epochs": 1, "batch_size": 4, "learning_rate": 1e-4, "warmup_ratio": 0.1, "scale": 20.0,
        "max_seq_length": 256, "device": "cpu", "grad_cache_chunk": 0}


def tiny_triplets():
    a = [f"A story where people mock someone for reason {i}." for i in range(8)]
    p = [f"People like that are always {w}." for w in ["lazy", "dirty", "weak", "slow", "dumb", "loud", "rude", "poor"]]
    n = [f"The weather on day {i} was mild." for i in range(8)]
    return pd.DataFrame({"anchor": a, "positive": p, "negative": n})


@pytest.mark.slow
def test_train_mnrl_saves_a_changed_model(tmp_path, minilm):
    out, summary = train_mnrl(model_dir("minilm"), tiny_triplets(), tmp_path / "model", **ARGS, seed=1,
                              record={"run": "t"})
    assert summary["steps"] == 2 and summary["triplets"] == 8 and np.isfinite(summary["train_loss"])
    run = json.loads((out / "biaslab_run.json").read_text())
    assert run["run"] == "t" and run["scale"] == 20.0
    from biaslab.models import load_sentence_transformer

    trained = load_sentence_transformer(str(out), "cpu")
    s = "People like that are always lazy."
    assert not np.allclose(trained.encode([s]), minilm.encode([s]), atol=1e-4)
    assert not any(p.name.startswith(".model.") for p in tmp_path.iterdir())  # no temp folder left


@pytest.mark.slow
def test_train_mnrl_is_byte_reproducible_and_prints_no_wall_clock(tmp_path, capsys):
    """Same seed → the same weights, the same run record and the same printed log (the executed notebooks
    are DVC outputs, so a wall-clock line in them would make every forced rerun look like a change)."""
    outputs, logs = [], []
    for name in ("a", "b"):
        out, _ = train_mnrl(model_dir("minilm"), tiny_triplets(), tmp_path / name, **ARGS, seed=3, record={})
        outputs.append(out)
        logs.append(capsys.readouterr())
    files = sorted(p.relative_to(outputs[0]) for p in outputs[0].rglob("*") if p.is_file())
    assert {"biaslab_run.json", "model.safetensors"} <= {str(f) for f in files}
    for f in files:  # every file, the saved model card included
        assert (outputs[0] / f).read_bytes() == (outputs[1] / f).read_bytes(), f
    printed = logs[0].out + logs[0].err
    assert "'loss'" in printed or "'train_loss'" in printed  # the log is still printed ...
    assert "train_runtime" not in printed and "per_second" not in printed  # ... without timings
    assert logs[0].out == logs[1].out


@pytest.mark.slow
def test_grad_cache_chunk_trains_with_the_cached_loss_and_records_it(tmp_path, minilm):
    out, summary = train_mnrl(model_dir("minilm"), tiny_triplets(), tmp_path / "model", **ARGS | {"grad_cache_chunk": 3},
                              seed=1, record={})  # 12 texts per batch, 3 at a time
    run = json.loads((out / "biaslab_run.json").read_text())
    assert run["grad_cache_chunk"] == 3 and summary["steps"] == 2 and np.isfinite(summary["train_loss"])
    from biaslab.models import load_sentence_transformer

    s = "People like that are always lazy."
    assert not np.allclose(load_sentence_transformer(str(out), "cpu").encode([s]), minilm.encode([s]), atol=1e-4)
    with pytest.raises(ValueError, match="grad_cache_chunk"):
        train_mnrl(model_dir("minilm"), tiny_triplets(), tmp_path / "bad", **ARGS | {"grad_cache_chunk": -1}, seed=1,
                   record={})


def test_wall_clock_keys_of_training_and_evaluation_are_left_out_of_printed_logs():
    from biaslab.train import _without_timings

    logs = {"loss": 0.5, "epoch": 1.0, "train_runtime": 3.2, "train_samples_per_second": 9.0,
            "train_steps_per_second": 1.0, "eval_loss": 0.4, "eval_runtime": 0.18, "eval_samples_per_second": 98.2,
            "eval_steps_per_second": 5.5}
    assert _without_timings(logs) == {"loss": 0.5, "epoch": 1.0, "eval_loss": 0.4}
    assert _without_timings(None) is None


def test_the_speed_dependent_checkpoint_warning_is_filtered_and_other_warnings_are_not():
    import logging

    from biaslab.train import _quiet_timing_warnings

    _quiet_timing_warnings()
    _quiet_timing_warnings()  # idempotent: one filter
    logger = logging.getLogger("transformers.trainer_utils")
    assert sum(type(f).__name__ == "_NoMtimeWarning" for f in logger.filters) == 1

    def record(msg):
        return logging.LogRecord(logger.name, logging.WARNING, __file__, 1, msg, None, None)

    assert not logger.filter(record("mtime may not be reliable on this filesystem, falling back to numerical ordering"))
    assert logger.filter(record("Checkpoint destination directory exists"))
