"""How large is a change of arithmetic for ragfair's BBQ measurements, and which noise matches it?

    python benchmarks/bench_perturbation.py [--cosines 0.99998 0.99996 0.99995 0.99993] [--rounds 20]

Every checkpoint of ``ragfair_evaluate`` is measured twice with the stage's own functions
(:func:`biaslab.ragfair.evaluation.evaluate`, the sent-bias SEAT tests left out: only BBQ is compared) — in fp32, as
the pipeline does, and with every encoder forward pass under ``torch.autocast("cpu", dtype=torch.bfloat16)``, the
arithmetic ``bench_backends`` found 1.7-1.9x faster. The bf16 vectors go to a temporary embedding store that is
deleted afterwards; they never meet the pipeline's fp32 store. Then:

* **bf16's change**: cosine between each text's two vectors, the share of top-1 retrieval decisions that changed,
  each checkpoint's SPD / EOD under both, and the intrinsic-extrinsic correlation r (z-scored protocol) under both
  and with one side swapped (fp32 SEAT with bf16 SPD, and the reverse) — which side carries a change of r;
* **isotropic noise** (:func:`biaslab.ragfair.perturb.perturbation_check`) at each ``--cosines`` value: the share
  of decisions it changes and the range of r over ``--rounds`` re-measurements.

``matched_cosine`` is the listed cosine whose decision-change share is closest to bf16's: the reading behind
``ragfair.evaluate.perturbation_cosine`` (``params_cosine`` says what params.yaml holds). Needs the ragfair stages'
outputs (``dvc repro ragfair_evaluate``). About 6 min here: the bf16 pass encodes every text and layer afresh.
Writes ``benchmarks/results/perturbation.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def bf16_encoders(store: Path):
    """Every :class:`biaslab.embed.Encoder` forward pass under bfloat16 autocast, vectors kept in ``store``."""
    from unittest import mock

    import torch

    from biaslab.embed import Encoder

    def under_autocast(fn):
        def run(self, *args, **kwargs):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return fn(self, *args, **kwargs)
        return run

    with (mock.patch.dict(os.environ, {"BIASLAB_CACHE_DIR": str(store)}),
          mock.patch.object(Encoder, "_encode", under_autocast(Encoder._encode)),
          mock.patch.object(Encoder, "_encode_layers", under_autocast(Encoder._encode_layers))):
        yield


def decisions_changed(card_a, card_b) -> float:
    """Share of rows whose retrieved answer role differs between two cards of one checkpoint."""
    return float(np.mean([np.mean(card_a.decisions[c][1] != card_b.decisions[c][1]) for c in card_a.decisions]))


def matched_cosine(shares: dict[float, float], target: float) -> float:
    """The cosine whose decision-change share is closest to ``target`` (the larger cosine on a tie)."""
    return min(shares, key=lambda c: (abs(shares[c] - target), -c))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--cosines", type=float, nargs="+", default=[0.99998, 0.99996, 0.99995, 0.99993])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)

    import pandas as pd

    from biaslab import config, models
    from biaslab.ragfair import bbq_seat, cards, evaluation, extrinsic, perturb

    P = config.stage_params({}, "ragfair_evaluate", ROOT, check_hash_seed=False)
    E, T, H = P.ragfair.evaluate, P.ragfair.train, P.ragfair.head_mask
    bbq_path = ROOT / "data/processed/ragfair/bbq.parquet"
    if not bbq_path.is_file():
        print(f"{bbq_path} not found: run `dvc repro ragfair_evaluate` first", file=sys.stderr)
        return 2
    base_dir = models.preflight([T.base_model], P.models)[T.base_model]
    bbq = pd.read_parquet(bbq_path)
    rows, _, card_args = cards.evaluation_setup(bbq, P, ROOT)
    mask_sets = bbq_seat.seat_sets(bbq[(bbq["split"] == "train") & bbq["category"].isin(H.seat_categories)])
    checkpoints = evaluation.checkpoint_list(E.checkpoints, T.runs, E.include_all_runs)

    def measure():
        return evaluation.evaluate(checkpoints, base_dir=base_dir, models_dir=ROOT / "data/models/ragfair",
                                   evaluation=rows, mask_sets=mask_sets, mask_fraction=H.fraction, seat_tests=None,
                                   device=P.common.device, batch_size=P.common.batch_size, card_args=card_args)

    fp32, _, vec32 = measure()
    with tempfile.TemporaryDirectory() as store, bf16_encoders(Path(store)):
        bf16, _, vec16 = measure()

    per_cat = {k: evaluation.per_category(c) for k, c in (("fp32", fp32), ("bf16", bf16))}

    def r(intr: str, extr: str, ext: str) -> float:
        return extrinsic.correlate(per_cat[intr][["checkpoint", "category", "bbq_seat_abs_es"]],
                                   per_cat[extr][["checkpoint", "category", ext]], value_int="bbq_seat_abs_es",
                                   value_ext=ext)["pearson_r"]

    cos = np.concatenate([np.einsum("ij,ij->i", *(np.stack([v[t] for t in vec32[n]]) for v in (vec32[n], vec16[n])))
                          for n in vec32])
    changed = {n: decisions_changed(fp32[n], bf16[n]) for n in fp32}
    out: dict = {
        "checkpoints": len(fp32), "rows": len(rows), "params_cosine": E.perturbation_cosine,
        "bf16": {
            "vector_cosine": {"mean": float(cos.mean()), "p5": float(np.percentile(cos, 5)), "min": float(cos.min())},
            "decisions_changed": float(np.mean(list(changed.values()))),
            "decisions_changed_per_checkpoint": changed,
            "spd": {n: [fp32[n].summary["spd"], bf16[n].summary["spd"]] for n in fp32},
            "eod": {n: [fp32[n].summary["eod"], bf16[n].summary["eod"]] for n in fp32},
            "r": {ext: {"fp32": r("fp32", "fp32", ext), "bf16": r("bf16", "bf16", ext),
                        "fp32_seat_bf16_extrinsic": r("fp32", "bf16", ext),
                        "bf16_seat_fp32_extrinsic": r("bf16", "fp32", ext)} for ext in ("spd", "eod")},
        },
        "noise": {},
    }
    print(json.dumps(out["bf16"]["r"], indent=1), f"bf16 changed {out['bf16']['decisions_changed']:.4f}")
    for c in args.cosines:
        frames, stab = perturb.perturbation_check(fp32, rows, vec32, rounds=args.rounds, cosine=c, seed=P.common.seed)
        rs = {ext: [extrinsic.correlate(per_cat["fp32"][["checkpoint", "category", "bbq_seat_abs_es"]], e,
                                        value_int="bbq_seat_abs_es", value_ext=ext)["pearson_r"] for _, e in frames]
              for ext in ("spd", "eod")}
        out["noise"][str(c)] = {"decisions_changed": float(stab["decisions_changed"].mean()),
                                "r": {ext: {"p2.5": float(np.nanpercentile(v, 2.5)),
                                            "p97.5": float(np.nanpercentile(v, 97.5)), "min": float(np.nanmin(v))}
                                      for ext, v in rs.items()}}
        print(f"cosine {c}: changed {out['noise'][str(c)]['decisions_changed']:.4f}, r {out['noise'][str(c)]['r']}")
    out["matched_cosine"] = matched_cosine({float(c): v["decisions_changed"] for c, v in out["noise"].items()},
                                           out["bf16"]["decisions_changed"])
    from biaslab.io import write_json

    path = write_json(ROOT / "benchmarks/results/perturbation.json", out)  # atomic; keys sorted like every results file
    print(f"matched cosine {out['matched_cosine']} (params.yaml: {E.perturbation_cosine}); wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
