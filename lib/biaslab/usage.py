"""Embedding-cache use of a stage run, for the timings log (never an output).

The runner names a file in ``BIASLAB_EMBED_STATS`` while it logs timings; every :class:`biaslab.embed.Encoder`
call then appends one JSON line (model, texts asked for, distinct texts, cache hits), and the runner adds the
totals to the stage's timings record (``biaslab timings`` prints the hit rate). A module of its own so that the
runner does not import the embedding stack.
"""

from __future__ import annotations

import json
import os

STATS_ENV = "BIASLAB_EMBED_STATS"


def record_usage(model: str, kind: str, texts: int, unique: int, hits: int) -> None:
    """Append one usage line to the file named by ``BIASLAB_EMBED_STATS`` (no-op when unset)."""
    path = os.environ.get(STATS_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"model": model, "kind": kind, "texts": texts, "unique": unique, "hits": hits}) + "\n")


def usage_summary(path: str | os.PathLike) -> dict:
    """Totals of the lines :func:`record_usage` wrote: texts, distinct texts, cache hits, encoded, hit rate (hits
    over distinct texts) — overall and per model."""
    def empty():
        return {"texts": 0, "unique": 0, "hits": 0}

    total, per_model = empty(), {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                for acc in (total, per_model.setdefault(r["model"], empty())):
                    for k in ("texts", "unique", "hits"):
                        acc[k] += r[k]

    def finish(acc):
        return {**acc, "encoded": acc["unique"] - acc["hits"],
                "hit_rate": round(acc["hits"] / acc["unique"], 4) if acc["unique"] else None}

    return {**finish(total), "models": {m: finish(a) for m, a in sorted(per_model.items())}}
