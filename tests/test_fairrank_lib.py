"""fairrank's losses against a direct computation, the MS MARCO-format readers (bad input named by file and line,
nothing half written), the training data (disjoint queries, LWS negatives) and the rankers: λ reaches the trainer,
the penalty moves the weights only through Ψ, the adversary and the sampling change the model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from biaslab.data import msmarco
from biaslab.data._schema import DataError
from biaslab.fairrank import losses, prepare

S_POS = torch.tensor([0.3, -0.2, 1.5])
S_NEG = torch.tensor([0.1, 0.4, -1.0])
B_POS = torch.tensor([1.0, 0.0, -1.0])
B_NEG = torch.tensor([-1.0, 1.0, 0.0])


def hinge(pos, neg, m=1.0):
    return float(np.mean([max(0.0, m - p + n) for p, n in zip(pos, neg, strict=True)]))


@pytest.mark.parametrize("mode,sign", [("penalty", 1.0), ("reward", -1.0)])
@pytest.mark.parametrize("target", ["relevant", "irrelevant", "both"])
def test_pairwise_loss_matches_a_direct_computation(mode, sign, target):
    lam = 0.7
    tp, tn = np.tanh(S_POS.numpy()), np.tanh(S_NEG.numpy())
    pos = tp + (sign * lam * B_POS.numpy() if target in ("relevant", "both") else 0)
    neg = tn + (sign * lam * B_NEG.numpy() if target in ("irrelevant", "both") else 0)
    got = float(losses.pairwise_loss(S_POS, S_NEG, B_POS, B_NEG, mode=mode, target=target, lam=lam, margin=1.0))
    assert got == pytest.approx(hinge(pos, neg))


def test_pairwise_without_regulariser_is_eq_12_and_lambda_zero_is_the_same():
    base = hinge(np.tanh(S_POS.numpy()), np.tanh(S_NEG.numpy()))
    assert float(losses.pairwise_loss(S_POS, S_NEG, B_POS, B_NEG, mode="none", target="both", lam=0.0, margin=1.0)) == \
        pytest.approx(base)
    assert float(losses.pairwise_loss(S_POS, S_NEG, B_POS, B_NEG, mode="penalty", target="both", lam=0.0, margin=1.0)) == \
        pytest.approx(base)


@pytest.mark.parametrize("mode,sign", [("penalty", 1.0), ("reward", -1.0), ("none", 0.0)])
@pytest.mark.parametrize("target", ["relevant", "irrelevant", "both"])
def test_pointwise_loss_matches_eqs_29_31(mode, sign, target):
    s, y, b = torch.tensor([0.5, -1.0, 2.0, 0.0]), torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.tensor([1.0, -1.0, 0.5, 1.0])
    lam = 2.0
    want = []
    for si, yi, bi in zip(s.tolist(), y.tolist(), b.tolist(), strict=True):
        applies = {"relevant": yi, "irrelevant": 1 - yi, "both": 1.0}[target]
        z = si + sign * lam * applies * bi
        want.append((1 / (1 + math.exp(-z)) - yi) ** 2)
    assert float(losses.pointwise_loss(s, y, b, mode=mode, target=target, lam=lam)) == pytest.approx(np.mean(want))


def test_penalty_gradient_reaches_the_scores():
    s_pos, s_neg = S_POS.clone().requires_grad_(), S_NEG.clone().requires_grad_()
    losses.pairwise_loss(s_pos, s_neg, B_POS, B_NEG, mode="penalty", target="irrelevant", lam=1.0, margin=1.0).backward()
    assert s_pos.grad.abs().sum() > 0 and s_neg.grad.abs().sum() > 0


def test_bad_loss_arguments():
    with pytest.raises(ValueError, match="negative"):
        losses.pairwise_loss(S_POS, S_NEG, B_POS, B_NEG, mode="penalty", target="both", lam=-1.0, margin=1.0)
    with pytest.raises(ValueError, match="unknown regularisation mode"):
        losses.pointwise_loss(S_POS, S_POS, B_POS, mode="bonus", target="both", lam=1.0)


# ------------------------------------------------------------------------------------------ readers
def test_msmarco_readers_round_trip(tmp_path):
    (tmp_path / "collection.tsv").write_text("7\tfirst passage\nD-2\tsecond passage\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("1\twhat is it\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("1 0 7 2\n1 0 D-2 0\n", encoding="utf-8")
    (tmp_path / "triples.tsv").write_text("q\tp\tn\n", encoding="utf-8")
    assert msmarco.read_collection(tmp_path / "collection.tsv")["docid"].tolist() == ["7", "D-2"]
    assert msmarco.read_queries(tmp_path / "queries.tsv").iloc[0].tolist() == ["1", "what is it"]
    assert msmarco.read_qrels(tmp_path / "qrels.txt")["relevance"].tolist() == [2, 0]
    assert msmarco.read_triples(tmp_path / "triples.tsv").shape == (1, 3)
    run = pd.DataFrame({"qid": ["1", "1"], "docid": ["7", "D-2"], "score": [0.1, 0.9]})
    msmarco.write_run(tmp_path / "r.run", run, tag="x")
    back = msmarco.read_run(tmp_path / "r.run")
    assert back["docid"].tolist() == ["D-2", "7"] and back["rank"].tolist() == [1, 2]


def test_malformed_qrels_line_is_named(tmp_path):
    p = tmp_path / "qrels.txt"
    p.write_text("1 0 7 2\n1 0 8\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"qrels.txt: line 2: expected 'qid 0 docid grade'"):
        msmarco.read_qrels(p)


def test_malformed_run_and_bad_tag(tmp_path):
    p = tmp_path / "r.run"
    p.write_text("1 Q0 7 1 0.5 tag\n1 Q0 8 two 0.4 tag\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2"):
        msmarco.read_run(p)
    with pytest.raises(ValueError, match="tag"):
        msmarco.write_run(tmp_path / "out.run", pd.DataFrame({"qid": ["1"], "docid": ["a"], "score": [1.0]}),
                          tag="two words")
    assert not (tmp_path / "out.run").exists()


# ------------------------------------------------------------------------------------------ data
CAND = pd.DataFrame({"qid": ["1"] * 4 + ["2"] * 3, "docid": ["a", "b", "c", "d", "e", "f", "g"], "rank": [1, 2, 3, 4, 1, 2, 3]})
QRELS = pd.DataFrame({"qid": ["1", "1", "1", "2", "2"], "docid": ["a", "b", "c", "e", "f"], "relevance": [3, 0, 1, 2, 0]})
TOPICS = pd.DataFrame({"qid": ["1", "2"], "query": ["q one", "q two"]})


def test_judged_pairs_and_negatives():
    judged = prepare.judged_pairs(CAND, QRELS, TOPICS, relevance=2, negatives="judged")
    assert sorted(zip(judged["pos"], judged["neg"], strict=True)) == [("a", "b"), ("e", "f")]
    more = prepare.judged_pairs(CAND, QRELS, TOPICS, relevance=2, negatives="judged+unjudged")
    assert sorted(zip(more["pos"], more["neg"], strict=True)) == [("a", "b"), ("a", "d"), ("e", "f"), ("e", "g")]  # grade 1 is not negative
    s = prepare.sample_pairs(more, 2, seed=0)
    assert len(s) == 2 and set(s["qid"]) == {"1", "2"}  # spread over queries
    with pytest.raises(ValueError, match="disjoint"):
        prepare.check_disjoint(["1", "3"], ["3"])


def _year(qids, docs):
    """One TREC DL year's candidates, qrels and topics: per query, a relevant, a judged non-relevant and an unjudged
    passage."""
    cand = pd.DataFrame({"qid": [q for q in qids for _ in range(3)], "docid": [f"{q}{d}" for q in qids for d in docs],
                         "rank": [1, 2, 3] * len(qids), "bm25": [3.0, 2.0, 1.0] * len(qids),
                         "text": [f"{d} he said" for q in qids for d in docs]})
    qrels = pd.DataFrame({"qid": [q for q in qids for _ in range(2)],
                          "docid": [f"{q}{d}" for q in qids for d in docs[:2]], "relevance": [2, 0] * len(qids)})
    return cand, qrels, pd.DataFrame({"qid": qids, "query": [f"query {q}" for q in qids]})


def test_each_fold_trains_on_one_year_and_evaluates_the_other():
    years = {"dl19": _year(["1", "2"], "abc"), "dl20": _year(["7", "8", "9"], "xyz")}
    cand, qrels, topics = ({y: v[i] for y, v in years.items()} for i in range(3))
    judged = {y: sorted(topics[y]["qid"]) for y in years}
    words = pd.DataFrame({"word": ["he", "she"], "gender": ["m", "f"]})
    toy = pd.DataFrame({"query": ["t"], "positive": ["good"], "negative": ["bad"]})

    def build(folds, toy=toy):
        return prepare.build_folds(cand, qrels, topics, judged, folds, relevance=2, negatives="judged", max_pairs=0,
                                   seed=0, toy=toy, wordlists=(words, words), neutrality_threshold=1.0)

    F, terms = build([["dl20", "dl19"], ["dl19", "dl20"]])
    assert list(F.pairs.columns) == ["fold", "qid", "query", "pos", "neg"]
    real = F.pairs[~F.pairs["qid"].str.startswith("toy:")]
    assert real.groupby("fold")["qid"].apply(set).to_dict() == {"dl19": {"7", "8", "9"}, "dl20": {"1", "2"}}
    assert F.lists.groupby("fold")["qid"].apply(set).to_dict() == {"dl19": {"1", "2"}, "dl20": {"7", "8", "9"}}
    assert F.qrels.groupby("fold")["qid"].apply(set).to_dict() == {"dl19": {"1", "2"}, "dl20": {"7", "8", "9"}}
    assert F.pairs.groupby("fold")["qid"].apply(lambda q: q.str.startswith("toy:").sum()).tolist() == [1, 1]
    assert F.available["dl20"] == {"train": "dl19", "pairs": 2, "queries": 2}
    assert set(terms["docid"]) == set(F.docs["docid"]) and len(F.docs) == 15 + 2
    # a fold's data does not depend on the other fold: one fold alone gives the same rows
    one, _ = build([["dl20", "dl19"]])
    assert one.pairs.equals(F.pairs[F.pairs["fold"] == "dl19"]) and one.lists.equals(F.lists[F.lists["fold"] == "dl19"])
    assert prepare.fold_of(F.pool, "dl20").columns.tolist() == ["qid", "query", "docid"]
    sizes = prepare.fold_sizes(F, ["1"], 30).set_index(["fold", "what"])["ours"]
    assert sizes[("dl20", "evaluation queries (dl20, in trecdl)")] == 3
    assert sizes[("dl19", "training pairs (DL20 judged, sampled)")] == 3
    with pytest.raises(ValueError, match="disjoint"):
        prepare.build_folds(cand, qrels, {**topics, "dl20": topics["dl19"]}, {**judged, "dl20": ["1"]},
                            [["dl20", "dl19"], ["dl19", "dl20"]], relevance=2, negatives="judged", max_pairs=0,
                            seed=0, toy=None, wordlists=(words, words), neutrality_threshold=1.0)


def test_a_fold_is_two_different_years_each_evaluated_once():
    from biaslab.fairrank.config import FairrankData

    ok = {"relevance": 2, "negatives": "judged", "max_pairs": 0, "toy_triples": False, "rerank_depth": 30}
    assert FairrankData(**ok, folds=[["dl20", "dl19"]]).folds == [["dl20", "dl19"]]
    for bad, match in (([["dl19", "dl19"]], "not a fold"), ([["dl20"]], "not a fold"),
                       ([["dl20", "dl19"], ["dl20", "dl19"]], "evaluate a year twice"), ([["dl20", "dl21"]], "dl21")):
        with pytest.raises(ValueError, match=match):
            FairrankData(**ok, folds=bad)


def test_every_fold_trains_its_own_rankers_on_its_own_rows(monkeypatch):
    from biaslab.fairrank import runs

    calls = []

    def fake(*args, pairs, lists, pool, runs_dir, **kw):
        calls.append((sorted(set(pairs["qid"])), sorted(set(lists["qid"])), sorted(set(pool["qid"])), runs_dir))
        return (lists.assign(ranker="r", seed=kw["seed"], split="eval", score=1.0)[
            ["ranker", "seed", "split", "qid", "docid", "score"]], pd.DataFrame({"ranker": ["r"], "seed": [0]}))

    monkeypatch.setattr(runs, "train_fold", fake)
    pairs = pd.DataFrame({"fold": ["a", "b"], "qid": ["2", "1"], "query": "q", "pos": "p", "neg": "n"})
    lists = pd.DataFrame({"fold": ["a", "b", "b"], "qid": ["1", "2", "2"], "docid": ["x", "y", "z"]})
    pool = pd.DataFrame({"fold": ["b"], "qid": ["1"], "query": ["q"], "docid": ["w"]})
    scores, log = runs.train_seed([], {}, None, {}, {}, psi_mode="abs", zeta_pos="one", pairs=pairs, lists=lists,
                                  terms=None, pool=pool, texts={}, seed=3, device="cpu", runs_dir=Path("r"))
    assert calls == [(["2"], ["1"], [], Path("r/a")), (["1"], ["2"], ["1"], Path("r/b"))]
    assert scores.columns.tolist() == ["fold", "ranker", "seed", "split", "qid", "docid", "score"]
    assert scores.groupby("fold")["qid"].apply(set).to_dict() == {"a": {"1"}, "b": {"2"}}
    assert log["fold"].tolist() == ["a", "b"]


def test_only_the_rankers_the_mitigation_check_reads_score_their_training_passages(monkeypatch):
    from types import SimpleNamespace

    from biaslab.config import load_params
    from biaslab.fairrank import findings, runs
    from biaslab.fairrank import train as ft

    C = load_params(sections=["fairrank"]).fairrank
    base, pen = findings.mitigation_rankers(C.backbones, C.rankers, C.eval.lambda_figure)
    first, fam = C.backbones[0], C.rankers[C.eval.lambda_figure]
    assert base == f"{first}|base@0" and pen == f"{first}|{C.eval.lambda_figure}@{max(fam.lambdas):g}"

    scored = []
    monkeypatch.setattr(runs, "check_bank", lambda bank, *a, **k: SimpleNamespace(n_frozen=0))
    monkeypatch.setattr(ft, "make_inputs", lambda *a, **k: None)
    monkeypatch.setattr(ft, "build_ranker", lambda *a, **k: SimpleNamespace())
    monkeypatch.setattr(ft, "training_items", lambda data, *a, **k: list(range(len(data))))
    monkeypatch.setattr(ft, "fit", lambda *a, **k: {"train_loss": 0.0})
    monkeypatch.setattr(ft, "score", lambda model, rows, *a, **k: scored.append(len(rows)) or [0.0] * len(rows))
    spec = dict(objective="pairwise", target="relevant", reference="base", sampling="random", lws_share=0.0,
                adv_lambda=0.0, adv_hidden=0)
    rankers = {"base": SimpleNamespace(**spec, mode="none", lambdas=[0.0]),
               "pen": SimpleNamespace(**spec, mode="penalty", lambdas=[0.5, 2.0])}
    T = SimpleNamespace(trainable_layers=None, max_length=8, family="bi_encoder", margin=1.0, epochs=1, batch_size=2,
                        learning_rate=1e-5, head_learning_rate=1e-4, warmup=0.0, score_batch_size=2)
    pairs = pd.DataFrame({"qid": ["1", "2"], "query": "q", "pos": ["a", "b"], "neg": ["c", "c"]})
    lists = pd.DataFrame({"qid": ["3"] * 3, "docid": ["x", "y", "z"]})
    scores, log = runs.train_fold(["m"], rankers, T, {"m": "dir"}, {"m": None}, psi_mode="abs", zeta_pos="one",
                                  pairs=pairs, lists=lists, terms=None, pool=None, texts={}, seed=0, device="cpu",
                                  score_train=["m|base@0", "m|pen@2"])
    assert log["ranker"].tolist() == ["m|base@0", "m|pen@0.5", "m|pen@2"]
    assert scores.groupby("split")["ranker"].unique().map(list).to_dict() == {
        "eval": ["m|base@0", "m|pen@0.5", "m|pen@2"], "train": ["m|base@0", "m|pen@2"]}
    assert len(scores[scores["split"] == "train"]) == 2 * 4 and scored == [3, 4, 3, 3, 4]


def test_the_mitigation_table_keeps_each_folds_training_passages_apart():
    from biaslab.fairrank import findings

    # the toy triples train in both folds under the same query id: each fold's rankers score them separately
    pairs = pd.DataFrame({"fold": ["a", "b"], "qid": ["toy:q0"] * 2, "query": "q", "pos": ["d"] * 2, "neg": ["e"] * 2})
    terms = pd.DataFrame({"docid": ["d", "e"], "def_f": [2, 0], "def_m": [0, 0]})
    scores = pd.DataFrame({"fold": ["a", "a", "b", "b"], "ranker": ["base", "pen"] * 2, "seed": 0, "split": "train",
                           "qid": "toy:q0", "docid": "d", "score": [0.5, 0.1, 0.9, 0.2]})
    out = findings.mitigation_table(scores, terms, pairs, base="base", penalised="pen", psi_mode="signed")
    assert out[["fold", "base", "penalised"]].values.tolist() == [
        ["a", pytest.approx(np.tanh(0.5)), pytest.approx(np.tanh(0.1))],
        ["b", pytest.approx(np.tanh(0.9)), pytest.approx(np.tanh(0.2))]]


def test_lws_swaps_negatives_for_the_most_biased_candidates():

    pairs = pd.DataFrame({"qid": ["1"] * 4, "query": ["q"] * 4, "pos": ["a"] * 4, "neg": ["b", "c", "d", "e"]})
    terms = pd.DataFrame({"docid": list("abcdexy"), "def_f": [0, 0, 0, 0, 0, 3, 1], "def_m": [0, 0, 0, 0, 0, 0, 0]})
    pool = pd.DataFrame({"qid": ["1", "1"], "docid": ["x", "y"]})
    out = prepare.lws_pairs(pairs, pool, terms, share=0.5, seed=0)
    assert (out["neg"] != pairs["neg"]).sum() == 2 and set(out["neg"]) & {"x", "y"} == {"x", "y"}
    assert prepare.lws_pairs(pairs, pool, terms, share=0.0, seed=0).equals(pairs)


def test_lws_share_holds_over_queries_with_one_pair_each():
    # rounding the share per query would swap nothing here (round(0.5 * 1) == 0): the share is over all pairs

    qids = [str(i) for i in range(10)]
    pairs = pd.DataFrame({"qid": qids, "query": ["q"] * 10, "pos": ["a"] * 10, "neg": ["b"] * 10})
    terms = pd.DataFrame({"docid": ["a", "b", "x"], "def_f": [0, 0, 2], "def_m": [0, 0, 0]})
    pool = pd.DataFrame({"qid": qids[:8], "docid": ["x"] * 8})  # queries 8 and 9 have no biased candidate
    out = prepare.lws_pairs(pairs, pool, terms, share=0.5, seed=0)
    swapped = out["neg"] == "x"
    assert swapped.sum() == 4 and not swapped.iloc[8:].any()


def test_regulariser_acts_only_through_the_active_set():
    """Eq. 19: Ψ / ζ shift the hinge's margin. While a pair's hinge is active the gradient w.r.t. the scores is the
    base ranker's (the margin does not enter it), so a regulariser changes training only through the pairs it switches
    on or off — why the λ sweep can leave rankings unchanged when (nearly) every pair is active."""
    def grads(mode, lam, b_pos, b_neg, s_pos, s_neg):
        sp, sn = s_pos.clone().requires_grad_(), s_neg.clone().requires_grad_()
        losses.pairwise_loss(sp, sn, b_pos, b_neg, mode=mode, target="both", lam=lam, margin=1.0).backward()
        return sp.grad, sn.grad

    close = (torch.tensor([0.1, -0.2, 0.0]), torch.tensor([0.0, 0.1, 0.2]))  # every pair active, with or without Ψ
    base = grads("none", 0.0, B_POS, B_NEG, *close)
    pen = grads("penalty", 0.3, B_POS, B_NEG, *close)
    assert all(torch.equal(a, b) for a, b in zip(base, pen, strict=True))
    apart = (torch.tensor([3.0, 3.0, 3.0]), torch.tensor([-3.0, -3.0, -3.0]))  # margin met: inactive pairs ...
    assert all(g.abs().sum() == 0 for g in grads("none", 0.0, B_POS, B_NEG, *apart))
    # ... until a penalty on a biased negative (Ψ = +1) widens its margin and switches the second pair back on
    _g_pos, g_neg = grads("penalty", 1.0, torch.zeros(3), torch.tensor([0.0, 1.0, 0.0]), *apart)
    assert g_neg[1] > 0 and g_neg[0] == 0 and g_neg[2] == 0


def test_penalties_from_two_up_train_alike_on_a_bi_encoders_bounded_scores():
    """Why the default run's penalty_relevant@2 and @5 are bit-identical: Ψ is −1, 0 or +1 and the bi-encoder's score
    is a cosine. From λ = 2 on, a Ψ = +1 positive's hinge, max(0, 1 − λ − (tanh Φ(d⁺) − tanh Φ(d⁻))), is off
    unless the negative outscores it by more than 1 in tanh (here: both cosines ≥ 0), and a Ψ = −1 one's is always
    on — the same active set, hence the same gradients, for any larger λ."""
    gen = torch.Generator().manual_seed(0)
    s_pos, s_neg = torch.rand(64, generator=gen) * 0.9, torch.rand(64, generator=gen) * 0.9
    psi = torch.randint(-1, 2, (64,), generator=gen).float()

    def grads(lam):
        sp, sn = s_pos.clone().requires_grad_(), s_neg.clone().requires_grad_()
        losses.pairwise_loss(sp, sn, psi, torch.zeros(64), mode="penalty", target="relevant", lam=lam,
                             margin=1.0).backward()
        return sp.grad, sn.grad

    assert all(torch.equal(a, b) for a, b in zip(grads(2.0), grads(5.0), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(grads(0.5), grads(5.0), strict=True))  # below 2 the set differs


def test_ranker_ids_pin_unregularised_families_to_lambda_zero():
    from biaslab.fairrank.findings import qualified_id, ranker_id

    assert ranker_id("penalty_relevant", 0.5) == "penalty_relevant@0.5"
    assert qualified_id("minilm", "penalty_relevant", "penalty", 1.0) == "minilm|penalty_relevant@1"
    assert qualified_id("minilm", "lws", "none", 1.0) == "minilm|lws@0"


def _committed_measures(results):
    """fairrank_analysis's committed per-query measures and its query sets, the queries in the stage's order
    (queries.parquet's)."""
    import pandas as pd

    pq = pd.read_csv(results / "per_query.csv", dtype={"qid": str})
    order = pq.drop_duplicates(["query_set", "qid"])
    return pq, {qs: g["qid"].tolist() for qs, g in order.groupby("query_set", sort=False)}


def test_the_committed_claims_table_is_rebuilt_from_the_committed_per_query_measures():
    """fairrank's claims.csv and competence.csv from fixed inputs: the per-query measures and the mitigation check's
    table the analysis stage wrote (per_query.csv, mitigation.csv, in git), the paper's numbers and params.yaml give
    back every row of the committed tables — verdicts exactly, values to the CSV's rounding. A change to the verdict
    rules, the intervals, Holm or the rankers' ids shows here without a rerun."""
    import numpy as np
    import pandas as pd
    import yaml

    from biaslab import claims as cl
    from biaslab import competence
    from biaslab.fairrank import findings

    from conftest import PARAMS, REPO

    results = REPO / "reports/fairrank/results"
    pq, query_sets = _committed_measures(results)
    values = yaml.safe_load((REPO / "reports/paper_values/fairrank.yaml").read_text())
    mitigation = pd.read_csv(results / "mitigation.csv", dtype={"qid": str, "docid": str})
    rows, comp = findings.paper_claims(pq, query_sets, PARAMS, values, mitigation=mitigation)
    got, want = cl.table(rows), cl.read(results / "claims.csv")
    text = ["claim", "paper_section", "paper_value", "verdict", "rule", "kind", "interval"]
    assert got[text].astype(str).values.tolist() == want[text].astype(str).values.tolist()
    # per_query.csv holds six significant digits: p-values and MDEs computed from it agree to about 1e-4
    tolerance = {"p_value": 1e-3, "p_adjusted": 1e-3, "mde": 1e-3, "n_needed": 1e-2}
    for col in ("our_value", "ci_low", "ci_high", "paper_effect", "n", "p_value", "p_adjusted", "mde", "n_needed"):
        np.testing.assert_allclose(got[col].astype(float), want[col].astype(float), rtol=tolerance.get(col, 1e-5),
                                   atol=1e-6, err_msg=col)
    committed = competence.read(results / "competence.csv")
    assert comp[["check", "measure", "passed"]].values.tolist() == committed[["check", "measure", "passed"]].values.tolist()
    np.testing.assert_allclose(comp[["ours", "ci_low", "ci_high", "floor"]].astype(float),
                               committed[["ours", "ci_low", "ci_high", "floor"]].astype(float), rtol=1e-5, atol=1e-6)


def test_the_committed_tables_and_fig2_are_rebuilt_from_the_committed_per_query_measures():
    """Tables 1–2 and Fig. 2's changes from the committed per-query measures and params.yaml: the same rows in the
    same order, values to the CSV's rounding — what fairrank_analysis writes, without a rerun."""
    import numpy as np
    import pandas as pd

    from biaslab.fairrank import findings, tables

    from conftest import PARAMS, REPO

    C, E, U = PARAMS.fairrank, PARAMS.fairrank.eval, PARAMS.common.uncertainty
    results = REPO / "reports/fairrank/results"
    pq, query_sets = _committed_measures(results)
    boot = {"rounds": U.rounds, "confidence": U.confidence, "seed": PARAMS.common.seed}
    numbered = tables.paper_tables(pq, query_sets, C.rankers, C.backbones, table_lambda=E.table_lambda,
                                   cutoffs=E.cutoffs, mrr_cutoff=E.mrr_cutoff, **boot)
    assert [(n, b, qs) for n, (b, qs, _) in numbered.items()] == [(2 * i + j + 1, b, qs) for i, b in
                                                                 enumerate(C.backbones)
                                                                 for j, qs in enumerate(tables.TABLE_QUERY_SETS)]
    ids = {n: findings.qualified_id(C.backbones[0], n, s.mode, E.table_lambda) for n, s in C.rankers.items()}
    fig2 = tables.baselines_changes(pq, query_sets, [ids[n] for n in E.baselines_figure], ids["base"],
                                    cutoff=E.cutoffs[0], mrr_cutoff=E.mrr_cutoff, **boot)
    for got, path in [(numbered[1][2], "table1.csv"), (numbered[2][2], "table2.csv"), (fig2, "fig2_changes.csv")]:
        want = pd.read_csv(results / path)
        key = ["cutoff", "ranker", "reference", "query_set", "measure"]
        assert got[key].values.tolist() == want[key].values.tolist(), path
        for col in ("value", "reference_value", "diff", "diff_ci_low", "diff_ci_high"):
            np.testing.assert_allclose(got[col].astype(float), want[col].astype(float), rtol=1e-3, atol=1e-4,
                                       err_msg=f"{path}: {col}")
        # per_query.csv keeps six significant digits, which turns per-query differences of ~1e-6 into ties: the
        # sign-flip test is compared where the change is larger than that rounding
        clear = want["diff"].abs().to_numpy() > 1e-3
        np.testing.assert_allclose(got["p_value"][clear], want["p_value"][clear], atol=1e-2, err_msg=path)
        assert (got["significant"][clear] == want["significant"][clear]).all(), path
    head = findings.headline(pd.DataFrame({"ranker": ["r", "r"], "query_set": ["q", "q"], "measure": ["M", "X"],
                                           "mean": [0.5, 0.1], "std": [0.1, 0.0], "seeds": [3, 3]}), ["M"])
    assert head == {"r|q|M": {"mean": 0.5, "std": 0.1, "seeds": 3}}
