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


def test_keep_coldest_takes_the_record_that_embedded_most_and_the_later_on_ties(tmp_path):
    cold = log(tmp_path / "cold.jsonl", rec("ragfair_evaluate", 590.0, hits=20, unique=100), rec("report", 2.0))
    warm = log(tmp_path / "warm.jsonl", rec("ragfair_evaluate", 77.0, hits=100, unique=100), rec("report", 1.5))
    s = bench.summarise([cold, warm], ["ragfair_evaluate", "report"], keep="coldest")
    assert s["per_stage"]["ragfair_evaluate"]["wall_s"] == 590.0  # 80 texts encoded beats 0
    assert s["per_stage"]["ragfair_evaluate"]["embedding_hit_rate"] is None  # as logged (this fixture has none)
    assert s["per_stage"]["report"]["wall_s"] == 1.5 and s["record_kept"] == "coldest"  # no embeddings: the later
    assert bench.summarise([cold, warm], ["ragfair_evaluate"])["per_stage"]["ragfair_evaluate"]["wall_s"] == 77.0
    with pytest.raises(ValueError, match="coldest"):
        bench.summarise([cold], ["report"], keep="fastest")


def test_memory_is_judged_only_when_every_stage_has_a_figure(tmp_path):
    a = log(tmp_path / "a.jsonl", rec("cards", 30.0), rec("report", 3.0, 400.0))
    s = bench.summarise([a], ["cards", "report"])
    assert s["meets"] == {"pipeline_minutes": True, "stage_peak_memory": None}
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    with pytest.raises(SystemExit, match="bad.jsonl, line 1"):
        bench.summarise([tmp_path / "bad.jsonl"], ["cards"])


def test_changed_outputs_compares_output_hashes_of_two_locks_and_lists_modified_tracked_files():
    def lock(**outs):
        return json.dumps({"schema": "2.0", "stages": {
            "a": {"cmd": "x", "deps": [{"path": "lib/x.py", "md5": "d0"}],
                  "outs": [{"path": p, "hash": "md5", "md5": h} for p, h in outs.items()]}}})

    old = lock(**{"data/x.parquet": "1", "reports/t.csv": "2", "reports/gone.csv": "3"})
    new = lock(**{"data/x.parquet": "1", "reports/t.csv": "9", "reports/new.png": "4"})
    c = bench.changed_outputs(old, new, ["dvc.lock", "reports/t.csv"])
    assert c == {"outputs_in_lock": 3, "outputs_with_other_bytes": ["reports/t.csv"],
                 "outputs_only_in_commit": ["reports/gone.csv"], "outputs_only_in_rerun": ["reports/new.png"],
                 "tracked_files_modified": ["reports/t.csv"]}
    assert bench.changed_outputs(old, old, [])["outputs_with_other_bytes"] == []  # a deterministic rerun
    assert bench.lock_outputs("") == {}


def test_the_fresh_clone_benchmark_runs_the_readme_command_1_verbatim():
    assert f"{bench.COMMAND_1}\n" in (REPO / "README.md").read_text(encoding="utf-8")


def test_each_section_names_its_own_machine_and_date_and_keeps_the_others(tmp_path, monkeypatch):
    out = tmp_path / "pipeline.json"
    out.write_text(json.dumps({"noop": {"median_s": 4.2}, "machine": {"cpus": 2}}))
    logfile = log(tmp_path / "t.jsonl", rec("fetch", 3.0))
    monkeypatch.setattr("sys.argv", ["bench_pipeline.py", "--out", str(out), "timings", str(logfile)])
    bench.main()
    result = json.loads(out.read_text())
    assert "machine" not in result and result["noop"] == {"median_s": 4.2}  # the shared, stale block is gone
    machine = result["timings"]["machine"]
    assert machine["cpus"] >= 1 and machine["cpu"] and len(machine["date"]) == 10 and machine["date"][4] == "-"


def test_stages_are_grouped_by_paper():
    assert [bench.paper_of(s) for s in ("ragcontrol_rag@smollm2", "cscl_train@0", "fetch", "cards")] == [
        "ragcontrol", "cscl", "fetch", "cards"]


# --- benchmarks/bench_scaling.py: the sizes its workloads are cut to -----------------------------------------------
spec_s = importlib.util.spec_from_file_location("bench_scaling", REPO / "benchmarks" / "bench_scaling.py")
scaling = importlib.util.module_from_spec(spec_s)
spec_s.loader.exec_module(scaling)


def test_take_draws_a_seeded_fraction_in_order_and_refuses_sizes_outside_zero_one():
    items = list("abcdefghij")
    half = scaling.take(items, 0.5, seed=3)
    assert len(half) == 5 and half == sorted(half) and set(half) <= set(items)
    assert half == scaling.take(items, 0.5, seed=3) and scaling.take(items, 1.0, seed=3) == items
    assert len(scaling.take(items, 0.01, seed=0)) == 1  # never empty
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="fraction"):
            scaling.take(items, bad, seed=0)


def test_scale_probes_cuts_every_probe_set_and_keeps_lists_and_query_set_consistent():
    import pandas as pd

    from biaslab.cards.measure import Probes

    bbq = pd.DataFrame({"category": ["Gender"] * 8, "question_index": [1, 1, 2, 2, 3, 3, 4, 4],
                        "ans0": ["Ann", "Bob"] * 4, "ans1": ["Bob", "Ann"] * 4, "ans2": ["unknown"] * 8,
                        "unknown_loc": [2] * 8, "template": list("aabbccdd")})
    test = pd.DataFrame({"qid": [f"q{i}" for i in range(8)], "question": ["?"] * 8})
    corpus = pd.DataFrame({"text": [f"doc {i}" for i in range(12)]})
    lists = pd.DataFrame({"qid": ["1", "1", "2", "2", "3", "3", "4", "4"], "docid": list("abcdefgh")})
    probes = Probes(bbq_rows=bbq, seat_tests=list(range(6)), card_args={}, embedder_tasks={"T": (test, corpus)},
                    rank_lists=lists, rank_args={"qids": ["1", "2", "3", "4"], "query_set": "s"}, rank_measures=[],
                    perturbation={"rounds": 0, "cosine": 0.99996, "seed": 0})
    half = scaling.scale_probes(probes, bbq, max_rows=8, fraction=0.5, seed=0)
    assert len(half.bbq_rows) == 4 and len(half.seat_tests) == 3
    assert len(half.embedder_tasks["T"][0]) == 4 and len(half.embedder_tasks["T"][1]) == 6
    assert len(half.rank_args["qids"]) == 2 and set(half.rank_lists["qid"]) == set(half.rank_args["qids"])
    # each drawn BBQ group keeps its two rows (a context and its group-swapped twin)
    assert half.bbq_rows.groupby("question_index").size().eq(2).all()
    full = scaling.scale_probes(probes, bbq, max_rows=8, fraction=1.0, seed=0)
    assert len(full.bbq_rows) == 8 and full.rank_lists.equals(lists)


def test_growth_exponent_is_the_log_log_slope():
    assert scaling.growth_exponent([1, 2, 4], [10, 20, 40]) == 1.0
    assert scaling.growth_exponent([1, 2, 4], [3, 12, 48]) == 2.0
    assert scaling.growth_exponent([1, 1], [3, 4]) is None  # one size: no slope


spec_p = importlib.util.spec_from_file_location("bench_perturbation", REPO / "benchmarks" / "bench_perturbation.py")
perturbation = importlib.util.module_from_spec(spec_p)
spec_p.loader.exec_module(perturbation)


def test_the_matched_cosine_changes_about_as_many_decisions_as_bf16_and_decision_changes_are_shares():
    import numpy as np

    from biaslab.ragfair.cards import Card

    shares = {0.99998: 0.0057, 0.99996: 0.0087, 0.99993: 0.012}
    assert perturbation.matched_cosine(shares, 0.0081) == 0.99996
    assert perturbation.matched_cosine(shares, 0.02) == 0.99993
    assert perturbation.matched_cosine({0.9: 0.25, 0.8: 0.75}, 0.5) == 0.9  # a tie: the smaller noise
    a = Card({}, None, {"x": (None, np.array(["s", "n", "u", "s"]), None), "y": (None, np.array(["s", "s"]), None)})
    b = Card({}, None, {"x": (None, np.array(["s", "s", "u", "s"]), None), "y": (None, np.array(["s", "s"]), None)})
    assert perturbation.decisions_changed(a, b) == 0.125  # mean over categories of the changed share


def test_bf16_encoders_autocast_every_pass_into_their_own_store_and_restore_both(tmp_path, monkeypatch):
    import os

    import torch

    from biaslab.embed import Encoder

    monkeypatch.setenv("BIASLAB_CACHE_DIR", "fp32-store")
    seen = []
    monkeypatch.setattr(Encoder, "_encode", lambda self, texts, show, lengths=None: seen.append(torch.is_autocast_enabled("cpu")))
    original = Encoder._encode
    with perturbation.bf16_encoders(tmp_path):
        assert os.environ["BIASLAB_CACHE_DIR"] == str(tmp_path)
        Encoder._encode(None, [], False)
    assert seen == [True] and Encoder._encode is original and os.environ["BIASLAB_CACHE_DIR"] == "fp32-store"


spec_b = importlib.util.spec_from_file_location("bench_batching", REPO / "benchmarks" / "bench_batching.py")
batching = importlib.util.module_from_spec(spec_b)
spec_b.loader.exec_module(batching)


def test_the_batching_benchmark_names_the_texts_whose_vector_changed_and_by_how_much():
    import numpy as np

    ref = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], np.float32)
    other = ref.copy()
    other[1, 0] += np.float32(1e-7)
    assert batching.differing(ref, other, np.array([12, 9, 9])) == {
        "texts": 1, "max_abs_diff": pytest.approx(float(np.float32(0.5 + 1e-7) - np.float32(0.5))), "token_counts": [9]}
    assert batching.differing(ref, ref.copy(), np.array([12, 9, 9])) == {"texts": 0, "max_abs_diff": 0.0,
                                                                         "token_counts": []}


def test_the_batching_benchmark_switches_the_filling_and_the_token_cap_off_and_back(minilm):
    import numpy as np

    from biaslab.embed import Encoder
    from biaslab.embed.batching import filled, model_row_independent

    enc = Encoder(minilm, device="cpu", batch_size=64, cache=False)
    long = [f"passage {i} " + "word " * 200 for i in range(40)]  # one token count, over 100

    def sizes(texts):
        return [(len(idx), len(run)) for idx, run in enc._batches(texts, False, "")]

    capped = sizes(long)
    length = int(enc._token_lengths(long[:1])[0])
    assert len(capped) > 1 and max(n for n, _ in capped) * length <= 4096  # the library caps a batch's tokens
    with batching.uncapped():
        assert sizes(long) == [(40, 40)]
    # "Hi." is 4 tokens with [CLS] and [SEP]: copies up to a product this CPU computes row-independently
    n = len(filled(np.array([0]), 4, model_row_independent(minilm)))
    assert sizes(["Hi."]) == [(1, n)]
    with batching.unfilled():
        assert sizes(["Hi."]) == [(1, 1)]
    assert sizes(["Hi."]) == [(1, n)] and sizes(long) == capped  # restored
