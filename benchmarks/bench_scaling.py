"""How the costliest default stages grow with their input: time and peak memory of each stage's
workload at several sizes, each size in a fresh process.

    python benchmarks/bench_scaling.py cards  [--sizes 0.25 0.5 1]     # one bias card (the cards stage's unit)
    python benchmarks/bench_scaling.py reader [--sizes 0.25 0.5 1]     # ragcontrol_rag@smollm2's reader

A size is a fraction of the stage's default input, so 1 is what the default pipeline runs; the data offline are
the whole of what the stages read at the defaults (every test question, every SEAT test, DL19's fairness queries),
so the range is taken below 1 rather than above it. What a size scales:

* ``cards``: every probe set of one encoder card — BBQ evaluation rows (``ragfair.evaluate.max_rows_per_category``
  × size, drawn as whole counterfactual groups, as the stage draws them), SEAT tests, the embedder-bias questions
  and corpus of each task, the ranking queries — measured on the base encoder with the embedding store off (the
  stage itself pays this once per checkpoint: the stage's time is about checkpoints × this).
* ``reader``: the reader subset's questions per task (seeded draw); every (question, document) pair any retrieval
  setting returned for them is scored by the reader with its score cache off. Needs the retrieval stage's outputs.

Per size: wall seconds of the workload (model loading excluded and reported apart), peak resident memory of the
process (``wait4``), and the input counts. ``growth_exponent`` is the least-squares slope of log time against log
size (1 = linear). Results replace their section of ``benchmarks/results/scaling.json``. Run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "scaling.json"
WORKLOADS = ("cards", "reader")


def take(items, fraction: float, seed: int) -> list:
    """A seeded draw of ``round(fraction * len(items))`` items (at least one), in their original order."""
    items = list(items)
    if not 0 < fraction <= 1:
        raise ValueError(f"size {fraction}: a fraction of the default input in (0, 1]")
    n = max(1, round(fraction * len(items)))
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=n, replace=False))
    return [items[i] for i in keep]


def scale_probes(probes, bbq: pd.DataFrame, max_rows: int, fraction: float, seed: int):
    """``probes`` (:class:`biaslab.cards.measure.Probes`) with every probe set cut to ``fraction`` of its size:
    BBQ rows redrawn with ``max_rows * fraction`` per category from ``bbq`` (the evaluation split), SEAT tests,
    each task's questions and corpus, and the ranking queries (their lists and the query set)."""
    from biaslab.ragfair import bbq_build

    qids = take(probes.rank_args["qids"], fraction, seed)
    tasks = {t: (test[test["qid"].isin(take(test["qid"], fraction, seed))].reset_index(drop=True),
                 corpus.iloc[take(range(len(corpus)), fraction, seed)].reset_index(drop=True))
             for t, (test, corpus) in probes.embedder_tasks.items()}
    return replace(probes,
                   bbq_rows=bbq_build.sample(bbq, max(1, round(max_rows * fraction)), seed=seed),
                   seat_tests=take(probes.seat_tests, fraction, seed), embedder_tasks=tasks,
                   rank_lists=probes.rank_lists[probes.rank_lists["qid"].isin(qids)].reset_index(drop=True),
                   rank_args={**probes.rank_args, "qids": qids})


def growth_exponent(sizes, seconds) -> float | None:
    """Slope of log(seconds) on log(size): 1 = time grows linearly with the input, 2 = quadratically."""
    pts = [(math.log(s), math.log(t)) for s, t in zip(sizes, seconds, strict=True) if s > 0 and t > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    x, y = np.array(pts).T
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def _cards(fraction: float) -> dict:
    from biaslab import config
    from biaslab.cards import load, measure

    P = config.load_params(ROOT / "params.yaml",
                           sections=["common", "data", "models", "ragfair", "fairrank", "cards"])
    probes = load.load_probes(ROOT, P)
    bbq = pd.read_parquet(ROOT / "data/processed/ragfair/bbq.parquet")
    probes = scale_probes(probes, bbq[bbq["split"] == "eval"], P.ragfair.evaluate.max_rows_per_category, fraction,
                          P.common.seed)
    t = time.perf_counter()
    enc = load.load_encoder(P.cards.base_models[0], ROOT, P.models, device=P.common.device,
                               batch_size=P.common.batch_size)
    enc.cache = None  # measure the model, not the store
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    measure.encoder_card(enc, "scaling", probes)
    return {"seconds": time.perf_counter() - t, "load_s": load_s,
            "inputs": {"bbq_rows": len(probes.bbq_rows), "seat_tests": len(probes.seat_tests),
                       "task_questions": sum(len(q) for q, _ in probes.embedder_tasks.values()),
                       "task_documents": sum(len(c) for _, c in probes.embedder_tasks.values()),
                       "rank_queries": len(probes.rank_args["qids"]), "rank_pairs": len(probes.rank_lists)}}


def _reader(fraction: float, reader_key: str = "smollm2") -> dict:
    from biaslab import config, models
    from biaslab.ragcontrol import rag, reader

    P = config.load_params(ROOT / "params.yaml", sections=["common", "models", "ragcontrol"])
    C, S = P.ragcontrol, P.ragcontrol.reader
    R = C.readers[reader_key]
    data = ROOT / "data/processed/ragcontrol"
    need = data / "retrieval/retrievals.parquet"
    if not need.is_file():
        raise SystemExit(f"{need} not found: run `dvc repro ragcontrol_retrieve` first")
    retrieved = pd.read_parquet(need)
    subset = pd.read_parquet(data / "retrieval/reader_subset.parquet")
    t = time.perf_counter()
    folder = models.preflight([R.name], P.models)[R.name]
    scorer = reader.OptionScorer(R.name, folder, device=P.common.device, batch_size=S.batch_size, cache=False)
    load_s = time.perf_counter() - t
    pairs, questions = 0, 0
    t = time.perf_counter()
    for task in C.tasks:
        qids = take(subset.loc[subset["task"] == task, "qid"], fraction, P.common.seed)
        test = pd.read_parquet(data / "tasks" / task / "test_questions.parquet").set_index("qid")
        out, _ = rag.answer_task(
            task, rag.task_mode(R, task), test=test,
            corpus=pd.read_parquet(data / "tasks" / task / "corpus.parquet"), retrieved=retrieved, subset=qids,
            scorer=scorer, judge=rag.offline_judge(data / "tasks", task), max_doc_words=S.max_doc_words)
        pairs += len(out)
        questions += len(qids)
    return {"seconds": time.perf_counter() - t, "load_s": load_s,
            "inputs": {"questions": questions, "question_document_pairs": pairs}}


def measure_size(workload: str, fraction: float) -> dict:
    """Run one size in a fresh process; its peak resident memory from ``wait4``."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "_one", workload, repr(fraction)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{workload} at size {fraction} failed (exit {proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    return {"size": fraction, "seconds": round(result["seconds"], 2), "load_s": round(result["load_s"], 2),
            "process_s": round(time.perf_counter() - t, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "inputs": result["inputs"]}


def bench(workload: str, sizes: list[float]) -> dict:
    rows = []
    for s in sizes:  # each size's figures as soon as it is measured
        rows.append(measure_size(workload, s))
        print(json.dumps(rows[-1]), flush=True)
    return {"sizes": rows, "growth_exponent": growth_exponent([r["size"] for r in rows], [r["seconds"] for r in rows]),
            "size_means": "fraction of the stage's default input (1 = the default pipeline)"}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "_one":  # the child of measure_size
        result = {"cards": _cards, "reader": _reader}[sys.argv[2]](float(sys.argv[3]))
        print(json.dumps(result))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("--sizes", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    section = bench(args.workload, args.sizes)
    from biaslab.io import write_json

    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result.update({args.workload: section, "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                                       "python": platform.python_version()}})
    write_json(args.out, result)
    print(json.dumps({k: v for k, v in section.items() if k != "sizes"}, indent=1))


if __name__ == "__main__":
    main()
