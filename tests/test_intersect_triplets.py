"""intersect §3.4–3.5: mining rules, strategies and the offline LLM strategies."""

import numpy as np
import pandas as pd

from biaslab.intersect import triplets as tr
from biaslab.llm.rules import RuleBased

from conftest import GREEDY


def setup(n_per=6, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    labs = ["gender", "caste", "age", "religion", "unbiased"]
    rows, vecs = [], []
    centers = {lab: rng.normal(size=dim) for lab in labs}
    for lab in labs:
        for i in range(n_per):
            ctx = lab if lab != "unbiased" else ["gender", "caste", "age"][i % 3]
            rows.append((f"{lab}-{i}", f"{lab} sentence {i}", lab, ctx))
            vecs.append(centers[lab] + 0.3 * rng.normal(size=dim))
    ref = pd.DataFrame(rows, columns=["ref_id", "text", "label", "bias_context"])
    paragraphs = pd.DataFrame({
        "paragraph_id": ["p0", "p1", "p2"], "text": ["gender and caste story", "age story", "kind story"],
        "labels": [["caste", "gender"], ["age", "gender"], ["unbiased"]],
        "category": ["caste+gender", "age+gender", "unbiased"], "context": ["caste+gender", "age+gender", "age+caste"],
        "seed_ids": [["gender-0", "caste-0"], ["age-1", "gender-1"], ["unbiased-2", "unbiased-1"]]})
    pvecs = np.stack([centers["gender"] + centers["caste"], centers["age"] + centers["gender"], centers["unbiased"]])
    ref_vecs = np.asarray(vecs, np.float32)
    return paragraphs, ref, ref_vecs, pvecs.astype(np.float32)


def test_sr_k_rules():
    paragraphs, ref, rv, pv = setup()
    pools = tr.RankedPools(ref, rv, pv)
    t = tr.mine(paragraphs, ref, pools, k=4, unbiased_negative_share=0.0, seed=0)
    lab = dict(zip(ref["text"], ref["label"], strict=True))
    assert len(t) == 4 * (2 + 2 + 1)  # k per constituent label + k per unbiased anchor
    p0 = t[t["anchor_id"] == "p0"]
    assert {lab[s] for s in p0["positive"]} == {"caste", "gender"}
    assert {lab[s] for s in p0["negative"]} <= {"age", "religion"}
    assert p0["negative"].is_unique  # each label unit takes the next negatives
    p2 = t[t["anchor_id"] == "p2"]
    assert {lab[s] for s in p2["positive"]} == {"unbiased"}
    assert {lab[s] for s in p2["negative"]} <= {"age", "caste"}  # biased, label in the anchor's context
    # positives are the most similar of their label
    unit = lambda m: m / np.linalg.norm(m, axis=-1, keepdims=True)  # noqa: E731
    sims = unit(rv) @ unit(pv[0])  # cosine, as the FAISS index computes it
    gender_rank = ref.index[ref["label"] == "gender"][np.argsort(-sims[ref["label"] == "gender"])][:4]
    assert p0["positive"].iloc[:4].tolist() == ref.loc[gender_rank, "text"].tolist() or \
        p0["positive"].iloc[4:].tolist() == ref.loc[gender_rank, "text"].tolist()


def test_sr_k_un_mixes_unbiased_negatives():
    paragraphs, ref, rv, pv = setup(n_per=40)
    pools = tr.RankedPools(ref, rv, pv)
    t = tr.mine(paragraphs, ref, pools, k=10, unbiased_negative_share=0.2, seed=3)
    lab = dict(zip(ref["text"], ref["label"], strict=True))
    biased_neg = [lab[s] for s in t.loc[t["anchor_category"] != "unbiased", "negative"]]
    share = np.mean([x == "unbiased" for x in biased_neg])
    assert 0.05 < share < 0.4 and all(x not in ("caste", "gender") for x in biased_neg[:20])
    assert tr.mine(paragraphs, ref, pools, k=10, unbiased_negative_share=0.2, seed=3).equals(t)


def test_counterfactual_swaps_terms_and_case():
    table = tr.swap_table({"gender": [["he", "she"], ["man", "woman"]], "religion": [["jewish", "christian", "muslim"]]})
    assert tr.counterfactual("He said the Man is jewish.", table) == "She said the Woman is christian."
    assert tr.counterfactual("The weather is nice.", table) is None


def test_llm_strategies_offline():
    paragraphs, ref, rv, pv = setup()
    ref.loc[ref["label"] == "gender", "text"] = [f"the man number {i} is bad" for i in range(6)]
    pools = tr.RankedPools(ref, rv, pv)
    t, counts = tr.llm_triplets(paragraphs, ref, pools, RuleBased(), GREEDY,
                                attribute_words={"gender": [["man", "woman"]]}, para_vecs=pv, ref_vecs=rv,
                                per_strategy=5, seed=0)
    c = dict(zip(counts["strategy"], counts["triplets"], strict=True))
    assert c["dual_llm"].startswith("skipped") and c["llm_positive_counterfactual"].startswith("skipped")
    cf = t[t["source"] == "mined_positive_counterfactual"]
    assert len(cf) >= 1 and all("woman" in n for n in cf["negative"])
    para = t[t["source"] == "neutral_paraphrase"]
    assert len(para) == 1 and para["positive"].iloc[0] in set(ref["text"])
    neg_ctx = ref.set_index("text").loc[para["negative"].iloc[0], "bias_context"]
    assert neg_ctx not in ("age", "caste")  # unbiased sentence of a disjoint context


def test_counts_table_layout():
    t = tr.counts_table({"srk4": pd.DataFrame(index=range(3))}, "indic")
    assert t.iloc[0].to_dict() == {"curation": "SR-k4", "model": "B4_UB4", "ours": 3, "paper": 31568}


def test_unknown_label_pool_is_empty_not_an_error():
    paragraphs, ref, rv, pv = setup()
    paragraphs.loc[0, "labels"] = ["caste", "klingon"]
    t = tr.mine(paragraphs, ref, tr.RankedPools(ref, rv, pv), k=2, unbiased_negative_share=0.0, seed=0)
    assert len(t[t["anchor_id"] == "p0"]) == 2  # only the caste unit has positives
