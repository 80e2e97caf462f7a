"""The pipeline benchmark's summary of timings logs (benchmarks/bench_pipeline.py): the figures the README's
speed table is built from."""

import importlib.util
import json

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("bench_pipeline", REPO / "benchmarks" / "bench_pipeline.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def log(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def rec(stage, wall, peak=None, hits=0, unique=0):
    r = {"stage": stage, "wall_s": wall, "outside_cells_s": 1.0, "slowest_cells": [],
         "embeddings": {"hits": hits, "unique": unique}}
    return r | ({"peak_rss_mb": peak} if peak is not None else {})


def test_later_runs_replace_earlier_ones_and_unmeasured_stages_make_the_sum_a_lower_bound(tmp_path):
    stages = ["fetch", "ragfair_seat", "ragfair_train@lora", "ragcontrol_rag@smollm2", "report"]
    old = log(tmp_path / "old.jsonl", rec("ragfair_seat", 100.0, 900.0, hits=10, unique=40),
              rec("ragfair_train@lora", 600.0, 1500.0))
    new = log(tmp_path / "new.jsonl", rec("ragfair_seat", 60.0, 800.0, hits=30, unique=40),
              rec("ragcontrol_rag@smollm2", 1200.0, 5000.0), rec("gone_stage", 5.0))
    s = bench.summarise([old, new], stages)
    assert s["per_stage"]["ragfair_seat"]["wall_s"] == 60.0  # the later log wins
    assert s["sum_s"] == 1860.0 and s["sum_is_lower_bound"] and s["unmeasured"] == ["fetch", "report"]
    assert s["not_in_dvc_yaml"] == ["gone_stage"] and s["logs"] == ["old.jsonl", "new.jsonl"]
    assert s["by_paper_minutes"] == {"ragcontrol": 20.0, "ragfair": 11.0}
    assert s["embedding_store"] == {"hits": 30, "distinct_texts": 40, "hit_rate": 0.75}
    assert s["peak_rss_mb"] == {"max": 5000.0, "stage": "ragcontrol_rag@smollm2", "stages_with_figure": 3}
    assert s["meets"] == {"pipeline_minutes": False, "stage_peak_memory": False}


def test_memory_is_judged_only_when_every_stage_has_a_figure(tmp_path):
    a = log(tmp_path / "a.jsonl", rec("cards", 30.0), rec("report", 3.0, 400.0))
    s = bench.summarise([a], ["cards", "report"])
    assert s["meets"] == {"pipeline_minutes": True, "stage_peak_memory": None}
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    with pytest.raises(SystemExit, match="bad.jsonl, line 1"):
        bench.summarise([tmp_path / "bad.jsonl"], ["cards"])


def test_stages_are_grouped_by_paper():
    assert [bench.paper_of(s) for s in ("ragcontrol_rag@smollm2", "cscl_train@0", "fetch", "cards")] == [
        "ragcontrol", "cscl", "fetch", "cards"]
