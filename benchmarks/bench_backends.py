"""Inference backends for the CPU defaults: is there a faster way to embed than plain fp32 torch, and what does it
cost in agreement?

    python benchmarks/bench_backends.py [--texts 2000] [--queries 200] [--rounds 3]

Variants, all on the project's MiniLM (the encoder every paper's CPU default uses):

* ``torch-fp32`` — what every stage does today (the reference);
* ``torch-int8-dynamic`` — ``torch.ao.quantization.quantize_dynamic`` on the Linear layers (int8 weights, fp32
  activations; fbgemm/x86 kernels, AVX2 is enough);
* ``onnx`` / ``onnx-int8`` and ``openvino`` — sentence-transformers' own backends, when they can be loaded next to
  the pinned torch / transformers (they need optimum-onnx or optimum-intel); when they cannot, the reason is
  recorded instead of a number.

For each: throughput (texts per second, best of ``--rounds``), cosine to the fp32 vectors (mean and minimum), and
top-1 / top-10 retrieval agreement with fp32 when ``--queries`` of the texts search the rest. Writes
``benchmarks/results/backends.json``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import real_texts  # noqa: E402


def timed_encode(model, texts: list[str], batch_size: int, rounds: int) -> tuple[np.ndarray, float]:
    model.encode(texts[:128], batch_size=batch_size)  # warm-up
    best, vecs = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        vecs = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True)
        best = min(best, time.perf_counter() - t)
    return np.asarray(vecs, dtype=np.float32), len(texts) / best


def agreement(ref: np.ndarray, other: np.ndarray, n_queries: int) -> dict:
    cos = np.sum(ref * other, axis=1)
    q_ref, d_ref = ref[:n_queries], ref[n_queries:]
    q_o, d_o = other[:n_queries], other[n_queries:]
    top_ref = np.argsort(-(q_ref @ d_ref.T), axis=1)[:, :10]
    top_o = np.argsort(-(q_o @ d_o.T), axis=1)[:, :10]
    overlap10 = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top_ref, top_o, strict=True)])
    return {"cosine_mean": round(float(cos.mean()), 6), "cosine_min": round(float(cos.min()), 6),
            "top1_agreement": round(float(np.mean(top_ref[:, 0] == top_o[:, 0])), 4),
            "top10_overlap": round(float(overlap10), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer

    from biaslab import models
    from biaslab.config import load_params

    texts = real_texts(args.texts)
    folder = models.preflight(["minilm"], load_params(ROOT / "params.yaml", sections=["models"]).models)["minilm"]
    out: dict = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                             "torch": torch.__version__, "threads": torch.get_num_threads()},
                 "texts": len(texts), "queries": args.queries, "variants": {}}

    base = models.load_sentence_transformer(folder, "cpu")
    ref, rate = timed_encode(base, texts, args.batch_size, args.rounds)
    out["variants"]["torch-fp32"] = {"texts_per_s": round(rate, 1)}
    print(f"torch-fp32: {rate:.0f} texts/s")

    q = models.load_sentence_transformer(folder, "cpu")
    q = torch.ao.quantization.quantize_dynamic(q, {torch.nn.Linear}, dtype=torch.qint8)
    vecs, rate = timed_encode(q, texts, args.batch_size, args.rounds)
    out["variants"]["torch-int8-dynamic"] = {"texts_per_s": round(rate, 1),
                                             "speedup": round(rate / out["variants"]["torch-fp32"]["texts_per_s"], 2),
                                             **agreement(ref, vecs, args.queries)}
    print(f"torch-int8-dynamic: {out['variants']['torch-int8-dynamic']}")

    for name, kwargs in (("onnx", {"backend": "onnx"}), ("openvino", {"backend": "openvino"})):
        try:
            m = SentenceTransformer(str(folder), device="cpu", local_files_only=True, **kwargs)
        except Exception as err:
            out["variants"][name] = {"unavailable": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"}
            print(f"{name}: unavailable ({out['variants'][name]['unavailable']})")
            continue
        vecs, rate = timed_encode(m, texts, args.batch_size, args.rounds)
        out["variants"][name] = {"texts_per_s": round(rate, 1),
                                 "speedup": round(rate / out["variants"]["torch-fp32"]["texts_per_s"], 2),
                                 **agreement(ref, vecs, args.queries)}
        print(f"{name}: {out['variants'][name]}")

    path = ROOT / "benchmarks/results/backends.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
