"""C1–C3 data partitions (intersect §3.3, Table 7).

For a subset C_i of seen categories:
* D_train,Ci = a stratified 80 % of the biased paragraphs in C_i + 70 % of the unbiased paragraphs;
* D_test,Ci (``test_seen``) = the other 20 % of C_i + the held-out 30 % unbiased;
* D_test,N−Ci (``test_unseen``) = every biased paragraph of the other categories + the held-out 30 % unbiased;
* D_test,N (``test_all``) = the union of the two.

The unbiased 70/30 split is drawn once per corpus (seeded), so all three subsets hold out the same unbiased
paragraphs. :func:`check_disjoint` is the guarantee that no paragraph is both trained and tested on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from sklearn.model_selection import train_test_split

from .paragraphs import canonical

SETS = ("train", "test_seen", "test_unseen", "test_all")


def make_splits(paragraphs: pd.DataFrame, subsets: Mapping[str, Sequence[str]], *, seen_train: float,
                unbiased_train: float, seed: int) -> pd.DataFrame:
    """Long table: one row per (subset, paragraph) with boolean columns :data:`SETS`."""
    cats = set(paragraphs["category"]) - {"unbiased"}
    unb = paragraphs.loc[paragraphs["category"] == "unbiased", "paragraph_id"]
    unb_train, unb_test = train_test_split(unb.tolist(), train_size=unbiased_train, random_state=seed)
    unb_train, unb_test = set(unb_train), set(unb_test)
    frames = []
    for name, seen_list in subsets.items():
        seen = {canonical(c) for c in seen_list}
        unknown = sorted(seen - cats)
        if unknown:
            raise ValueError(f"subset {name}: categories {unknown} are not in the corpus ({sorted(cats)})")
        in_seen = paragraphs[paragraphs["category"].isin(seen)]
        try:
            tr, te = train_test_split(in_seen["paragraph_id"].tolist(), train_size=seen_train, random_state=seed,
                                      stratify=in_seen["category"].tolist())
        except ValueError as err:
            raise ValueError(f"subset {name}: {len(in_seen)} paragraphs in {len(seen)} seen categories are too few "
                             f"for a stratified {seen_train:.0%} split ({err}); raise n_biased of this corpus in "
                             "intersect.paragraphs.corpora") from None
        tr, te = set(tr), set(te)
        unseen = set(paragraphs.loc[~paragraphs["category"].isin(seen | {"unbiased"}), "paragraph_id"])
        pid = paragraphs["paragraph_id"]
        df = pd.DataFrame({"subset": name, "paragraph_id": pid})
        df["train"] = pid.isin(tr | unb_train)
        df["test_seen"] = pid.isin(te | unb_test)
        df["test_unseen"] = pid.isin(unseen | unb_test)
        df["test_all"] = df["test_seen"] | df["test_unseen"]
        frames.append(df[df[list(SETS)].any(axis=1)])
    out = pd.concat(frames, ignore_index=True)
    check_disjoint(out)
    return out


def check_disjoint(splits: pd.DataFrame) -> None:
    """No paragraph is in a subset's training set and any of its test sets."""
    bad = splits[splits["train"] & splits["test_all"]]
    if len(bad):
        raise AssertionError(f"{len(bad)} paragraphs are in both train and test, e.g. {bad.iloc[0].to_dict()}")


def summary(splits: pd.DataFrame, paragraphs: pd.DataFrame) -> pd.DataFrame:
    """Sizes per subset and set, split into biased / unbiased."""
    m = splits.merge(paragraphs[["paragraph_id", "category"]], on="paragraph_id")
    m["kind"] = m["category"].eq("unbiased").map({True: "unbiased", False: "biased"})
    rows = []
    for (subset, kind), g in m.groupby(["subset", "kind"]):
        rows.append({"subset": subset, "kind": kind, **{s: int(g[s].sum()) for s in SETS}})
    return pd.DataFrame(rows)
