"""The BBQ table every ragfair stage reads: released categories plus regenerated missing ones, and a
stratified subsample that keeps BBQ's counterfactual structure (ragfair §3.1.2, §3.2–3.3)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import bbq as bbq_data
from . import bbq_generate


def build(categories: Sequence[str], raw_dir: str | Path, work_dir: str | Path, *, seed: int,
          max_pairs: int) -> pd.DataFrame:
    """All ``categories``: the released file when the data has it, else regenerated from the templates (column
    ``source`` says which)."""
    released_dir = Path(raw_dir) / "bbq" / "data"
    frames = []
    for cat in categories:
        if cat not in bbq_data.ALL_CATEGORIES:
            raise ValueError(f"unknown BBQ category {cat!r} in ragfair.bbq.categories; "
                             f"known: {', '.join(bbq_data.ALL_CATEGORIES)}")
        if (released_dir / f"{cat}.jsonl").is_file():
            df = bbq_data.load([cat], raw_dir).assign(source="released")
        else:
            df = bbq_generate.regenerate(cat, Path(work_dir) / f"{cat}.jsonl", raw_dir, seed=seed,
                                         max_pairs=max_pairs).assign(source="regenerated")
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def set_keys(bbq: pd.DataFrame) -> pd.Series:
    """A key shared by the rows of one counterfactual group: same category and template, same two named answers
    in either order (so a sample keeps each context together with its group-swapped twin)."""
    answers = bbq[["ans0", "ans1", "ans2"]].to_numpy()
    unknown = bbq["unknown_loc"].to_numpy()
    named = [tuple(sorted(a for j, a in enumerate(row) if j != u)) for row, u in zip(answers, unknown, strict=True)]
    return bbq["category"] + "|" + bbq["question_index"].astype(str) + "|" + pd.Series(
        ["/".join(n) for n in named], index=bbq.index)


def sample(bbq: pd.DataFrame, max_rows_per_category: int | None, seed: int) -> pd.DataFrame:
    """At most ``max_rows_per_category`` rows per category, drawn as whole counterfactual groups
    (:func:`set_keys`) in a seeded order, spread over templates; ``None`` or 0 keeps everything."""
    if not max_rows_per_category:
        return bbq.reset_index(drop=True)
    keys = set_keys(bbq)
    rng = np.random.default_rng(seed)
    keep = []
    for _, g in bbq.groupby("category", sort=True):
        groups = keys[g.index]
        sizes = groups.value_counts()
        order = list(sizes.index)
        rng.shuffle(order)
        # round-robin over templates so a small sample still covers many of them
        by_template: dict[str, list[str]] = {}
        for k in order:
            by_template.setdefault(k.split("|")[1], []).append(k)
        chosen, total = [], 0
        while any(by_template.values()) and total < max_rows_per_category:
            for t in list(by_template):
                if not by_template[t]:
                    continue
                k = by_template[t].pop(0)
                if total + sizes[k] > max_rows_per_category and chosen:
                    by_template[t] = []
                    continue
                chosen.append(k)
                total += sizes[k]
        keep.append(g[groups.isin(chosen)])
    return pd.concat(keep).reset_index(drop=True)


def coverage(bbq: pd.DataFrame) -> pd.DataFrame:
    """Rows and templates per (category, source), and the templates held out for evaluation (``split == eval``)."""
    out = bbq.groupby(["category", "source"]).agg(rows=("example_id", "size"),
                                                   templates=("question_index", "nunique")).reset_index()
    held = bbq[bbq["split"] == "eval"].groupby(["category", "source"])["question_index"].nunique()
    out["eval_templates"] = [int(held.get((c, s), 0)) for c, s in zip(out["category"], out["source"], strict=True)]
    return out
