"""Encoding batches on this CPU: how fast at each batch size, and does a text's vector depend on the batch it is
encoded in?

    python benchmarks/bench_batching.py [--texts 2000] [--passages 400] [--sizes 1 2 4 16 32 64] [--rounds 2]

``biaslab.embed.Encoder`` encodes the texts missing from the embedding store in batches of equal token count (no
padding), at most ``common.batch_size`` texts and ``biaslab.embed.batching.MAX_BATCH_TOKENS`` tokens each, and fills a batch whose
token rows this CPU multiplies another way (``biaslab.embed.batching.row_independent``) with copies of its own texts. Measured with the
library's Encoder (store off) on the project's MiniLM at ``cards.max_seq_length``, on short real sentences (SEAT,
SBIC, IndiBias) and on GenderBias-QA passages (most cut at the truncation length: what the costliest stages embed):

* **speed** — texts per second at each batch size with no token cap (median of ``--rounds`` interleaved rounds),
  and the library's own setting (``library_default``: ``common.batch_size`` with the cap);
* **bytes** — per batch size, how many texts get a vector that differs in any bit from the one they get at
  ``common.batch_size``: ``filled`` as the library encodes, ``unfilled`` with the filling switched off (what the
  library did before; the matrix products take another kernel for a few rows), with the largest difference and
  the token counts of those texts. The store keeps the first vector a text gets, so a vector that depends on its
  batch makes a stage's bytes depend on what was already stored.

Writes ``benchmarks/results/batching.json``. Run it on an otherwise idle machine (≈ 8 min here).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import text_sets  # noqa: E402


def differing(reference: np.ndarray, vectors: np.ndarray, lengths: np.ndarray) -> dict:
    """Texts whose vector differs in any bit from the reference's: how many, the largest absolute difference of any
    component, and their token counts (sorted, distinct)."""
    bad = np.flatnonzero(~np.all(reference == vectors, axis=1))
    return {"texts": len(bad), "max_abs_diff": float(np.abs(reference - vectors).max()) if len(bad) else 0.0,
            "token_counts": sorted({int(n) for n in lengths[bad]})}


def unfilled():
    """The library's batching without the filling (the state before it)."""
    return mock.patch("biaslab.embed.batching.filled", lambda idx, length, safe: idx)


def uncapped():
    """The library's batching without the token cap (batch size alone decides)."""
    return mock.patch("biaslab.embed.batching.MAX_BATCH_TOKENS", None)


def measure_set(model, texts: list[str], sizes: list[int], reference_size: int, rounds: int) -> dict:
    from biaslab.embed import Encoder

    encoders = {bs: Encoder(model, device="cpu", batch_size=bs, cache=False) for bs in sorted({*sizes, reference_size})}
    ref_enc = encoders[reference_size]
    lengths = ref_enc._token_lengths(texts)
    ref_enc.encode(texts[:64])  # warm-up (thread pools, allocator)
    seconds: dict[int, list[float]] = {bs: [] for bs in encoders}
    filled_v: dict[int, np.ndarray] = {}  # the library's (filled) vectors at each size, uncapped: the timed runs'
    library_s: list[float] = []
    for _ in range(rounds):  # interleaved: every setting sees the same machine state
        with uncapped():
            for bs, enc in encoders.items():
                t = time.perf_counter()
                filled_v[bs] = enc.encode(texts)
                seconds[bs].append(time.perf_counter() - t)
        t = time.perf_counter()
        reference = ref_enc.encode(texts)
        library_s.append(time.perf_counter() - t)
    out = {"texts": len(texts), "mean_tokens": round(float(lengths.mean()), 1), "reference_batch_size": reference_size,
           "library_default": {"texts_per_s": round(len(texts) / float(np.median(library_s)), 1),
                               "seconds": [round(x, 2) for x in library_s]},
           "by_batch_size": {}}
    with uncapped(), unfilled():
        unfilled_v = {bs: enc.encode(texts) for bs, enc in encoders.items()}
    for bs in encoders:
        s = float(np.median(seconds[bs]))
        out["by_batch_size"][str(bs)] = {
            "texts_per_s": round(len(texts) / s, 1), "seconds": [round(x, 2) for x in seconds[bs]],
            "filled_differs_from_reference": differing(reference, filled_v[bs], lengths),
            "unfilled_differs_from_reference": differing(unfilled_v[reference_size], unfilled_v[bs], lengths)}
        r = out["by_batch_size"][str(bs)]
        print(f"  batch {bs:>4}: {r['texts_per_s']:8.1f} texts/s; vectors differing from batch {reference_size}: "
              f"filled {r['filled_differs_from_reference']['texts']}, unfilled "
              f"{r['unfilled_differs_from_reference']}", flush=True)
    print(f"  library default (batch {reference_size}, token cap): {out['library_default']['texts_per_s']} texts/s")
    best = max(encoders, key=lambda bs: out["by_batch_size"][str(bs)]["texts_per_s"])
    out["fastest_batch_size"] = best
    out["fastest_over_uncapped_reference"] = round(out["by_batch_size"][str(best)]["texts_per_s"]
                                                   / out["by_batch_size"][str(reference_size)]["texts_per_s"], 3)
    out["library_over_uncapped_reference"] = round(out["library_default"]["texts_per_s"]
                                                   / out["by_batch_size"][str(reference_size)]["texts_per_s"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--texts", type=int, default=2000, help="short real sentences")
    ap.add_argument("--passages", type=int, default=400, help="GenderBias-QA passages (0 = skip)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 16, 32, 64])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)

    import torch

    from biaslab import models
    from biaslab.config import load_params
    from biaslab.embed import batching

    params = load_params(ROOT / "params.yaml", sections=["common", "models", "cards"])
    model = models.load_sentence_transformer(models.preflight(["minilm"], params.models)["minilm"], "cpu")
    model.max_seq_length = params.cards.max_seq_length
    out: dict = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                             "threads": torch.get_num_threads()},
                 "max_seq_length": params.cards.max_seq_length,
                 "row_dependent_rows": [int(r) for r in np.flatnonzero(~batching.model_row_independent(model))[1:]],
                 "max_batch_tokens": batching.MAX_BATCH_TOKENS}
    sets, out["sets"] = text_sets(args.texts, args.passages)
    for name, texts in sets.items():
        print(f"== {name}: {len(texts)} texts")
        out["sets"][name] = measure_set(model, texts, args.sizes, params.common.batch_size, args.rounds)

    from biaslab.io import write_json

    path = write_json(ROOT / "benchmarks/results/batching.json", out)  # atomic; keys sorted like every results file
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
