"""The real pipeline of all five papers through DVC and papermill on tiny parameters (``tests/tiny_pipeline.py``),
with a process-wide guard that refuses any non-loopback network connection: its outputs, the bias cards, `detect`,
the report, a sweep over scheduler jobs, and last a stage killed mid-training and one run without DVC or Jupyter (each
leaves the original as it was built, and checks that it did). The other tests that rerun or break stages are in
``test_integration_reruns.py``, on a private copy, on the other pytest-xdist worker: its unit tests take about as long
as this worker's build, so the two workers' rerun tests are shared to end together (measured on 2 cores, 2026-12-03:
the unit tests 606 s, the build 562 s; the reruns 195 s after them, against this module's 70 s after the build)."""

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

import tiny_pipeline as tiny
from biaslab import claims as cl
from biaslab import competence
from biaslab import stages as stage_decl
from tiny_pipeline import TINY_TESTS, read_tree, tool_env

from conftest import mirror_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """The tiny pipeline, read in place (and restored by any test that changes it)."""
    return tiny.built(tmp_path_factory)


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
    from biaslab import competence

    checks = competence.read(root / "reports/intersect/results/competence.csv")["check"]
    log = pd.read_csv(root / "reports/intersect/results/baselines_log.csv")
    assert len(log) == 4 and set(log["stopped_by"]) <= {"converged", "early_stopping", "max_epochs"}
    assert sum(c.endswith("is trained to convergence") for c in checks) == 4  # two classifiers on each corpus
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


def test_nothing_reached_the_network(pipeline):
    _, _, _, netlog = pipeline
    assert not netlog.exists() or netlog.read_text() == "", netlog.read_text()


def test_fairrank_outputs_are_sane(pipeline):
    root = pipeline[0]
    pq = pd.read_csv(root / "reports/fairrank/results/per_query.csv", dtype={"qid": str})
    assert list(pq.columns) == ["ranker", "query_set", "qid", "measure", "value"]
    assert not pq.duplicated(["ranker", "query_set", "qid", "measure"]).any()
    assert pq.groupby("query_set")["qid"].nunique().to_dict() == {"trecdl": 43, "dl19_fair": 30}
    names = {"MRR@10", "nDCG@10", "ARaB-tc@10", "ARaB-tc@20", "ARaB-tf@10", "ARaB-tf@20", "ARaB-bool@10", "ARaB-bool@20",
             "NFaiRR@10", "NFaiRR@20"}
    assert names <= set(pq["measure"])
    assert {"bm25", "minilm|base@0", "minilm|penalty_relevant@1", "minilm|lws@0", "minilm|advbert@0"} <= set(pq["ranker"])
    mrr = pq[pq["measure"] == "MRR@10"].groupby("ranker")["value"].mean()
    assert 0.5 < mrr["bm25"] < 0.9  # BM25 on DL19 at grade >= 2
    # different rankers give different rankings (identical numbers would be a bug)
    means = pq[pq["query_set"] == "trecdl"].groupby(["ranker", "measure"])["value"].mean().unstack()
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


# a training stage with a folder output (the saved model) at tiny size: ≈ 1 s start-up, then ≈ 8 s in the training
# cell, its first ≈ 6 s importing torch and sentence-transformers — the kill below lands inside it. (fairrank_train@1 was used before: the same checks, 2.5× the rerun.)
KILLED_STAGE = "intersect_train@indic-srk4-C1"


KILL_AFTER_CPU_S = 8.5


def test_a_stage_killed_while_training_leaves_nothing_partial_and_reruns_to_the_same_bytes(pipeline):
    """SIGKILL to `dvc repro` and its notebook kernel while the kernel trains (after ``KILL_AFTER_CPU_S`` of its own
    CPU time: past start-up and data loading, inside the training cell); no output may be half there, and the next
    plain `dvc repro` completes with the bytes of the uninterrupted first run. On a CPU fast enough to finish the
    stage in less kernel time, that finished run is checked for the same bytes and the kill is tried once more,
    1.5 s of CPU before where that run ended."""
    import signal
    import time

    import psutil

    root, dvc, _, _ = pipeline
    killed_outputs = stage_decl.outs(KILLED_STAGE, root)
    before = read_tree(root, *killed_outputs)
    assert len(before) > len(killed_outputs)  # the files of the folder output (the model) are in it

    def repro_killed_after(cpu_s):
        """Start the forced stage and SIGKILL it once its kernel has used `cpu_s` of CPU; the kernel CPU time last
        seen, and whether the kill came before the stage finished."""
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

        kernel, seen, killed = None, 0.0, False
        try:
            deadline = time.monotonic() + 600
            while proc.poll() is None:
                assert time.monotonic() < deadline, "no kernel trained within 10 minutes"
                if kernel is None:
                    kernel = find_kernel()
                # CPU seconds into the training cell: the kernel spends ≈ 7 s importing torch and
                # sentence-transformers (the cell's first lines), then ≈ 2–3 s training and saving — about 10–13 s
                # of CPU in all on the 2-core machine this was sized on
                with contextlib.suppress(psutil.Error):
                    if kernel is not None:
                        seen = max(seen, sum(kernel.cpu_times()[:2]))
                if seen > cpu_s:
                    killed = True
                    break
                time.sleep(0.1)
        finally:
            # dvc and the runner (one process group) and the kernel (its own session, as jupyter_client starts
            # it) at once: no cleanup code runs anywhere
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            if kernel is not None:
                with contextlib.suppress(psutil.Error):
                    kernel.kill()
                    kernel.wait(timeout=60)
            proc.wait(timeout=60)  # reaped: DVC frees the lock of a process that no longer exists, not of a zombie
        return seen, killed

    seen, killed = repro_killed_after(KILL_AFTER_CPU_S)
    if not killed:
        assert read_tree(root, *killed_outputs) == before  # the forced run it could not kill: the same bytes
        assert seen > 3, f"the kernel was seen for only {seen:.1f} s of CPU"
        seen, killed = repro_killed_after(seen - 1.5)
    assert killed, f"the stage finished twice before it could be killed ({seen:.1f} s of kernel CPU)"
    after_kill = read_tree(root, *killed_outputs)  # each output file is absent (DVC removed it to rerun) or whole
    assert all(after_kill[f] == before[f] for f in after_kill), [f for f in after_kill if after_kill[f] != before[f]]
    assert not set(after_kill) - set(before)
    assert KILLED_STAGE in dvc("status").stdout
    dvc("repro")
    assert read_tree(root, *killed_outputs) == before
    assert not [p for p in root.rglob(".*.tmp") if ".dvc" not in p.parts]
    assert "Running stage" not in dvc("repro").stdout


BLOCK_JUPYTER_AND_DVC = """import sys


class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"dvc", "papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "IPython"}:
            raise ImportError(f"{name}: not installed on this machine (blocked by the test)")


sys.meta_path.insert(0, Blocked())
"""


def test_a_stage_runs_plain_without_dvc_or_jupyter_to_the_same_bytes(pipeline):
    """`biaslab run --plain` with the stages frozen beforehand (what a bare GPU image gets from
    scripts/device_bundle.sh), where importing DVC, papermill, Jupytext, nbformat or IPython fails: a training stage
    writes the bytes `dvc repro` wrote — the trained weights too — and DVC still calls it current."""
    root, dvc, _, _ = pipeline
    stage = "ragfair_train@lora_wiseft"
    written = [o for o in stage_decl.outs(stage, root) if not o.endswith(".ipynb")]
    before = read_tree(root, *written)
    frozen = stage_decl.freeze(root.parent / "stages.json", root)
    block = root.parent / "block"
    block.mkdir(exist_ok=True)
    (block / "sitecustomize.py").write_text(BLOCK_JUPYTER_AND_DVC)
    env = tool_env(root, set_root=True, PYTHONPATH=str(block), BIASLAB_STAGES=str(frozen))
    probe = subprocess.run([sys.executable, "-c", "import dvc"], env=env, capture_output=True, text=True)
    assert "blocked by the test" in probe.stderr
    proc = subprocess.run([sys.executable, "-m", "biaslab.run", "--plain", stage], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "plain: no executed notebook" in proc.stdout
    assert read_tree(root, *written) == before
    assert "Running stage" not in dvc("repro", stage).stdout
