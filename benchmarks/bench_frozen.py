"""Shared frozen bottom layers (``biaslab.frozen``): what does a partially fine-tuned embedder cost to encode when
its frozen bottom runs once for all such models, and do its vectors match the full forward pass?

    python benchmarks/bench_frozen.py [--texts 2000] [--models 6] [--queries 200] [--freeze-layers 2]

The case it stands for is ragcontrol's retrieval stage: a last-k-MLP run and its WiSE-FT merges (``--models`` of
them) encode the same corpus. ``full``: each model encodes every text through all layers (sentence-transformers'
``encode``); ``shared``: the base's bottom runs once (its time is counted once, in the total), then each model runs
only its top k layers. Reports texts/s per model for both, the total for ``--models`` models, and cosine / top-1
agreement of the shared vectors with the full ones. Writes ``benchmarks/results/frozen.json``. Run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_backends import agreement  # noqa: E402
from bench_foundation import real_texts  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--models", type=int, default=6, help="partial models sharing one bottom (a run's merges)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--freeze-layers", type=int, default=2, help="the public code's freeze_layers k")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-seq-length", type=int, default=128)
    args = ap.parse_args(argv)

    import torch

    from biaslab import frozen, models
    from biaslab.config import load_params
    from biaslab.embed import Encoder
    from biaslab.io import write_json
    from biaslab.ragcontrol.finetune import freeze_partial

    texts = real_texts(args.texts)
    folder = models.preflight(["minilm"], load_params(ROOT / "params.yaml", sections=["models"]).models)["minilm"]
    base = models.load_sentence_transformer(folder, "cpu")
    base.max_seq_length = args.max_seq_length
    n_layers = base[0].auto_model.config.num_hidden_layers
    tuned = []
    for i in range(args.models):  # stand-ins for a run's merges: the trainable MLPs moved, the bottom kept
        m = copy.deepcopy(base)
        freeze_partial(m, args.freeze_layers)
        gen = torch.Generator().manual_seed(i)
        with torch.no_grad():
            for p in m.parameters():
                if p.requires_grad:
                    p.add_(0.02 * torch.randn(p.shape, generator=gen))
        tuned.append(m)
    base.encode(texts[:128], batch_size=args.batch_size)  # warm-up

    full_s, full_vecs = [], []
    for m in tuned:
        enc = Encoder(m, device="cpu", batch_size=args.batch_size, cache=False)
        t = time.perf_counter()
        full_vecs.append(enc.encode(texts))
        full_s.append(time.perf_counter() - t)

    bottom = frozen.FrozenBottom(base, n_layers - args.freeze_layers, batch_size=args.batch_size)
    t = time.perf_counter()
    bottom.states(texts)
    bottom_s = time.perf_counter() - t
    top_s, agree = [], []
    for m, ref in zip(tuned, full_vecs, strict=True):
        enc = frozen.shared_bottom_encoder(bottom, m, batch_size=args.batch_size)
        enc.cache = None
        t = time.perf_counter()
        vecs = enc.encode(texts)
        top_s.append(time.perf_counter() - t)
        agree.append(agreement(ref, vecs, args.queries))

    n = len(texts)
    out = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                       "threads": torch.get_num_threads()},
           "texts": n, "models": args.models, "freeze_layers": args.freeze_layers, "n_layers": n_layers,
           "max_seq_length": args.max_seq_length,
           "full": {"texts_per_s_per_model": round(n / float(np.median(full_s)), 1), "total_s": round(sum(full_s), 1)},
           "shared": {"bottom_once_s": round(bottom_s, 1),
                      "top_texts_per_s_per_model": round(n / float(np.median(top_s)), 1),
                      "total_s": round(bottom_s + sum(top_s), 1)},
           "agreement_with_full": {"cosine_min": min(a["cosine_min"] for a in agree),
                                   "top1_agreement_min": min(a["top1_agreement"] for a in agree),
                                   "top10_overlap_min": min(a["top10_overlap"] for a in agree)}}
    out["speedup_total"] = round(out["full"]["total_s"] / out["shared"]["total_s"], 2)
    print(json.dumps(out, indent=2))
    print(f"wrote {write_json(ROOT / 'benchmarks/results/frozen.json', out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
