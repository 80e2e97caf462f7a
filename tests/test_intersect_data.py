"""intersect §3.1–3.3: reference corpora, coherence sampling, paragraphs and leak-free C_i splits."""

import numpy as np
import pandas as pd
import pytest

from biaslab.intersect import paragraphs as para
from biaslab.intersect import reference, splits
from biaslab.llm.rules import RuleBased

from conftest import GREEDY


class FakeEncoder:
    """Deterministic bag-of-words vectors (hashing), unit length — enough to test sampling logic."""

    def encode(self, texts):
        out = np.zeros((len(texts), 64), np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, hash(w) % 64] += 1
        out += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


GEN = GREEDY


def indi_pairs():
    return pd.DataFrame({
        "pair_id": [1, 2, 3, 4],
        "sent_more": ["Women are bad at maths.", "Dalits are dirty.", "Old people cannot learn.", "Poor people steal."],
        "sent_less": ["Men are bad at maths.", "Brahmins are dirty.", "Young people cannot learn.",
                      "Rich people steal."],
        "sent_more_hindi": ["a"] * 4, "sent_less_hindi": ["b"] * 4,
        "bias_type": ["gender", "Caste", "age", "socioeconomic"], "stereo_antistereo": ["stereo"] * 4,
    })


def test_indi_reference_offline_uses_released_sentences():
    ref = reference.build_indi_reference(indi_pairs(), RuleBased(), GEN, n_unbiased=2, seed=0)
    biased = ref[ref["label"] != "unbiased"]
    assert biased["text"].tolist() == indi_pairs()["sent_more"].tolist()
    assert set(biased["label"]) == {"gender", "caste", "age", "socioeconomic"}
    unb = ref[ref["label"] == "unbiased"]
    assert len(unb) == 2 and set(unb["text"]) <= set(indi_pairs()["sent_less"])
    # the unbiased rewrite keeps the original label as context
    for _, r in unb.iterrows():
        src = indi_pairs().set_index("sent_less").loc[r["text"]]
        assert r["bias_context"] == src["bias_type"].lower()
    assert ref["ref_id"].is_unique


def sbic_posts():
    rows = [("women belong in kitchens", ["gender"], True), ("black people are lazy", ["race"], True),
            ("fat people are gross", ["body"], True), ("women and black people are dumb", ["gender", "race"], True),
            ("i like my kitchen", [], False), ("people are lazy on sundays", [], False),
            ("gym people are nice", [], False), ("dumb weather today", [], False)]
    return pd.DataFrame({"post": [r[0] for r in rows], "target_category": [r[1] for r in rows],
                         "biased": [r[2] for r in rows], "offensive": [0.9, 0.8, 0.9, 1.0, 0.0, 0.0, 0.0, 0.7],
                         "split": "dev", "row": range(len(rows))})


def test_sbic_sampling_respects_caps_and_uses_each_post_once():
    out = reference.sample_sbic_biased(sbic_posts(), {"race": 1, "gender": 5, "body": 1}, seed=0)
    assert (out["label"] == "race").sum() == 1
    assert len(out) == out["source"].nunique() == 4  # the two-category post is drawn for one label only


def test_sbic_offline_counterpart_is_a_real_unbiased_post():
    ref = reference.build_sbic_reference(sbic_posts(), RuleBased(), GEN, caps={"gender": 2, "race": 2, "body": 1},
                                         n_unbiased=3, seed=0, encoder=FakeEncoder(), max_offensive=0.5,
                                         neutral_pool=0)
    unb = ref[ref["label"] == "unbiased"]
    assert len(unb) == 3 and unb["text"].is_unique
    # real posts without a biased implication and not offensive ("dumb weather today" is excluded)
    assert set(unb["text"]) == {"i like my kitchen", "people are lazy on sundays", "gym people are nice"}
    pooled = [set(reference.build_sbic_reference(sbic_posts(), RuleBased(), GEN, caps={"gender": 2, "race": 2},
                                                 n_unbiased=2, seed=s, encoder=FakeEncoder(), max_offensive=0.5,
                                                 neutral_pool=2).query("label == 'unbiased'")["text"]) for s in range(6)]
    assert all(len(p) == 2 and p < set(unb["text"]) for p in pooled)  # a 2-post sample of the eligible posts
    assert len({frozenset(p) for p in pooled}) > 1  # seeded: the sample follows the seed
    with pytest.raises(ValueError, match="needs an encoder"):
        reference.build_sbic_reference(sbic_posts(), RuleBased(), GEN, caps={"gender": 1}, n_unbiased=1, seed=0,
                                       max_offensive=0.5, neutral_pool=0)


def test_nearest_unused_is_greedy_and_unique():
    cands = np.eye(3, dtype=np.float32)
    queries = np.array([[1, 0, 0], [1, 0.1, 0], [0, 0, 1]], np.float32)
    assert reference.nearest_unused(queries, cands, k=3).tolist() == [0, 1, 2]


def test_label_table_beside_paper():
    t = reference.label_table(pd.DataFrame({"label": ["gender", "gender", "unbiased"]}), {"gender": 5, "age": 1})
    assert t.set_index("label").loc["gender"].tolist() == [2, 5]
    assert pd.isna(t.set_index("label").loc["unbiased", "paper"])


def test_most_coherent_matches_brute_force():
    rng = np.random.default_rng(0)
    pools = [rng.normal(size=(4, 5)) for _ in range(3)]
    pools = [p / np.linalg.norm(p, axis=1, keepdims=True) for p in pools]
    best = max(((i, j, k) for i in range(4) for j in range(4) for k in range(4)),
               key=lambda t: pools[0][t[0]] @ pools[1][t[1]] + pools[0][t[0]] @ pools[2][t[2]]
               + pools[1][t[1]] @ pools[2][t[2]])
    assert para.most_coherent(pools) == best
    assert para.most_coherent([pools[0]]) == (0,)


def test_canonical_categories():
    assert para.canonical(" race+body+social ") == "body+race+social"
    assert para.axes("gender+caste") == ["caste", "gender"]


def toy_reference():
    rows = []
    for lab in ("gender", "caste", "age"):
        rows += [(f"{lab} biased sentence {i}", lab, lab) for i in range(3)]
        rows += [(f"{lab} kind sentence {i}", "unbiased", lab) for i in range(3)]
    ref = pd.DataFrame(rows, columns=["text", "label", "bias_context"])
    ref["ref_id"] = [f"r{i}" for i in range(len(ref))]
    return ref


def test_paragraphs_offline_from_real_sentences():
    out = para.build_paragraphs(toy_reference(), corpus="indic", categories=["gender+caste", "age+gender+caste"],
                                n_biased=5, n_unbiased=3, llm=RuleBased(), gen=GEN, encoder=FakeEncoder(),
                                pool_size=2, seed=1)
    assert len(out) == 8 and out["paragraph_id"].is_unique
    assert out["category"].value_counts().to_dict() == {"caste+gender": 3, "age+caste+gender": 2, "unbiased": 3}
    ref = toy_reference().set_index("ref_id")
    for _, r in out.iterrows():
        seeds = ref.loc[r["seed_ids"]]
        assert all(s in r["text"] for s in seeds["text"])  # composed from the real seed sentences
        if r["category"] == "unbiased":
            assert r["labels"] == ["unbiased"] and sorted(seeds["bias_context"]) == para.axes(r["context"])
            assert (seeds["label"] == "unbiased").all()
        else:
            assert sorted(seeds["label"]) == r["labels"] == para.axes(r["category"])
    with pytest.raises(ValueError, match="needs biased reference sentences labelled"):
        para.build_paragraphs(toy_reference(), corpus="indic", categories=["gender+religion"], n_biased=1,
                              n_unbiased=0, llm=RuleBased(), gen=GEN, encoder=FakeEncoder(), pool_size=2, seed=1)


def toy_paragraphs(per_cat=10, n_unb=20):
    cats = ["a+b", "a+c", "b+c", "a+b+c"]
    rows = [(c, c.split("+")) for c in cats for _ in range(per_cat)] + [("unbiased", ["unbiased"])] * n_unb
    df = pd.DataFrame(rows, columns=["category", "labels"])
    df.insert(0, "paragraph_id", [f"p{i}" for i in range(len(df))])
    return df


def test_splits_follow_section_3_3_and_never_leak():
    p = toy_paragraphs()
    s = splits.make_splits(p, {"C1": ["a+b", "b+a+c"], "C2": ["a+c"]}, seen_train=0.8, unbiased_train=0.7,
                           validation=0, seed=0)
    c1 = s[s["subset"] == "C1"].merge(p, on="paragraph_id")
    assert not (c1["train"] & c1["test_all"]).any()
    seen = c1[c1["category"].isin(["a+b", "a+b+c"])]
    assert seen["train"].sum() == 16 and seen["test_seen"].sum() == 4  # stratified 80/20 of 2 x 10
    assert seen.groupby("category")["train"].sum().tolist() == [8, 8]
    unseen = c1[c1["category"].isin(["a+c", "b+c"])]
    assert unseen["test_unseen"].all() and not unseen["train"].any() and not unseen["test_seen"].any()
    unb = c1[c1["category"] == "unbiased"]
    assert unb["train"].sum() == 14 and (unb["test_seen"] == unb["test_unseen"]).all()
    # the same unbiased paragraphs are held out for every subset
    c2 = s[s["subset"] == "C2"].merge(p, on="paragraph_id")
    held = lambda d: set(d.loc[(d["category"] == "unbiased") & d["test_all"], "paragraph_id"])  # noqa: E731
    assert held(c1) == held(c2)
    with pytest.raises(ValueError, match="not in the corpus"):
        splits.make_splits(p, {"C9": ["x+y"]}, seen_train=0.8, unbiased_train=0.7, validation=0, seed=0)
    with pytest.raises(ValueError, match="too few for a stratified"):
        splits.make_splits(toy_paragraphs(per_cat=2), {"C1": ["a+b", "a+c", "b+c"]}, seen_train=0.8, unbiased_train=0.7,
                           validation=0, seed=0)


def test_validation_share_comes_out_of_training_only():
    p = toy_paragraphs()
    subsets = {"C1": ["a+b", "b+a+c"]}
    whole = splits.make_splits(p, subsets, seen_train=0.8, unbiased_train=0.7, validation=0, seed=0)
    s = splits.make_splits(p, subsets, seen_train=0.8, unbiased_train=0.7, validation=0.25, seed=0)
    splits.check_disjoint(s)
    assert not whole["val"].any()
    # the test sets are the paper's, untouched; validation + train = the paper's D_train,Ci
    for col in ("test_seen", "test_unseen", "test_all"):
        assert s[col].tolist() == whole[col].tolist()
    assert (s["train"] | s["val"]).tolist() == whole["train"].tolist()
    val = s[s["val"]].merge(p, on="paragraph_id")
    assert len(val) == 8 and set(val["category"]) == {"a+b", "a+b+c", "unbiased"}  # 25 % of 16 + 14, stratified


def test_check_disjoint_catches_leaks():
    bad = pd.DataFrame({"subset": ["C1"], "paragraph_id": ["p1"], "train": [True], "test_seen": [True],
                        "test_unseen": [False], "test_all": [True]})
    with pytest.raises(AssertionError, match="both train and test"):
        splits.check_disjoint(bad)
    with pytest.raises(AssertionError, match="both val and test"):
        splits.check_disjoint(bad.assign(train=False, val=True))
