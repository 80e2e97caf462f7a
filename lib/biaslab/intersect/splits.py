"""C1–C3 data partitions (intersect §3.3, Table 7).

For a subset C_i of seen categories:
* D_train,Ci = a stratified 80 % of the biased paragraphs in C_i + 70 % of the unbiased paragraphs;
* D_test,Ci (``test_seen``) = the other 20 % of C_i + the held-out 30 % unbiased;
* D_test,N−Ci (``test_unseen``) = every biased paragraph of the other categories + the held-out 30 % unbiased;
* D_test,N (``test_all``) = the union of the two;
* ``val`` — not in the paper: a stratified share ``validation`` of D_train,Ci (biased per category, and unbiased)
  held out of training, so that choices the paper leaves open (the retrieval depth k) are made on data that is
  neither trained on nor tested on. ``validation: 0`` keeps the paper's D_train,Ci whole.

The unbiased 70/30 split is drawn once per corpus (seeded), so all three subsets hold out the same unbiased
paragraphs. :func:`check_disjoint` is the guarantee that no paragraph is both trained and tested on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from sklearn.model_selection import train_test_split

from .paragraphs import canonical

SETS = ("train", "val", "test_seen", "test_unseen", "test_all")
TEST_SETS = {"test_seen": "seen", "test_unseen": "unseen", "test_all": "all"}  # column → the tables' test_set
MAJORITY = "Majority label set"  # the constant classifier of a subset: its training paragraphs' most frequent set


def make_splits(paragraphs: pd.DataFrame, subsets: Mapping[str, Sequence[str]], *, seen_train: float,
                unbiased_train: float, validation: float, seed: int) -> pd.DataFrame:
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
        tr, te = _stratified(in_seen, seed, f"subset {name}: {len(in_seen)} paragraphs in {len(seen)} seen categories "
                             f"are too few for a stratified {seen_train:.0%} split", "raise n_biased of this corpus in "
                             "intersect.paragraphs.corpora", train_size=seen_train)
        va: set = set()
        if validation > 0:
            pool = paragraphs[paragraphs["paragraph_id"].isin(tr | unb_train)]
            _, va = _stratified(pool, seed, f"subset {name}: a stratified {validation:.0%} validation share of its "
                                f"{len(pool)} training paragraphs is impossible", "lower intersect.splits.validation "
                                "or raise n_biased", test_size=validation)
        unseen = set(paragraphs.loc[~paragraphs["category"].isin(seen | {"unbiased"}), "paragraph_id"])
        pid = paragraphs["paragraph_id"]
        df = pd.DataFrame({"subset": name, "paragraph_id": pid})
        df["train"] = pid.isin((tr | unb_train) - va)
        df["val"] = pid.isin(va)
        df["test_seen"] = pid.isin(te | unb_test)
        df["test_unseen"] = pid.isin(unseen | unb_test)
        df["test_all"] = df["test_seen"] | df["test_unseen"]
        frames.append(df[df[list(SETS)].any(axis=1)])
    out = pd.concat(frames, ignore_index=True)
    check_disjoint(out)
    return out


def _stratified(rows: pd.DataFrame, seed: int, what: str, fix: str, **size) -> tuple[set, set]:
    """Paragraph ids of ``rows`` split by ``train_test_split`` stratified by category (``size``: its train_size or
    test_size); an impossible split raises a ValueError saying ``what`` failed, sklearn's reason and the ``fix``."""
    try:
        a, b = train_test_split(rows["paragraph_id"].tolist(), random_state=seed, stratify=rows["category"].tolist(),
                                **size)
    except ValueError as err:
        raise ValueError(f"{what} ({err}); {fix}") from None
    return set(a), set(b)


def check_disjoint(splits: pd.DataFrame) -> None:
    """No paragraph is in more than one of a subset's training, validation and test sets."""
    val = splits.get("val", False)
    for a, b, name in ((splits["train"], splits["test_all"], "train and test"), (splits["train"], val, "train and val"),
                       (val, splits["test_all"], "val and test")):
        bad = splits[a & b]
        if len(bad):
            raise AssertionError(f"{len(bad)} paragraphs are in both {name}, e.g. {bad.iloc[0].to_dict()}")


def summary(splits: pd.DataFrame, paragraphs: pd.DataFrame) -> pd.DataFrame:
    """Sizes per subset and set, split into biased / unbiased."""
    m = splits.merge(paragraphs[["paragraph_id", "category"]], on="paragraph_id")
    m["kind"] = m["category"].eq("unbiased").map({True: "unbiased", False: "biased"})
    rows = []
    for (subset, kind), g in m.groupby(["subset", "kind"]):
        rows.append({"subset": subset, "kind": kind, **{s: int(g[s].sum()) for s in SETS}})
    return pd.DataFrame(rows)
