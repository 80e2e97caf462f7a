"""The tiny pipeline (``tests/tiny_pipeline.py``) rerun and broken, in a private copy: a rerun of an unchanged
pipeline does nothing and a forced one writes the same bytes; the runner and atomic IO are no stage's dependency;
papermill, the runner and DVC agree on a stage's result; bad parameters, an unavailable model and missing data fail
clearly. Collected last (conftest), so on two pytest-xdist workers it runs beside ``test_integration.py`` once the
other worker's unit tests are done; that module kills a stage and runs one without DVC or Jupyter, on the original,
after its other tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import tiny_pipeline as tiny
from biaslab import stages as stage_decl
from tiny_pipeline import read_tree, tool_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """A private copy of the built tiny pipeline: these tests change it while the other module reads the original."""
    return tiny.built(tmp_path_factory, copy=True)


OUTPUTS = ["reports/ragfair/seat/seat_results.csv", "reports/ragfair/seat/metrics.json",
           "reports/ragfair/01_seat_audit.ipynb", "reports/data/datasets.csv"]


def test_rerun_is_a_no_op_and_forced_rerun_is_byte_identical(pipeline):
    root, dvc, _, _ = pipeline
    assert "Running stage" not in dvc("repro").stdout
    before = read_tree(root, *OUTPUTS)
    # sampled permutation statistics (a training stage rerun to the same bytes, its model and executed notebook
    # included: the kill test below)
    dvc("repro", "--force", "--single-item", "ragfair_seat")
    after = read_tree(root, *OUTPUTS)
    assert [k for k in before if before[k] != after[k]] == []
    assert "Running stage" not in dvc("repro").stdout  # identical outputs leave every downstream stage current


def test_infrastructure_is_no_stage_dependency_and_computing_code_is(pipeline):
    """Editing the runner or the atomic writes leaves every stage current (they decide no output's bytes: the
    byte-for-byte reruns above show it); editing a module a stage computes with makes that stage stale."""
    root, dvc, _, _ = pipeline
    edited = {rel: (root / rel).read_text() for rel in ("lib/biaslab/run.py", "lib/biaslab/atomic.py",
                                                         "lib/biaslab/intersect/splits.py")}
    try:
        for rel in ("lib/biaslab/run.py", "lib/biaslab/atomic.py"):
            (root / rel).write_text(edited[rel] + "# an edit\n")
        assert "changed" not in dvc("status").stdout.lower()
        (root / "lib/biaslab/intersect/splits.py").write_text(edited["lib/biaslab/intersect/splits.py"] + "# an edit\n")
        status = dvc("status").stdout
        assert "intersect_splits@indic" in status and "ragfair_seat" not in status
    finally:
        for rel, text in edited.items():
            (root / rel).write_text(text)
    assert "Running stage" not in dvc("repro").stdout


def test_papermill_and_the_runner_give_the_stage_result_for_the_same_values(pipeline):
    """A notebook run by hand (papermill -p, or `biaslab run --set`) with the values params.yaml holds writes the
    same tables as `dvc repro`; an override changes them, and the stage is then stale for DVC. The stage draws a
    seeded sample (BBQ training pairs; n_pairs as the tiny parameters set it) and loads no model, so its four runs
    here cost seconds (ragfair_seat, used before, took ≈ 10 s a run; its seeded permutation test is rerun
    byte-identically by the forced-rerun test)."""
    root, dvc, _, _ = pipeline
    table = root / "data/processed/ragfair/pairs.parquet"
    before, n_before = table.read_bytes(), len(pd.read_parquet(table))
    n_pairs = yaml.safe_load((root / "params.yaml").read_text())["ragfair"]["pairs"]["n_pairs"]  # the tiny value
    half = n_pairs // 2
    env = tool_env(root, set_root=True, PYTHONHASHSEED="42")
    nb = subprocess.run([str(Path(sys.executable).parent / "jupytext"), "--to", "ipynb", "--output", "-",
                         "notebooks/ragfair/04_pairs.py"], cwd=root, env=env, capture_output=True, check=True)
    run = subprocess.run([str(Path(sys.executable).parent / "papermill"), "-", str(root.parent / "pm.ipynb"), "-k",
                          "python3", "-l", "python", "-p", "n_pairs", str(n_pairs)], input=nb.stdout, cwd=root, env=env,
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert table.read_bytes() == before  # the same value as params.yaml: the same table
    proc = subprocess.run([sys.executable, "-m", "biaslab.run", "ragfair_pairs", "--set", f"n_pairs={n_pairs}",
                           "--out", str(root.parent / "run.ipynb")], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert table.read_bytes() == before
    proc = subprocess.run([sys.executable, "-m", "biaslab.run", "ragfair_pairs", "--set", f"n_pairs={half}",
                           "--out", str(root.parent / "run.ipynb")], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(pd.read_parquet(table)) < n_before  # the override reached the sample (stratified: about half)
    assert "ragfair_pairs" in dvc("status").stdout
    dvc("repro", "ragfair_pairs")
    assert table.read_bytes() == before
    assert "Running stage" not in dvc("repro").stdout  # the same bytes again: the training downstream stays current


@contextlib.contextmanager
def edited_params(root: Path, old: str, new: str):
    """params.yaml with one text replacement, restored afterwards whatever happens."""
    path = root / "params.yaml"
    good = path.read_text()
    assert old in good, f"{old!r} not in params.yaml"
    path.write_text(good.replace(old, new))
    try:
        yield
    finally:
        path.write_text(good)


@contextlib.contextmanager
def outputs_kept(root: Path, dvc, stage: str):
    """A failed `dvc repro` removes the stage's outputs before its command runs (and report outputs are not in
    DVC's cache): put the first run's bytes back afterwards, so later tests (the report's links) see the pipeline
    that run left, and check that DVC calls the stage current again."""
    kept = read_tree(root, *stage_decl.outs(stage, root))
    try:
        yield
    finally:
        for rel, data in kept.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    assert stage not in dvc("status", stage).stdout


def test_invalid_params_fail_clearly_without_partial_outputs(pipeline):
    root, dvc, _, _ = pipeline
    with outputs_kept(root, dvc, "ragfair_seat"):
        with edited_params(root, "n_samples: 2000", "n_samples: lots"):
            proc = dvc("repro", "ragfair_seat", check=False)
            assert proc.returncode != 0
            assert "ragfair.seat.n_samples" in proc.stderr + proc.stdout
        with edited_params(root, "  alpha: 0.05", "  alpha: 0.05\n    alhpa: 0.1"):
            proc = dvc("repro", "ragfair_seat", check=False)
            assert proc.returncode != 0 and "ragfair.seat.alhpa: unknown key" in proc.stderr + proc.stdout
        assert not any(root.rglob("*.tmp"))


def test_unavailable_model_fails_before_work_naming_the_fix(pipeline):
    root, dvc, _, _ = pipeline
    with outputs_kept(root, dvc, "ragfair_seat"), edited_params(root, "model: minilm", "model: msmarco-roberta-base-v2"):
        proc = dvc("repro", "ragfair_seat", check=False)
        out = proc.stderr + proc.stdout
        assert proc.returncode != 0
        assert "msmarco-roberta-base-v2" in out and "models.local_dirs" in out
        assert not (root / "reports/ragfair/seat/seat_results.csv").exists()


def test_missing_data_names_the_fetch_step(pipeline):
    root, _, _, _ = pipeline
    env = tool_env(root, set_root=True)
    moved = root / "data/raw/seat.away"
    (root / "data/raw/seat").rename(moved)
    try:
        proc = subprocess.run([sys.executable, "-m", "biaslab.run", "ragfair_seat",
                               "--out", str(root.parent / "x.ipynb")], cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 1
        assert "data set 'seat' not found" in proc.stderr and "biaslab fetch seat" in proc.stderr
        assert not (root.parent / "x.ipynb").exists()
    finally:
        moved.rename(root / "data/raw/seat")


def test_nothing_reached_the_network(pipeline):
    _, _, _, netlog = pipeline
    assert not netlog.exists() or netlog.read_text() == "", netlog.read_text()
