"""The real pipeline (fetch + SEAT audit) through DVC and papermill on tiny parameters, in a temporary copy of
the repository, with a process-wide guard that refuses any non-loopback network connection."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from biaslab import claims as cl
from biaslab import competence
from biaslab import stages as stage_decl
from biaslab.paths import copy_project

from conftest import REPO, mirror_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]

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


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("set BIASLAB_DATA_MIRROR to a local copy of the data sets to run the pipeline offline")
    root = copy_project(REPO, tmp_path_factory.mktemp("pipeline") / "repo")
    params = yaml.safe_load((root / "params.yaml").read_text())
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
                          checkpoints=[
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
    fr["data"].update(max_pairs=24, rerank_depth=20)
    fr["rankers"] = {k: fr["rankers"][k] for k in ("base", "penalty_relevant", "penalty_irrelevant",
                                                   "reward_irrelevant", "lws", "advbert")}
    # λ = 0.1 shifts the hinge margins too little to switch any of 24 pairs: identical to the base ranker (README)
    fr["rankers"]["penalty_relevant"]["lambdas"] = [1.0, 5.0]
    params["cards"].update(max_seq_length=48,  # as the tiny ragcontrol retrieves
                           permutation_rounds=2000)  # ≈ 150 tests / 0.05 = 3,000 rounds matter only at full size
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    netlog = root.parent / "network.log"
    # A fresh cache, except the dequantised SmolLM2 weights: content-keyed and shared with the unit tests, so a clean
    # CI run converts the GGUF once instead of twice.
    shared_models = REPO / ".cache" / "biaslab-tests" / "models"
    shared_models.mkdir(parents=True, exist_ok=True)
    (root.parent / "cache").mkdir()
    (root.parent / "cache" / "models").symlink_to(shared_models, target_is_directory=True)
    env = tool_env(root, set_root=False, BIASLAB_DATA_MIRROR=str(mirror),
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
    first = repro_in_two_copies(root, dvc)
    return root, dvc, first, netlog


SIDE_PREFIXES = ("ragcontrol_", "fairrank_")  # their chains take about as long as ragfair + intersect + cscl
CROSS_PAPER = ("cards", "report")


def repro_in_two_copies(root: Path, dvc) -> subprocess.CompletedProcess:
    """The first `dvc repro` of the copy at ``root``, on both cores: DVC runs one stage at a time and locks its
    repository, and the other test worker finishes long before this fixture. A second copy (same params.yaml, the
    same embedding cache) builds the ragcontrol and fairrank chains meanwhile; their outputs, dvc.lock entries and
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


def read_bytes(root: Path, *rels: str) -> dict[str, bytes]:
    return {r: (root / r).read_bytes() for r in rels}


OUTPUTS = ["reports/ragfair/seat/seat_results.csv", "reports/ragfair/seat/metrics.json",
           "reports/ragfair/01_seat_audit.ipynb", "reports/data/datasets.csv"]
INTERSECT_OUTPUTS = ["reports/intersect/05_train_indic-srk4-C1.ipynb", "reports/intersect/train/indic-srk4-C1.json",
                     "data/models/intersect/indic-srk4-C1/model.safetensors",
                     "data/models/intersect/indic-srk4-C1/biaslab_run.json"]


def test_pipeline_outputs_exist_and_are_sane(pipeline):
    root, _, first, _ = pipeline
    assert "Running stage 'fetch'" in first.stdout and "Running stage 'ragfair_seat'" in first.stdout
    table = pd.read_csv(root / "reports/ragfair/seat/seat_results.csv")
    assert table["test"].tolist() == TINY_TESTS  # in the order params.yaml lists them
    assert table.set_index("test").loc["weat6", "p_method"] == "exact"
    assert table.set_index("test").loc["sent-weat9", "p_method"] == "sampled"
    assert table["p_value"].between(0, 1).all() and table["fairness_score"].between(0, 1).all()
    assert (table["effect_size"].abs() < 2).all()
    metrics = json.loads((root / "reports/ragfair/seat/metrics.json").read_text())
    assert metrics["all"]["n_tests"] == 2 and metrics["model"] == "minilm"
    png = (root / "reports/ragfair/seat/effect_sizes.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    for nb in ("reports/ragfair/01_seat_audit.ipynb", "reports/data/00_fetch.ipynb"):
        cells = json.loads((root / nb).read_text())["cells"]
        assert not [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        # the values come from params.yaml: the runner injects nothing for a plain stage without overrides
        assert not any("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in cells)
    cells = json.loads((root / "reports/intersect/05_train_indic-srk4-C1.ipynb").read_text())["cells"]
    [injected] = [c for c in cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert "".join(injected["source"]).strip().splitlines()[-1] == 'run = "indic-srk4-C1"'  # only the member
    assert (root / "data/raw/seat/sent-bias_tests/weat6.jsonl").is_file()
    assert not any(root.rglob("*.tmp"))


def test_intersect_outputs_are_sane(pipeline):
    root, _, first, _ = pipeline
    for stage in ("intersect_reference@western", "intersect_paragraphs@indic", "intersect_splits@western",
                  "intersect_triplets@indic", "intersect_train@indic-srk4-C1", "intersect_baselines",
                  "intersect_evaluate"):
        assert f"Running stage '{stage}'" in first.stdout
    labels = pd.read_csv(root / "reports/intersect/reference/western_labels.csv").set_index("label")
    assert labels.loc["race", "ours"] == 30 and labels.loc["unbiased", "ours"] == 60
    sizes = pd.read_csv(root / "reports/intersect/splits/indic_sizes.csv")
    assert set(sizes["subset"]) == {"C1", "C2", "C3"}
    counts = pd.read_csv(root / "reports/intersect/triplets/indic_counts.csv").set_index("curation")
    assert counts.loc["SR-k10", "ours"] > counts.loc["SR-k4", "ours"] > 0
    train = json.loads((root / "reports/intersect/train/indic-srk4-C1.json").read_text())
    assert train["triplets"] == 16 and train["steps"] == 2
    summary = pd.read_csv(root / "reports/intersect/results/summary.csv")
    assert {"BiasRetriever (B4_UB4)", "S-BERT-Base (frozen minilm)", "BERT-MultiLabel (minilm)",
            "Soft-Hamming (minilm)"} <= set(summary["model"])
    assert summary["jaccard_mean"].between(0, 1).all()
    assert set(summary.loc[summary["model"] == "BiasRetriever (B4_UB4)", "domain"]) == {"in-domain", "cross-domain"}
    metrics = json.loads((root / "reports/intersect/results/metrics.json").read_text())
    assert "indic->indic" in metrics["jaccard"] and "indic->western" in metrics["jaccard"]
    chosen = pd.read_csv(root / "reports/intersect/results/k_selection.csv")  # k chosen on validation paragraphs
    assert metrics["k_chosen_on"] == "validation" and chosen.loc[chosen["chosen"], "k"].tolist() == [metrics["k"]]
    base_cross = summary[(summary["model"] == "S-BERT-Base (frozen minilm)") & (summary["domain"] == "cross-domain")]
    assert set(base_cross["test_corpus"]) == {"western"}  # the frozen base's bar beside the cross-domain retriever

    claims = cl.read(root / "reports/intersect/results/claims.csv")
    assert set(claims["verdict"]) <= set(cl.MAGNITUDE_VERDICTS) and len(claims) and claims["mde"].notna().all()
    for fig in ("fig2_in_domain.png", "fig3_cross_domain.png", "fig4_5_k_sweep.png"):
        assert (root / "reports/intersect/results" / fig).read_bytes()[:4] == b"\x89PNG"


def test_ragfair_outputs_are_sane(pipeline):
    root, _, first, _ = pipeline
    for stage in ("ragfair_bbq", "ragfair_diagnosis", "ragfair_pairs", "ragfair_train@lora_wiseft",
                  "ragfair_evaluate"):
        assert f"Running stage '{stage}'" in first.stdout
    check = pd.read_csv(root / "reports/ragfair/bbq/generator_check.csv").iloc[0]
    assert check["category"] == "Religion" and check["same_templates"] and check["same_target_groups"]
    coverage = pd.read_csv(root / "reports/ragfair/bbq/coverage.csv").set_index("category")
    assert coverage.loc["Gender_identity", "source"] == "regenerated"
    probe = pd.read_csv(root / "reports/ragfair/diagnosis/probing.csv")
    assert set(probe["layer"]) == set(range(7)) and probe["bias_mean"].between(-1, 1).all()
    cards = pd.read_csv(root / "reports/ragfair/results/bias_cards.csv").set_index("checkpoint")
    assert len(cards) == 4 and cards.loc["Full framework", "heads_masked"] > 0
    assert cards[["spd", "eod"]].stack().between(0, 1).all() and cards["acc_at_1"].between(0, 100).all()
    corr = json.loads((root / "reports/ragfair/results/correlation.json").read_text())
    assert set(corr) >= {"spd", "eod", "spd_raw", "eod_raw"} and corr["spd"]["rounds"] == 2
    r = corr["eod_raw"]["pearson_r"]
    assert r is None or r != r or -1 <= r <= 1  # NaN when every checkpoint has the same value (tiny data)
    train = json.loads((root / "reports/ragfair/train/lora_wiseft.json").read_text())
    assert train["pairs"] == 16 and train["steps"] == 2

    claims = cl.read(root / "reports/ragfair/results/claims.csv")
    assert set(claims["verdict"]) <= set(cl.MAGNITUDE_VERDICTS) and len(claims) >= 8
    comp = competence.read(root / "reports/ragfair/results/competence.csv")
    assert comp["check"].tolist() == ["the frozen encoder's first context answers the question"]
    if not comp["passed"].all():  # a failed floor leaves every claim untestable
        assert set(claims["verdict"]) == {"untestable"}


def test_ragcontrol_outputs_are_sane(pipeline):
    root, _, first, _ = pipeline
    for stage in ("ragcontrol_data@GenderBias-QA", "ragcontrol_data@PoliticBias-QA", "ragcontrol_train@politics-last1",
                  "ragcontrol_retrieve", "ragcontrol_rag@smollm2", "ragcontrol_rag@smollm2-letter", "ragcontrol_analysis"):
        assert f"Running stage '{stage}'" in first.stdout
    agree = pd.read_csv(root / "reports/ragcontrol/data/PoliticBias-QA_judge_agreement.csv").set_index("lean")
    assert agree.loc["conservative", "% judged conservative"] == 100 and agree.loc["liberal", "% judged liberal"] == 100
    emb = pd.read_csv(root / "reports/ragcontrol/retrieval/embedders.csv")
    assert {"base", "projection", "sampling", "fine-tune"} == set(emb["method"])
    assert set(emb.loc[emb["method"] == "fine-tune", "setting"]) == {"politics-last1@m=0.5"}  # WiSE-FT merge
    assert emb["embedder_bias"].between(-100, 100).all() and emb["ndcg"].dropna().between(0, 1).all()
    rag = pd.read_csv(root / "reports/ragcontrol/rag/smollm2.csv")
    assert (rag["method"] == "no document").sum() == 2 and rag["rag_bias"].between(-100, 100).all()
    assert set(rag["reader"]) == {"smollm2"} and set(rag["reader_model"]) == {"transformers:smollm2-135m-instruct"}
    check = pd.read_csv(root / "reports/ragcontrol/rag/smollm2_generation_check.csv")
    assert check["questions"].tolist() == [1, 1]
    assert rag["questions"].max() <= 4
    fits = pd.read_csv(root / "reports/ragcontrol/results/fits.csv")
    assert {"fine-tune", "projection", "sampling", "all settings"} <= set(fits["method"])
    assert set(fits["reader"]) == {"smollm2", "smollm2-letter"}  # every listed reader, compared in one analysis

    comp = competence.read(root / "reports/ragcontrol/results/competence.csv")
    assert len(comp) == 4 and comp["measure"].eq("answers on the document's side (%)").all()  # 2 tasks x 2 readers
    claims = cl.read(root / "reports/ragcontrol/results/claims.csv")
    assert set(claims["verdict"]) <= set(cl.MAGNITUDE_VERDICTS) and claims["p_value"].notna().all()
    for fig in ("fig_training.png", "fig_projection.png", "fig_alpha_sampling.png", "fig_pareto.png",
                "fig_sensitivity.png"):
        assert (root / "reports/ragcontrol/results" / fig).read_bytes()[:4] == b"\x89PNG"


def test_cscl_outputs_are_sane(pipeline):
    root, *_ = pipeline
    sizes = pd.read_csv(root / "reports/cscl/data/sbic_race_sizes.csv").set_index("split")
    assert sizes["rows"].sum() == 150 and set(sizes.index) == {"train", "val", "test"}
    methods = pd.read_csv(root / "reports/cscl/results/methods.csv")
    # ce + two_stage x2 + one_stage x2 + adversarial + diverse + inlp = 8 settings, per seed
    assert len(methods) == 16 and set(methods["seed"]) == {0, 1}
    assert methods[["f1", "eo_gap"]].notna().all().all() and (methods["eo_gap"] >= 0).all()
    summary = pd.read_csv(root / "reports/cscl/results/summary.csv")
    assert len(summary) == 8 and (summary["seeds"] == 2).all()
    claims = pd.read_csv(root / "reports/cscl/results/claims.csv")
    assert {"claim", "paper_section", "paper_value", "our_value", "ci_low", "ci_high", "verdict"} <= set(claims.columns)
    assert set(claims["verdict"]) <= set(cl.MAGNITUDE_VERDICTS) and len(claims) >= 6
    assert set(claims["kind"]) == {"claim", "check"} and claims["p_value"].notna().any()
    comp = competence.read(root / "reports/cscl/results/competence.csv")  # two checks per setting and variant
    assert len(comp) == 2 * (8 + 6) and comp["check"].str.contains("predicts more than one class").sum() == 14
    gated = claims[claims["verdict"] == "untestable"]
    assert gated["rule"].str.contains("competence check").all()
    assert (root / "reports/cscl/results/fig_tradeoff_sbic_race.png").read_bytes()[:4] == b"\x89PNG"
    preds = pd.read_parquet(root / "data/processed/cscl/predictions/seed1.parquet")
    assert len(preds) == 8 * int(sizes.loc["test", "rows"])  # one prediction per test row and setting
    # RQ3: the default setting (from the main runs) and the three variants, each at λ 0 and 1
    sens = pd.read_csv(root / "reports/cscl/results/sensitivity.csv")
    assert len(sens) == 8 and set(sens["value"]) == {0.0, 1.0} and (sens["seeds"] == 1).all()
    assert {"τ=0.5", "batch=8", "aug=clm_insert", "default (τ=0.1, batch=32, eda)"} == set(sens["variant"])
    assert sens[["f1", "eo_gap"]].notna().all().all()
    assert (claims["paper_section"] == "§4.2 RQ3, Fig. 4").sum() == 7  # 4 ΔEO directions + 3 F1 non-inferiority
    trained = pd.read_csv(root / "reports/cscl/train/sensitivity.csv")
    assert len(trained) == 6  # the default is not retrained
    assert (root / "reports/cscl/results/fig_sensitivity_sbic_race.png").read_bytes()[:4] == b"\x89PNG"


def test_rerun_is_a_no_op_and_forced_rerun_is_byte_identical(pipeline):
    root, dvc, _, _ = pipeline
    assert "Running stage" not in dvc("repro").stdout
    before = read_bytes(root, *OUTPUTS, *INTERSECT_OUTPUTS)
    # sampled permutation statistics and a training stage (no wall-clock may reach its outputs)
    for stage in ("ragfair_seat", "intersect_train@indic-srk4-C1"):
        dvc("repro", "--force", "--single-item", stage)
    after = read_bytes(root, *OUTPUTS, *INTERSECT_OUTPUTS)
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


# a training stage with a folder output (the saved model) at tiny size: ≈ 1 s start-up, then ≈ 8 s in the training
# cell, its first ≈ 6 s importing torch and sentence-transformers — the kill below lands inside it. (fairrank_train@1 was used before: the same checks, 2.5× the rerun.)
KILLED_STAGE = "intersect_train@indic-srk4-C1"
KILL_AFTER_CPU_S = 8.5


def read_tree(root: Path, *rels: str) -> dict[str, bytes]:
    """The bytes of every file under each path (a file, or a folder output)."""
    out = {}
    for rel in rels:
        path = root / rel
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file():
                out[f.relative_to(root).as_posix()] = f.read_bytes()
    return out


def test_a_stage_killed_while_training_leaves_nothing_partial_and_reruns_to_the_same_bytes(pipeline):
    """SIGKILL to `dvc repro` and its notebook kernel while the kernel trains (after ``KILL_AFTER_CPU_S`` of its own
    CPU time: past start-up and data loading, inside the training cell); no output may be half there, and the next
    plain `dvc repro` completes with the bytes of the uninterrupted first run."""
    import signal
    import time

    import psutil

    root, dvc, _, _ = pipeline
    killed_outputs = stage_decl.outs(KILLED_STAGE, root)
    before = read_tree(root, *killed_outputs)
    assert len(before) > len(killed_outputs)  # the files of the folder output (the model) are in it
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dvc"), "repro", "--force", "--single-item",
                             KILLED_STAGE], cwd=root, env=dvc.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    def find_kernel():
        """The stage's notebook kernel (a child of the runner), once it runs; children come and go — git, the
        runner — so one that ends or turns zombie while being read is skipped."""
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "ipykernel" in " ".join(child.cmdline()):
                    return child
        return None

    kernel = None
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, "the stage finished before it could be killed"
            assert time.monotonic() < deadline, "no kernel trained within 10 minutes"
            if kernel is None:
                kernel = find_kernel()
            # CPU seconds into the training cell: the kernel spends ≈ 7 s importing torch and sentence-transformers
            # (the cell's first lines), then ≈ 2–3 s training and saving — about 10–13 s of CPU in all
            with contextlib.suppress(psutil.Error):
                if kernel is not None and sum(kernel.cpu_times()[:2]) > KILL_AFTER_CPU_S:
                    break
            time.sleep(0.1)
    finally:
        # dvc and the runner (one process group) and the kernel (its own session, as jupyter_client starts it) at
        # once: no cleanup code runs anywhere
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if kernel is not None:
            with contextlib.suppress(psutil.Error):
                kernel.kill()
                kernel.wait(timeout=60)
        proc.wait(timeout=60)  # reaped: DVC frees the lock of a process that no longer exists, not of a zombie
    after_kill = read_tree(root, *killed_outputs)  # each output file is absent (DVC removed it to rerun) or whole
    assert all(after_kill[f] == before[f] for f in after_kill), [f for f in after_kill if after_kill[f] != before[f]]
    assert not set(after_kill) - set(before)
    assert KILLED_STAGE in dvc("status").stdout
    dvc("repro")
    assert read_tree(root, *killed_outputs) == before
    assert not [p for p in root.rglob(".*.tmp") if ".dvc" not in p.parts]
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


def test_fairrank_outputs_are_sane(pipeline):
    root = pipeline[0]
    pq = pd.read_csv(root / "reports/fairrank/results/per_query.csv", dtype={"qid": str})
    assert list(pq.columns) == ["ranker", "query_set", "qid", "measure", "value"]
    assert not pq.duplicated(["ranker", "query_set", "qid", "measure"]).any()
    assert pq.groupby("query_set")["qid"].nunique().to_dict() == {"dl19": 43, "dl19_fair": 30}
    names = {"MRR@10", "nDCG@10", "ARaB-tc@10", "ARaB-tc@20", "ARaB-tf@10", "ARaB-tf@20", "ARaB-bool@10", "ARaB-bool@20",
             "NFaiRR@10", "NFaiRR@20"}
    assert names <= set(pq["measure"])
    assert {"bm25", "minilm|base@0", "minilm|penalty_relevant@1", "minilm|lws@0", "minilm|advbert@0"} <= set(pq["ranker"])
    mrr = pq[pq["measure"] == "MRR@10"].groupby("ranker")["value"].mean()
    assert 0.5 < mrr["bm25"] < 0.9  # BM25 on DL19 at grade >= 2
    # different rankers give different rankings (identical numbers would be a bug)
    means = pq[pq["query_set"] == "dl19"].groupby(["ranker", "measure"])["value"].mean().unstack()
    assert not means.duplicated().any()

    claims = cl.read(root / "reports/fairrank/results/claims.csv")
    assert set(claims["verdict"]) <= set(cl.MAGNITUDE_VERDICTS) and len(claims) >= 10
    assert (claims["kind"] == "check").sum() == 1 and claims["p_value"].notna().all()
    tested = claims[(claims["kind"] == "claim") & (claims["verdict"] != "untestable")]
    assert tested["p_adjusted"].notna().all() and (tested["p_adjusted"] >= tested["p_value"]).all()
    comp = competence.read(root / "reports/fairrank/results/competence.csv")
    assert len(comp) == 4 and comp["check"].str.contains("beats BM25").sum() == 2
    gated = claims[claims["rule"].str.contains("competence check")]
    assert (gated["verdict"] == "untestable").all()
    for n in (1, 2):
        tab = pd.read_csv(root / f"reports/fairrank/results/table{n}.csv")
        assert {"bm25", "minilm|penalty_relevant@1"} <= set(tab["ranker"])
        assert (root / f"reports/fairrank/results/table{n}.png").read_bytes()[:4] == b"\x89PNG"
    for fig in ("fig1_lambda.png", "fig2_baselines.png"):
        assert (root / "reports/fairrank/results" / fig).read_bytes()[:4] == b"\x89PNG"
    scores = pd.read_parquet(root / "data/processed/fairrank/scores/seed0.parquet")
    assert scores[scores["split"] == "eval"].groupby("ranker").size().eq(43 * 20).all()
    assert (scores["split"] == "train").any()


def test_bias_cards_cover_every_papers_checkpoints(pipeline):
    root = pipeline[0]
    cards = pd.read_csv(root / "reports/cards/cards.csv").set_index("checkpoint")
    for name in ("base/minilm", "ragfair/lora_wiseft", "intersect/indic-srk4-C1", "ragcontrol/politics-last1",
                 "fairrank/bm25", "fairrank/minilm|penalty_relevant@1", "cscl/sbic_race/ce"):
        assert name in cards.index, name
    encoders = cards[cards["kind"] == "encoder"]
    measures = ["seat_abs_es", "spd", "eod", "acc_at_1", "probe_r2_last", "embedder_bias[GenderBias-QA]",
                "embedder_bias[PoliticBias-QA]", "rank:ARaB-tc@10", "rank:NFaiRR@10", "rank:MRR@10"]
    assert encoders[measures].notna().all().all()
    # a trained encoder is not its base (identical numbers would be a bug)
    base = encoders.loc["base/minilm", measures]
    for name in ("ragfair/lora_wiseft", "ragcontrol/politics-last1"):
        assert not np.allclose(encoders.loc[name, measures].astype(float), base.astype(float)), name
    assert cards.loc["cscl/sbic_race/ce", "eo_gap"] >= 0 and pd.isna(cards.loc["cscl/sbic_race/ce", "spd"])
    # measured at ragcontrol's truncation (cards.max_seq_length = ragcontrol.max_seq_length here), the base encoder's
    # embedder bias is ragcontrol's own (cards.csv keeps 6 significant digits)
    from biaslab.ragcontrol import evaluate as rc_eval

    retrieved = pd.read_parquet(root / "data/processed/ragcontrol/retrieval/retrievals.parquet")
    own = rc_eval.summarise(retrieved[retrieved["setting"] == "base"]).set_index("task")["embedder_bias"]
    for task, value in own.items():
        assert cards.loc["base/minilm", f"embedder_bias[{task}]"] == float(f"{value:.6g}"), task
    changes = pd.read_csv(root / "reports/cards/bias_change.csv")
    assert set(changes["paper"]) >= {"ragfair", "ragcontrol", "fairrank"}
    assert (pd.read_csv(root / "reports/cards/moved.csv")["bias_change"] < 0).all()
    assert (root / "reports/cards/heatmap.png").read_bytes()[:4] == b"\x89PNG"
    assert (encoders["spd_min"] <= encoders["spd"]).all() and (encoders["spd"] <= encoders["spd_max"]).all()
    assert changes.loc[changes["measure"].isin(["spd", "eod"]), "beyond_noise"].notna().all()
    # the re-ranking and embedder-bias changes carry a paired interval; SEAT's do not
    paired = changes[changes["measure"].str.startswith(("rank:", "embedder_bias["))]
    assert len(paired) and paired["ci_low"].notna().all() and (paired["ci_low"] <= paired["ci_high"]).all()
    assert changes.loc[changes["measure"] == "seat_abs_es", "ci_low"].isna().all()
    # `biaslab card` prints the card the stage wrote (the same functions, settings and stored vectors), and its
    # change against the base encoder is the stage's bias_change row
    proc = subprocess.run([sys.executable, "-m", "biaslab.cli", "card", "data/models/ragfair/lora_wiseft", "--json",
                           "--out", str(root.parent / "card")], cwd=root, env=pipeline[1].env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)
    assert json.loads((root.parent / "card" / "lora_wiseft.card.json").read_text()) == printed  # the file = the print
    section = (root.parent / "card" / "lora_wiseft.card.md").read_text()
    assert section.startswith("## Bias evaluation") and "| spd |" in section and "| minilm |" in section
    for m in [*measures, "spd_min", "eod_max"]:
        assert printed[m] == pytest.approx(cards.loc["ragfair/lora_wiseft", m], rel=1e-5), m
    assert printed["against"] == "minilm"
    printed_changes = pd.DataFrame(printed["changes"]).set_index("measure")
    stage = changes[changes["checkpoint"] == "ragfair/lora_wiseft"].set_index("measure")
    assert set(printed_changes.index) == set(stage.index)
    for m in stage.index:
        assert printed_changes.at[m, "bias_change"] == pytest.approx(stage.at[m, "bias_change"], rel=1e-4, abs=1e-9), m
        assert _flag(printed_changes.at[m, "beyond_noise"]) == _flag(stage.at[m, "beyond_noise"]), m
        for c in ("ci_low", "ci_high", "p_value"):  # the same paired resamples and swaps as the stage's
            assert printed_changes.at[m, c] == pytest.approx(stage.at[m, c], rel=1e-4, abs=1e-9, nan_ok=True), (m, c)
    # every tested change carries its adjusted p-value: the stage adjusts over its whole table (the command over its
    # one comparison), and an adjusted p is never below the p it adjusts
    tested = changes["p_value"].notna()
    assert tested.any() and changes.loc[tested, "q_value"].notna().all()
    assert (changes.loc[tested, "q_value"] >= changes.loc[tested, "p_value"] - 1e-12).all()
    assert changes.loc[~tested, "q_value"].isna().all()


def _flag(value) -> bool | None:
    """``beyond_noise`` as read from JSON (true / false / null) or CSV (True / False / empty)."""
    return None if value is None or pd.isna(value) else bool(value)


def test_detect_builds_a_missing_reference_corpus_with_dvc(pipeline):
    """On a fresh clone `biaslab detect` needs the reference corpus the pipeline builds: it runs the stage that writes
    it (DVC, upstream included) instead of failing, and the rebuilt file is the pipeline's bytes."""
    root, dvc, _, _ = pipeline
    ref = root / "data/processed/intersect/indic/reference.parquet"
    before = ref.read_bytes()
    ref.unlink()
    env = tool_env(root, set_root=False, BIASLAB_DATA_MIRROR=str(mirror_dir()))
    proc = subprocess.run([sys.executable, "-m", "biaslab.cli", "detect", "--no-build", "a text", "--model", "minilm",
                           "--reference", "indic", "--k", "1"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1 and "dvc repro intersect_reference@indic" in proc.stderr and not ref.exists()
    proc = subprocess.run([sys.executable, "-m", "biaslab.cli", "detect", "The new library opens on Monday.",
                           "--model", "minilm", "--reference", "indic", "--k", "1", "--json"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "running `dvc repro intersect_reference@indic`" in proc.stderr
    assert json.loads(proc.stdout[proc.stdout.index("["):])[0]["labels"]
    assert ref.read_bytes() == before
    assert "Data and pipelines are up to date" in dvc("status", "intersect_reference@indic").stdout


def test_the_report_covers_every_paper(pipeline):
    root, *_ = pipeline
    readme = (root / "reports/README.md").read_text(encoding="utf-8")
    page = (root / "reports/index.html").read_text(encoding="utf-8")
    for paper in ("ragfair", "intersect", "ragcontrol", "cscl", "fairrank"):
        assert f"## {paper}" in readme and f"<h2 id='{paper}'>" in page
    assert "## Bias cards across papers" in readme and "(cards/heatmap.png)" in readme and "<h2 id='cards'>" in page
    for link in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (root / "reports" / link).is_file(), link


@pytest.fixture(scope="module")
def executor(request):
    """The sweep test's scheduler: a real SLURM cluster where one can start here (tests/slurm_cluster.py), else
    submitit's LocalExecutor (the local and debug executors are also covered on a toy grid in test_sweep.py)."""
    import slurm_cluster

    return ("local", None) if slurm_cluster.missing() else ("slurm", request.getfixturevalue("slurm"))


def test_a_sweep_runs_grid_members_as_scheduler_jobs_and_dvc_calls_them_current(pipeline, executor):
    """`biaslab sweep` on the real cscl grid, as SLURM jobs where a cluster can start here: a member whose outputs
    are gone (a lost cache, a fresh machine) runs as a job, the member DVC calls current does not, the job writes the
    bytes the first `dvc repro` wrote, so the collecting analysis stays current, and DVC calls the target and its
    upstream current. On SLURM, the job id is in the sweep's log and the sweep file's resources are the job's.
    (A new member's rows collected into the analysis tables: tests/test_sweep.py on a toy DVC grid. This test once
    added a seed instead, which reran the analysis and sensitivity stages twice: ≈ 1.5 min of the test budget.)"""
    kind, cluster = executor
    root, dvc, _, _ = pipeline
    (root / "sweep.yaml").write_text(yaml.safe_dump({
        "targets": ["cscl_analysis"],
        "fan_out": {"cscl_train": {"timeout_min": 20, "cpus_per_task": 2, "mem_gb": 4, "gpus_per_node": 0}}}))
    env = tool_env(root, set_root=False, BIASLAB_DATA_MIRROR=str(mirror_dir()))
    lost = stage_decl.outs("cscl_train@1", root)
    # tables, features and checkpoints (an executed training notebook's bytes: the forced-rerun test)
    outs = [p for p in lost if not p.endswith(".ipynb")]
    first = read_tree(root, *outs)
    assert first
    for rel in lost:
        shutil.rmtree(root / rel) if (root / rel).is_dir() else (root / rel).unlink()
    proc = subprocess.run([sys.executable, "-m", "biaslab.cli", "sweep", "sweep.yaml", "--executor", kind,
                           "--jobs", "2", "--folder", str(root.parent / "sweeps")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in proc.stdout.splitlines()
           if line.startswith("| ") and not line.startswith("| stage")}
    assert ran["cscl_train@1"] == "job" and ran["cscl_train@0"] == ran["cscl_analysis"] == "current"
    assert {stage for stage, how in ran.items() if how != "current"} == {"cscl_train@1"}
    assert list((root.parent / "sweeps" / "cscl_train").glob("*_log.out"))  # submitit's own job logs
    assert read_tree(root, *outs) == first
    if cluster is not None:
        job_id = re.search(r"cscl_train@1 \(job (\S+)\)", (root.parent / "sweeps" / "sweep.log").read_text())[1]
        job = cluster.job(job_id)
        assert (job["JobState"], job["TimeLimit"], job["NumCPUs"], job["MinMemoryNode"]) == (
            "COMPLETED", "00:20:00", "2", "4G"), job
    assert "Data and pipelines are up to date" in dvc("status", "--with-deps", "cscl_analysis").stdout
