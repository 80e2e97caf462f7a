"""fairrank's document terms and ranking measures on hand-worked rankings: ARaB (TC / TF / Bool, male − female),
NFaiRR against a background, the gendered-term gap and MRR@10 sorted by score — including passages without
gendered words, rankings shorter than the cut-off, empty rankings and non-integer ids."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biaslab.fairrank import bias, metrics

DEFN = pd.DataFrame({"word": ["she", "her", "woman", "he", "his", "man"], "gender": list("fffmmm")})
REP = pd.DataFrame({"word": ["she", "her", "he", "him"], "gender": list("ffmm")})
DOCS = pd.DataFrame({"docid": ["doc-a", "D_2", "x3", "44"],
                     "text": ["She is a woman", "he and his man", "the cat sat", "she she he"]})


def terms():
    return bias.document_terms(DOCS, DEFN, REP, neutrality_threshold=1)


def test_document_terms_and_psi_zeta():
    t = terms().set_index("docid")
    assert t.loc["doc-a", ["def_f", "def_m"]].tolist() == [2, 0]
    assert t.loc["D_2", ["def_f", "def_m"]].tolist() == [0, 3]
    assert t.loc["x3", ["def_f", "def_m", "rep_f", "rep_m"]].tolist() == [0, 0, 0, 0]
    assert t["psi"].tolist() == [1.0, -1.0, 0.0, 0.0]  # "44": she and he both present -> 1 - 1
    assert bias.psi(np.array([2, 0, 1]), np.array([0, 3, 1]), "abs").tolist() == [1.0, 1.0, 0.0]
    # ζ: "44" has 2 f + 1 m representative words (> τ = 1): 1 − (|2/3 − ½| + |1/3 − ½|) = 2/3
    assert t.loc["44", "zeta"] == pytest.approx(2 / 3)
    assert t.loc["x3", "zeta"] == 1.0  # no gendered word
    assert t.loc["D_2", "zeta"] == 1.0  # one representative word ("he"; "his" is not one here): ≤ τ, neutral

def test_zeta_threshold_and_one_gender():
    assert bias.neutrality(np.array([1, 0, 0, 3]), np.array([0, 1, 2, 3]), 1).tolist() == [1.0, 1.0, 0.0, 1.0]


def test_empty_word_list_fails_clearly():
    with pytest.raises(ValueError, match="empty"):
        bias.document_terms(DOCS, DEFN.iloc[:0], REP, neutrality_threshold=1)
    with pytest.raises(ValueError, match="no m words"):
        bias.document_terms(DOCS, DEFN[DEFN["gender"] == "f"], REP, neutrality_threshold=1)


def test_arab_hand_worked():
    t = terms()
    r = {"q": ["doc-a", "D_2", "x3"]}
    # per document m − f: tc −2, +3, 0 -> RaB@1..3 = −2, 0.5, 1/3
    assert metrics.arab(r, t, cutoff=3, kind="tc")["q"] == pytest.approx((-2 + 0.5 + 1 / 3) / 3)
    assert metrics.arab(r, t, cutoff=3, kind="bool")["q"] == pytest.approx((-1 + 0 + 0) / 3)
    tf = [-math.log(3), math.log(4), 0.0]
    rab = [tf[0], sum(tf[:2]) / 2, sum(tf) / 3]
    assert metrics.arab(r, t, cutoff=3, kind="tf")["q"] == pytest.approx(sum(rab) / 3)
    # shorter than the cut-off: RaB@t for t > n stays RaB@n
    assert metrics.arab({"q": ["doc-a", "D_2"]}, t, cutoff=5, kind="tc")["q"] == pytest.approx((-2 + 0.5 * 4) / 5)
    assert math.isnan(metrics.arab({"q": []}, t, cutoff=10, kind="tc")["q"])


def test_nfairr_hand_worked():
    t = terms().assign(zeta=[2 / 3, 0.0, 1.0, 1.0])  # fixed neutralities for the arithmetic
    bg = {"q": ["doc-a", "D_2", "x3", "44"]}
    got = metrics.nfairr({"q": ["D_2", "doc-a", "x3"]}, t, bg, cutoff=2)["q"]
    assert got == pytest.approx((0 + (2 / 3) / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert metrics.nfairr({"q": ["x3", "44"]}, t, bg, cutoff=2)["q"] == pytest.approx(1.0)
    assert math.isnan(metrics.nfairr({"q": ["x3"]}, t, {}, cutoff=2)["q"])  # no background


def test_unknown_document_is_named():
    with pytest.raises(KeyError, match="'nope'"):
        metrics.arab({"q": ["doc-a", "nope"]}, terms(), cutoff=10, kind="tc")


def test_gender_term_gap():
    t = terms()
    got = metrics.gender_term_gap({"q": ["doc-a", "x3"]}, t, cutoff=10)["q"]
    assert got == pytest.approx((100 * 2 / 4 + 0) / 2)
    # a mean over the top k: a ranker that only reorders them keeps it (ARaB, rank-weighted, moves), which is why
    # fairrank's regularised rankers share the base's GenderTerms@10 on dl19_fair (docs/fairrank.md)
    one, two = {"q": ["doc-a", "D_2", "x3"]}, {"q": ["x3", "D_2", "doc-a"]}
    assert metrics.gender_term_gap(one, t, cutoff=3) == metrics.gender_term_gap(two, t, cutoff=3)
    assert metrics.arab(one, t, cutoff=3, kind="tc") != metrics.arab(two, t, cutoff=3, kind="tc")


def test_mrr_sorts_by_score_not_file_order():
    qrels = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2"], "docid": ["a", "b", "c", "z"], "relevance": [2, 0, 3, 2]})
    run = pd.DataFrame({"qid": ["q1"] * 3, "docid": ["a", "b", "c"], "score": [1.0, 3.0, 2.0]})  # ranks: b, c, a
    assert metrics.mrr(run, qrels, ["q1", "q2"], cutoff=10, relevance=2) == {"q1": 0.5, "q2": 0.0}
    assert metrics.mrr(run, qrels, ["q1"], cutoff=10, relevance=3) == {"q1": 0.5}


def test_per_query_long_rows_and_names():
    t = terms()
    run = pd.DataFrame({"qid": ["7"] * 3, "docid": ["doc-a", "D_2", "x3"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["7"], "docid": ["D_2"], "relevance": [2]})
    out = metrics.per_query(run, qrels, t, ["7", "8"], {"7": ["doc-a", "D_2", "x3", "44"]}, cutoffs=[10, 20],
                            mrr_cutoff=10, relevance=2)
    assert set(out["measure"]) == set(metrics.measure_names([10, 20], 10))
    v = out.set_index(["qid", "measure"])["value"]
    assert v[("7", "MRR@10")] == 0.5 and v[("8", "MRR@10")] == 0.0
    assert math.isnan(v[("8", "ARaB-tc@10")])


def test_run_with_duplicate_document_fails():
    run = pd.DataFrame({"qid": ["1", "1"], "docid": ["a", "a"], "score": [1.0, 2.0]})
    with pytest.raises(ValueError, match="twice"):
        metrics.ranked(run)


def test_a_document_listed_twice_in_the_terms_table_fails_clearly():
    t = pd.concat([terms(), terms().iloc[[1]]], ignore_index=True)
    with pytest.raises(ValueError, match="'D_2' more than once"):
        metrics.arab({"q": ["doc-a"]}, t, cutoff=10, kind="tc")


def test_mrr_reads_only_the_ranked_documents_judgments():
    """Judgments of unranked documents change no reciprocal rank (mrr passes only ranked ones to ir_measures): a
    relevant document below the cut-off or not ranked at all scores 0, integer ids work as strings."""
    qrels = pd.DataFrame({"qid": [1, 1, 2, 3], "docid": [10, 99, 20, 30], "relevance": [2, 3, 2, 1]})
    run = pd.DataFrame({"qid": [1] * 11 + [2], "docid": [*range(11), 21], "score": [*range(11, 0, -1), 1.0]})
    # q1: doc 10 is 11th (score 1) -> 0 at @10, 1/11 at @20; doc 99 is judged but unranked
    assert metrics.mrr(run, qrels, ["1", "2", "3"], cutoff=10, relevance=2) == {"1": 0.0, "2": 0.0, "3": 0.0}
    assert metrics.mrr(run, qrels, ["1"], cutoff=20, relevance=2) == {"1": pytest.approx(1 / 11)}
