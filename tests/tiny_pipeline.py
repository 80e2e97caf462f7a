"""The integration tests' tiny pipeline: the real DVC + papermill pipeline of all five papers and the bias cards on
tiny parameters, in a temporary copy of the repository, built once per test session and shared by the two
integration modules. ``test_integration.py`` reads it in place (its last tests kill a stage and rerun one, leaving it
as built); ``test_integration_reruns.py`` reruns and breaks stages of a private copy — on the other pytest-xdist
worker once its unit tests are done (the conftest's collection order: the integration module first, the reruns
module last)."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from biaslab import stages as stage_decl
from biaslab.paths import copy_project

from conftest import REPO, mirror_dir

TINY_TESTS = ["weat6", "sent-weat9"]  # one exact (C(16, 8) partitions), one sampled (C(36, 18))


def tool_env(root: Path, *, set_root: bool, **extra: str) -> dict[str, str]:
    """The environment of a tool run on the copied pipeline: this interpreter's tools first on PATH, the copy's own
    cache, ``extra`` on top; ``BIASLAB_ROOT`` pointing at the copy, or removed (DVC runs stages from the copy's
    folder, and the root must come from there, not from the unit tests' setting)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "BIASLAB_CACHE_DIR": str(root.parent / "cache"), **extra}
    if set_root:
        env["BIASLAB_ROOT"] = str(root)
    else:
        env.pop("BIASLAB_ROOT", None)
    return env


def shrink(params: dict) -> dict:
    """The tiny parameters (``params``: params.yaml as a dict, changed in place)."""
    params["data"]["datasets"] = ["seat", "indibias", "sbic", "bbq", "trec_fair_2022", "wikitext2_valid_test",
                                  "twinviews_13k", "debiasing_rag_kim2025", "trecdl_passage_bm25_top100_text",
                                  "jigsaw_identity_term_bias_testsets", "bias_in_bios_samples",
                                  "genderbias_ir_rekabsaz2020", "msmarco_fair_queries_rekabsaz2021",
                                  "msmarco_train_triples_splade_toy"]
    params["ragfair"]["seat"].update(tests=TINY_TESTS, n_samples=2000)
    it = params["intersect"]
    it["reference"].update(indi_n_unbiased=60, sbic_n_unbiased=60, sbic_caps={c: 30 for c in it["reference"]["sbic_caps"]},
                           sbic_neutral_pool=300)  # stand-ins searched among 300 posts (≈ 100 s less to embed)
    for corpus in ("indic", "western"):
        it["paragraphs"]["corpora"][corpus].update(n_biased=6 * len(it["paragraphs"]["corpora"][corpus]["categories"]),
                                                   n_unbiased=10)
    it["paragraphs"]["pool_size"] = 3
    it["splits"]["validation"] = 0.25  # a stratified share needs at least one paragraph per category
    it["triplets"]["llm_per_strategy"] = 5
    it["train"].update(runs=["indic-srk4-C1"], max_triplets=16, batch_size=8)
    it["baselines"].update(subsets=["C1"], epochs=1, soft_hamming_subsets=["C1"], soft_hamming_max_epochs=1, max_length=64,
                           zero_shot_backend="none", zero_shot_max_paragraphs=0)
    it["evaluate"]["k_sweep"] = [1, 5]
    rf = params["ragfair"]
    rf["bbq"].update(categories=["Gender_identity", "Religion"], check_categories=["Religion"], max_pairs=2)
    rf["probing"].update(max_rows_per_category=40, folds=3, seat_n_samples=200)
    rf["pairs"]["n_pairs"] = 16
    rf["train"].update(batch_size=8, gradient_probe_batches=1, runs={"lora_wiseft": {"lora": True, "wiseft": True, "alpha": 1.0}})
    rf["evaluate"].update(max_rows_per_category=40, seat_n_samples=200, bootstrap_rounds=2, perturbation_rounds=5,
                          acts=None, checkpoints=[
        {"name": "Baseline (frozen encoder)", "run": None, "mask": False},
        {"name": "Head masking", "run": None, "mask": True},
        {"name": "LoRA + WiSE-FT", "run": "lora_wiseft", "mask": False},
        {"name": "Full framework", "run": "lora_wiseft", "mask": True}])
    rc = params["ragcontrol"]
    rc.update(max_seq_length=48, max_test_questions=30)
    rc["candidates"].update(max_pool=150, max_positives=2, max_negatives=2,
                            corpora={"GenderBias-QA": ["wikipedia"], "PoliticBias-QA": ["twinviews"]})
    rc["train"].update(epochs=1, max_seq_length=48, merges=[0.5],
                       runs={"politics-last1": {"task": "PoliticBias-QA", "freeze_layers": 1}})
    rc["projection"]["alphas"] = [1.0, 3.0]
    rc["sampling"].update(top_n=[3], taus=[0.0, 1.0])
    rc["reader"].update(max_questions=4, max_doc_words=30, generation_check=1)
    rc["readers"]["smollm2-letter"] = {**rc["readers"]["smollm2"], "politics_mode": "letter"}  # a second reader
    rc["utility"].update(max_queries=3)
    cs = params["cscl"]
    cs.update(tasks=["sbic_race"], max_rows=150, seeds=[0, 1])
    cs["augment"]["n_aug"] = 2
    cs["train"].update(epochs=1, pretrain_epochs=1, head_epochs=2)
    cs["methods"] = {"ce": cs["methods"]["ce"], "two_stage": {**cs["methods"]["two_stage"], "grid": [0.0, 1.0]},
                     "one_stage": {**cs["methods"]["one_stage"], "grid": [0.0, 1.0]},
                     "adversarial": {**cs["methods"]["adversarial"], "grid": [1.0]},
                     "diverse_adversarial": {**cs["methods"]["diverse_adversarial"], "grid": [1.0]},
                     "inlp": {**cs["methods"]["inlp"], "grid": [2]}}
    # one τ, one batch and one augmentation variant; the 8-example batch runs under gradient caching in chunks of 3
    cs["sensitivity"].update(task="sbic_race", lambdas=[0.0, 1.0], temperatures=[0.5], batch_sizes=[8],
                             augmentations=["clm_insert"], cache_chunk=3, seed_subset=[1])
    fr = params["fairrank"]
    fr.update(seeds=[0])  # one seed: the analysis and claims run alike (≈ 30 s less)
    # one fold (DL20 -> DL19): a second would train every ranker again, ≈ 30 s more on the build's worker, the longer
    # of the two; the folds are tested in test_fairrank_lib
    fr["data"].update(max_pairs=24, rerank_depth=20, folds=[["dl20", "dl19"]])
    fr["rankers"] = {k: fr["rankers"][k] for k in ("base", "penalty_relevant", "penalty_irrelevant",
                                                   "reward_irrelevant", "lws", "advbert")}
    # λ = 0.1 shifts the hinge margins too little to switch any of 24 pairs: identical to the base ranker (README)
    fr["rankers"]["penalty_relevant"]["lambdas"] = [1.0, 5.0]
    params["cards"].update(max_seq_length=48,  # as the tiny ragcontrol retrieves
                           permutation_rounds=2000)  # ≈ 150 tests / 0.05 = 3,000 rounds matter only at full size
    return params


class Pipeline(NamedTuple):
    root: Path  # the built copy of the repository
    dvc: Callable[..., subprocess.CompletedProcess]  # dvc(*args, check=True, cwd=root, **env) in that copy
    first: subprocess.CompletedProcess  # the first `dvc repro`'s log (all three runs')
    netlog: Path  # where the network guard logs any non-loopback connection


def write_tiny_params(src: Path | str, dst: Path | str, profile: Path | str | None = None) -> None:
    """``src`` (a params.yaml) with :func:`shrink` applied, written to ``dst``: the tiny pipeline's parameters. With
    ``profile`` (e.g. configs/gpu.yaml, as .ci/run builds its CPU device bundle), that profile merged in first, so its
    paths (full fine-tuning, its batch sizes) run at tiny sizes, on whatever device is here (``common.device:
    auto``: the profile asks for CUDA)."""
    params = yaml.safe_load(Path(src).read_text())
    if profile is not None:
        from biaslab.overrides import merge

        merge(params, yaml.safe_load(Path(profile).read_text()))
        params["common"]["device"] = "auto"
    Path(dst).write_text(yaml.safe_dump(shrink(params), sort_keys=False))


def open_pipeline(root: Path, first_stdout: str) -> Pipeline:
    """The tools' environment and a `dvc` runner for the built copy at ``root`` (its cache, timings and network log
    beside it)."""
    netlog = root.parent / "network.log"
    env = tool_env(root, set_root=False, BIASLAB_DATA_MIRROR=str(mirror_dir()),
                   PYTHONPATH=str(REPO / "tests" / "netguard"), BIASLAB_NETGUARD_LOG=str(netlog),
                   BIASLAB_TIMINGS=str(root.parent / "timings.jsonl"))  # where the time goes: biaslab timings FILE

    def dvc(*args, check=True, cwd=root, **extra_env):
        # The timeout only catches a hung kernel: the first run takes about 8 minutes on 2 cores beside the other
        # test worker, and a slower machine may double that. Speed is measured by the timings file, not asserted.
        proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), *args], cwd=cwd, env={**env, **extra_env},
                              capture_output=True, text=True, timeout=2400)
        if check and proc.returncode != 0:
            raise AssertionError(f"dvc {' '.join(args)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    dvc.env = env  # for a test that starts dvc itself (the kill test)
    return Pipeline(root, dvc, subprocess.CompletedProcess(["dvc", "repro"], 0, first_stdout, ""), netlog)


def _build(base: Path) -> str:
    """Copy the project to ``base / "repo"``, shrink its parameters and run the pipeline; returns the runs' log."""
    root = copy_project(REPO, base / "repo")
    write_tiny_params(root / "params.yaml", root / "params.yaml")
    # A fresh cache, except the dequantised SmolLM2 weights: content-keyed and shared with the unit tests, so a clean
    # CI run converts the GGUF once instead of twice.
    shared_models = REPO / ".cache" / "biaslab-tests" / "models"
    shared_models.mkdir(parents=True, exist_ok=True)
    (base / "cache").mkdir()
    (base / "cache" / "models").symlink_to(shared_models, target_is_directory=True)
    stdout = repro_in_two_copies(root, open_pipeline(root, "").dvc).stdout
    # the reruns module's copy, taken now: later, the first module's tests may be changing the original
    _copy(root, base / "copy")
    return stdout


def built(tmp_path_factory, *, copy: bool = False) -> Pipeline:
    """The tiny pipeline, built by the first test process that asks (the others wait on a lock, then read it). A
    failed build is recorded, so the other worker fails at once with its message instead of building again.
    ``copy``: the private copy taken right after the build (for tests that rerun, kill or break stages while
    others read the original) instead of the original."""
    if mirror_dir() is None:
        pytest.skip("set BIASLAB_DATA_MIRROR to a local copy of the data sets to run the pipeline offline")
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's folder, above each worker's own
    base, lock_path = shared / "tiny-pipeline", shared / "tiny-pipeline.lock"
    done, failed = base / "first-run.log", shared / "tiny-pipeline.failed"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if failed.exists():
            pytest.fail(f"the tiny pipeline failed to build in another test process:\n{failed.read_text()}")
        if not done.exists():
            base.mkdir()
            try:
                stdout = _build(base)
            except BaseException as e:
                failed.write_text(f"{type(e).__name__}: {e}"[-20000:])
                raise
            done.with_suffix(".tmp").write_text(stdout)
            done.with_suffix(".tmp").replace(done)
    return open_pipeline((base / "copy" if copy else base) / "repo", done.read_text())


def _copy(root: Path, dst: Path) -> None:
    """The built pipeline at ``root`` — its files, outputs, ``dvc.lock``, DVC cache and the stages' cache — copied to
    ``dst``. DVC's own scratch folder (``.dvc/tmp``: its locks and file-hash state) is left out; DVC hashes the
    copied files anew."""
    shutil.copytree(root, dst / "repo", symlinks=True, ignore=lambda d, names: ["tmp"] if Path(d).name == ".dvc" else [])
    shutil.copytree(root.parent / "cache", dst / "cache", symlinks=True)


# The second copy's stages: the ragfair, cscl and fairrank chains. The first copy keeps intersect and ragcontrol.
# One tiny build's stage times (2026-11-28, AMD): intersect + ragcontrol 303 s (with fetch) against 286 s for the
# rest; the split before (ragcontrol, fairrank and the SEAT audit on the side) was 328 s against 262 s.
SIDE_PREFIXES = ("ragfair_", "cscl_", "fairrank_")
CROSS_PAPER = ("cards", "report")


def repro_in_two_copies(root: Path, dvc) -> subprocess.CompletedProcess:
    """The first `dvc repro` of the copy at ``root``, on both cores: DVC runs one stage at a time and locks its
    repository. A second copy (same params.yaml, the same embedding cache) builds the stages of ``SIDE_PREFIXES``
    meanwhile; their outputs, dvc.lock entries and
    DVC cache then join ``root``, where a last `dvc repro` runs the cross-paper stages (cards, report). DVC calling every
    joined stage current there is checked by each test that asserts a plain `dvc repro` runs nothing. Returns one
    result whose stdout holds all three runs' logs."""
    from concurrent.futures import ThreadPoolExecutor

    side = copy_project(REPO, root.parent / "side")
    shutil.copy2(root / "params.yaml", side / "params.yaml")
    names = stage_decl.all_stages(root)
    side_stages = [s for s in names if s.startswith(SIDE_PREFIXES)]
    own = [s for s in names if s not in side_stages and s not in CROSS_PAPER]
    with ThreadPoolExecutor(1) as pool:
        side_run = pool.submit(dvc, "repro", *side_stages, cwd=side)
        own_run = dvc("repro", *own)
        side_run = side_run.result()
    lock, side_lock = (yaml.safe_load((p / "dvc.lock").read_text()) for p in (root, side))
    for stage in side_stages:
        lock["stages"][stage] = side_lock["stages"][stage]
        for out in stage_decl.outs(stage, side):
            dst = root / out
            if dst.is_dir():
                shutil.rmtree(dst)
            dst.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if (side / out).is_dir() else shutil.copy2)(side / out, dst)
    (root / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    # DVC calls a stage whose cached outputs are missing from its cache changed: the cache is content-addressed,
    # so the second copy's merges into the first's
    shutil.copytree(side / ".dvc" / "cache", root / ".dvc" / "cache", dirs_exist_ok=True)
    last = dvc("repro")
    ran = set(re.findall(r"Running stage '([^']+)'", last.stdout))
    assert ran <= set(CROSS_PAPER), f"stages joined from the second copy ran again: {sorted(ran - set(CROSS_PAPER))}"
    return subprocess.CompletedProcess(last.args, 0, own_run.stdout + side_run.stdout + last.stdout,
                                       own_run.stderr + side_run.stderr + last.stderr)


def read_tree(root: Path, *rels: str) -> dict[str, bytes]:
    """The bytes of every file under each path (a file, or a folder output)."""
    out = {}
    for rel in rels:
        path = root / rel
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file():
                out[f.relative_to(root).as_posix()] = f.read_bytes()
    return out
