"""``biaslab detect``: a call that embeds its reference corpus again (the torch path) against one that reads the
index saved on disk and embeds its own texts in NumPy (``biaslab.detect_cache``, ``biaslab.numpy_encoder``).

    python benchmarks/bench_detect.py [--runs 5] [--model M] [--reference indic]

Needs the pipeline's intersect outputs (``dvc repro intersect_train``, or any model with ``--model minilm`` and
``dvc repro intersect_reference@indic intersect_splits@indic``). Each run is a fresh ``python -m biaslab.cli detect``
process with two texts, as a user types it; ``torch path`` runs first remove the saved index (so they embed the
reference, from the warm embedding store, then save it again), ``saved index`` runs keep it. Reports the median
wall time and peak memory of each, their ratio, and whether both print the same labels. Writes
``benchmarks/results/detect.json``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["The new library opens on Monday.", "Women from the village are too emotional to lead."]
CHILD = ("import json, resource, sys; from biaslab import cli; rc = cli.main(sys.argv[1:]); "
         "print(json.dumps({'rc': rc, 'maxrss_kb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}), "
         "file=sys.stderr)")


def one_call(args: list[str]) -> tuple[float, float, list]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    tail = json.loads(proc.stderr.strip().splitlines()[-1])
    if proc.returncode or tail["rc"]:
        raise SystemExit(f"detect failed:\n{proc.stderr[-3000:]}")
    labels = [r["labels"] for r in json.loads(proc.stdout[proc.stdout.index("["):])]
    return wall, tail["maxrss_kb"] / 1024**2, labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", help="as detect's --model (default: the command's)")
    ap.add_argument("--reference", default="indic")
    args = ap.parse_args(argv)

    from biaslab.io import write_json
    from biaslab.paths import cache_dir

    call = ["detect", *TEXTS, "--json", "--reference", args.reference, *(["--model", args.model] if args.model else [])]
    saved = cache_dir() / "detect"
    one_call(call)  # builds what is missing, warms the page cache
    runs: dict[str, list] = {"torch_path": [], "saved_index": []}
    for _ in range(args.runs):  # interleaved, so that a drift of the machine's speed hits both alike
        shutil.rmtree(saved, ignore_errors=True)
        runs["torch_path"].append(one_call(call))
        runs["saved_index"].append(one_call(call))
    from bench_pipeline import machine  # benchmarks/ is on sys.path when this file runs as a script

    out = {"machine": machine(),
           "runs": args.runs, "texts": len(TEXTS), "model": args.model or "detect's default",
           "reference": args.reference}
    for name, rows in runs.items():
        out[name] = {"median_s": round(float(np.median([r[0] for r in rows])), 2),
                     "max_s": round(max(r[0] for r in rows), 2),
                     "peak_gb": round(max(r[1] for r in rows), 2)}
    out["speedup"] = round(out["torch_path"]["median_s"] / out["saved_index"]["median_s"], 1)
    out["same_labels"] = all(a[2] == b[2] for a, b in zip(runs["torch_path"], runs["saved_index"], strict=True))
    print(json.dumps(out, indent=2))
    print(f"wrote {write_json(ROOT / 'benchmarks/results/detect.json', out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
