"""cscl's training step on the frozen-bottom states: where does a step's time go, and what would bf16 autocast or
gradient caching cost?

    python benchmarks/bench_cscl_step.py [--batch 32] [--length 32] [--steps 30] [--trainable-layers 1]

Times forward + backward + AdamW step of the two-stage objective (two views, SupCon + CS-InfoNCE) on random frozen
states, the shapes ``cscl_train`` trains on: plain fp32; fp32 under gradient caching in chunks of 8 (the cost of
the re-encoding pass); and bf16 autocast (``torch.autocast("cpu", torch.bfloat16)``, which only pays where the CPU
has bf16 instructions). Reports sequences/s per variant. Writes ``benchmarks/results/cscl_step.json``. Run it on
an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--trainable-layers", type=int, default=1)
    args = ap.parse_args(argv)

    import torch

    from biaslab import models
    from biaslab.config import load_params
    from biaslab.cscl import train as ct
    from biaslab.io import write_json

    folder = models.preflight(["minilm"], load_params(ROOT / "params.yaml", sections=["models"]).models)["minilm"]
    n_frozen = ct.frozen_count(folder, args.trainable_layers)
    obj = ct.Objective("contrastive", lam=5.0, temperature=0.1)
    gen = torch.Generator().manual_seed(0)
    b, n = args.batch, args.length
    x1, x2 = torch.randn(b, n, 384, generator=gen), torch.randn(b, n, 384, generator=gen)
    mask = torch.ones(b, n, dtype=torch.long)
    y, a = torch.randint(0, 2, (b,), generator=gen), torch.randint(0, 2, (b,), generator=gen)
    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "torch_threads": torch.get_num_threads(), "batch": b, "length": n, "trainable_layers": args.trainable_layers,
           "steps": args.steps, "variants": {}}
    for name, chunk, autocast in (("fp32", 0, False), ("fp32 + gradient cache (chunks of 8)", 8, False),
                                  ("bf16 autocast", 0, True)):
        model = ct.build_model(folder, 2, 2, obj, head_hidden=256, seed=0, n_frozen=n_frozen,
                               grad_cache_chunk=chunk).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ctx = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if autocast else nullcontext
        for step in range(args.steps + 3):  # 3 warm-up steps
            if step == 3:
                start = time.perf_counter()
            with ctx():
                loss = model(x1, mask, y, a, x_2=x2, mask_2=mask)["loss"]
            loss.backward()
            opt.step()
            opt.zero_grad()
        secs = (time.perf_counter() - start) / args.steps
        out["variants"][name] = {"seconds_per_step": round(secs, 4), "sequences_per_s": round(2 * b / secs, 1)}
        print(f"{name}: {secs * 1000:.0f} ms per step, {2 * b / secs:.0f} sequences/s")
    write_json(ROOT / "benchmarks/results/cscl_step.json", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
