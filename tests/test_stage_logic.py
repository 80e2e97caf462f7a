"""The orchestration the notebooks used to hold, now in the library: ragcontrol's data preparation, RAG answering
and analysis, ragfair's evaluation tables, intersect's baseline scores and the small shared helpers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from biaslab import stats
from biaslab.data import sbic
from biaslab.intersect import baselines
from biaslab.ragcontrol import analysis, judges, prepare, rag, tasks
from biaslab.ragfair import bbq_build, evaluation, paper
from biaslab.ragfair.config import RagfairCheckpoint
from test_ragcontrol import FakeScorer


# ------------------------------------------------------------------------------------------ ragcontrol data
def test_offline_judges_from_real_layouts_round_trip_through_their_spec(raw_dir):
    for task in tasks.TASKS:
        splits = {s: tasks.questions(task, s, raw_dir) for s in tasks.SPLITS[task]}
        corpus = tasks.eval_corpus(task, raw_dir, splits)
        judge, spec = prepare.offline_judge(task, splits, corpus, raw_dir)
        rebuilt = judges.from_spec(spec)
        texts = corpus["text"].tolist()
        for a, b in zip(judge.flags(texts), rebuilt.flags(texts), strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="unknown judge spec kind"):
        judges.from_spec({"kind": "age"})


def test_judge_agreement_counts_and_shares():
    corpus = pd.DataFrame({"lean": ["female", "female", "male"], "bias1": [True, False, False],
                           "bias2": [False, False, True]})
    out = prepare.judge_agreement(corpus, ("female", "male")).set_index("lean")
    assert out.loc["female", "documents"] == 2 and out.loc["female", "% judged female"] == 50.0
    assert out.loc["male", "% judged male"] == 100.0


def test_reader_questions_politics_order_and_gender_names():
    pol = pd.DataFrame({"qid": ["q1", "q2", "q3"], "question": ["?"] * 3})
    a = prepare.reader_questions("PoliticBias-QA", pol, seed=3)
    assert a["right_first"].tolist() == prepare.reader_questions("PoliticBias-QA", pol, seed=3)["right_first"].tolist()
    assert "right_first" not in pol  # the input is not modified
    gen = pd.DataFrame({"qid": ["q1"], "question": ["Who?"], "female_docs": [("Megan Rapinoe led the team.", "x")],
                        "male_docs": [("no name here", "Tom Brady threw.")]})
    g = prepare.reader_questions("GenderBias-QA", gen, seed=0).iloc[0]
    assert (g["female_name"], g["male_name"]) == ("Megan Rapinoe", "Tom Brady")
    assert isinstance(g["female_docs"], list)


def test_candidate_pools_refuse_evaluation_claims(monkeypatch, raw_dir):
    corpus = pd.DataFrame({"text": ["claim A", "claim B"]})
    monkeypatch.setattr(prepare, "candidate_corpus", lambda name, raw, splits: ["claim A", "other"])
    with pytest.raises(AssertionError, match="leaked"):
        prepare.candidate_pools(["twinviews"], raw_dir, {}, corpus, max_pool=0, seed=0)
    pools = prepare.candidate_pools(["wikipedia"], raw_dir, {}, corpus, max_pool=1, seed=0)
    assert len(pools["wikipedia"]) == 1
    monkeypatch.undo()
    with pytest.raises(ValueError, match="unknown candidate corpus"):
        prepare.candidate_corpus("dbpedia", raw_dir, {})


def test_candidate_counts_and_row_stats():
    cands = pd.DataFrame({"corpus": ["m", "m", "w"], "role": ["positive", "negative", "positive"], "text": list("abc")})
    counts = prepare.candidate_counts(cands, {"m": ["a", "b", "z"], "w": ["c"]}).set_index("corpus")
    assert counts.loc["m", "positive"] == 1 and counts.loc["m", "corpus size"] == 3
    rows = pd.DataFrame({"label": [[1, -1, -1], [1, 1, 0]]})
    assert prepare.row_stats(rows) == {"positives_per_question": 1.5, "negatives_per_question": 1.0}


# ------------------------------------------------------------------------------------------ ragcontrol RAG
def test_task_mode_is_the_readers_mode_for_that_task():
    from types import SimpleNamespace

    R = SimpleNamespace(gender_mode="likelihood", politics_mode="letter")
    assert rag.task_mode(R, "GenderBias-QA") == "likelihood" and rag.task_mode(R, "PoliticBias-QA") == "letter"


def test_answer_task_reads_each_pair_once_and_computes_rag_bias():
    test = pd.DataFrame({"qid": ["a", "b"], "question": ["Q?", "Q?"], "left_claim": ["L.", "L."],
                         "right_claim": ["R.", "R."], "right_first": [True, False]}).set_index("qid")
    corpus = pd.DataFrame({"text": ["R.", "L."]})
    retrieved = pd.DataFrame({"task": "PoliticBias-QA", "method": ["base", "base", "fine-tune", "fine-tune"],
                              "setting": ["base", "base", "ft", "ft"], "qid": ["a", "b", "a", "b"],
                              "doc_id": [0, 1, 0, 0], "bias1": [True, False, True, True],
                              "bias2": [False, True, False, False], "p_bias1": [1.0, 0.0, 1.0, 1.0],
                              "p_bias2": [0.0, 1.0, 0.0, 0.0]})
    pairs, rows = rag.answer_task("PoliticBias-QA", "claim", test=test, corpus=corpus, retrieved=retrieved,
                                  subset=["a", "b"], scorer=FakeScorer(), max_doc_words=None)
    assert len(pairs) == 5  # (a,0), (b,1), (b,0) and the two no-document prompts
    res = {r["setting"]: r for r in rows}
    assert res["base"]["rag_bias"] == 0.0 and res["base"]["embedder_bias"] == 0.0
    assert res["ft"]["rag_bias"] == 100.0 and res["ft"]["embedder_bias"] == 100.0  # the reader follows its context
    assert res["no document"]["questions"] == 2


def test_answer_tasks_reads_each_task_from_its_folder_and_equals_answer_task(tmp_path):
    from types import SimpleNamespace

    test = pd.DataFrame({"qid": ["a", "b"], "question": ["Q?", "Q?"], "left_claim": ["L.", "L."],
                         "right_claim": ["R.", "R."], "right_first": [True, False]})
    corpus = pd.DataFrame({"text": ["R.", "L."]})
    (tmp_path / "PoliticBias-QA").mkdir()
    test.to_parquet(tmp_path / "PoliticBias-QA" / "test_questions.parquet")
    corpus.to_parquet(tmp_path / "PoliticBias-QA" / "corpus.parquet")
    retrieved = pd.DataFrame({"task": "PoliticBias-QA", "method": "base", "setting": "base", "qid": ["a", "b"],
                              "doc_id": [0, 1], "bias1": [True, False], "bias2": [False, True],
                              "p_bias1": [1.0, 0.0], "p_bias2": [0.0, 1.0]})
    subset = pd.DataFrame({"task": ["PoliticBias-QA", "PoliticBias-QA", "GenderBias-QA"], "qid": ["a", "b", "z"]})
    R = SimpleNamespace(gender_mode="likelihood", politics_mode="claim")
    answers, table, tests = rag.answer_tasks(tmp_path, ["PoliticBias-QA"], R, retrieved=retrieved, subset=subset,
                                             judge_of={"PoliticBias-QA": None}, scorer=FakeScorer(), llm=None,
                                             gen=None, max_doc_words=None)
    pairs, rows = rag.answer_task("PoliticBias-QA", "claim", test=test.set_index("qid"), corpus=corpus,
                                  retrieved=retrieved, subset=["a", "b"], scorer=FakeScorer(), max_doc_words=None)
    pd.testing.assert_frame_equal(answers, pairs.reset_index(drop=True))
    pd.testing.assert_frame_equal(table, pd.DataFrame(rows))
    assert list(tests) == ["PoliticBias-QA"] and tests["PoliticBias-QA"].index.name == "qid"
    empty = rag.generation_checks(tests, 0, llm=None, gen=None, judge_of={})
    assert empty.empty and list(empty.columns) == ["task", "questions", "answers on a side (%)"]


# ------------------------------------------------------------------------------------------ ragcontrol analysis
def toy_rag() -> tuple[pd.DataFrame, pd.DataFrame]:
    settings = [("base", "base", -50.0, 0.50), ("fine-tune", "r@m=0.5", 0.0, 0.49), ("fine-tune", "r@m=1", 50.0, 0.45),
                ("projection", "alpha=1", -50.0, 0.50), ("projection", "alpha=3", -10.0, 0.30),
                ("projection", "alpha=2", -30.0, 0.40), ("sampling", "N=3,tau=0", -50.0, np.nan),
                ("sampling", "N=3,tau=1", -45.0, np.nan), ("sampling", "N=8,tau=1", -40.0, np.nan)]
    emb = pd.DataFrame([{"task": "T", "method": m, "setting": s, "embedder_bias": e, "ndcg": n, "task_accuracy": 0.5}
                        for m, s, e, n in settings])
    rag_rows = [{"task": "T", "method": m, "setting": s, "rag_bias": 0.5 * e + 10, "embedder_bias": e, "reader": r}
                for r in ("r1", "r2") for m, s, e, _ in settings]
    rag_rows += [{"task": "T", "method": "no document", "setting": "no document", "rag_bias": 5.0,
                  "embedder_bias": np.nan, "reader": r} for r in ("r1", "r2")]
    return emb, pd.DataFrame(rag_rows)


def test_analysis_fits_utility_pareto_and_checks():
    emb, rag_table = toy_rag()
    data = analysis.joined(emb, rag_table)
    assert set(data.loc[data["method"] == "base", "family"]) == {"fine-tune"}
    fits = analysis.fits(data, confidence=0.95)
    ft = fits[(fits["reader"] == "r1") & (fits["method"] == "fine-tune")].iloc[0]
    assert ft["slope"] == pytest.approx(0.5) and ft["intercept"] == pytest.approx(10) and ft["r2"] == pytest.approx(1)
    assert set(fits["method"]) == {"fine-tune", "projection", "sampling", "all settings"}
    util = analysis.utility(data)
    assert util.loc[util["setting"] == "alpha=3", "ndcg_change"].iloc[0] == pytest.approx(-0.2)
    fronts = analysis.pareto(util)
    assert list(fronts.drop_duplicates(["task", "reader"])["reader"]) == ["r1", "r2"]
    comp = analysis.comparison(data, fits)
    row = comp[(comp["reader"] == "r1") & (comp["method"] == "fine-tune")].iloc[0]
    assert row["least_biased_setting"] == "r@m=0.5" and row["embedder_bias_range"] == 100.0
    checks = analysis.checks(data, comp, util)["T | r1"]
    assert checks["sampling_moves_embedder_bias_less_than_fine_tuning"] is True
    assert checks["worst_ndcg_change_projection"] == pytest.approx(-0.2) and checks["no_document_rag_bias"] == 5.0
    assert analysis.sampling_sweep(data)[["N", "tau"]].drop_duplicates().shape[0] == 3
    assert sorted(analysis.projection_sweep(data)["alpha"].unique()) == [1.0, 2.0, 3.0]


# ------------------------------------------------------------------------------------------ ragfair evaluation
def test_ragfair_tables_checkpoints_and_norms():
    cks = [RagfairCheckpoint(name="Full framework", run="x", mask=True),
           RagfairCheckpoint(name="LoRA + WiSE-FT", run="x", mask=False)]
    assert [c.name for c in evaluation.checkpoint_list(cks, {"x": None, "y": None}, True)] == [
        "Full framework", "LoRA + WiSE-FT", "y"]
    assert len(evaluation.checkpoint_list(cks, {"x": None, "y": None}, False)) == 2
    table = pd.DataFrame({"checkpoint": ["Full framework", "LoRA + WiSE-FT", "mine"], "spd": [0.1, 0.2, 0.3],
                          "eod": [0.1, 0.2, 0.3], "acc_at_1": [10.0, 20.0, 30.0], "bbq_seat_abs_es": [0.5] * 3,
                          "seat_fairness": [0.7] * 3})
    t2 = evaluation.table2(table).set_index("checkpoint")
    assert t2.loc["Full framework", "paper_spd"] == paper.TABLE2["Full framework"][0]
    assert np.isnan(t2.loc["mine", "paper_eod"])
    abl = evaluation.ablation(table)
    assert abl["ablation"].tolist() == ["Full framework", "− head masking"]
    per_cat = pd.DataFrame({"checkpoint": ["a", "a", "b", "b"], "category": ["c1", "c2", "c1", "c2"],
                            "bbq_seat_abs_es": [1.0, 0.0, 0.0, 0.0], "spd": [0.1, 0.1, 0.1, 0.1],
                            "eod": [0.2, 0.1, 0.1, 0.1]})
    pts = evaluation.norm_points(per_cat)
    assert pts.loc["a", "‖SEAT ES‖ (z)"] == pytest.approx(1.0) and pts.loc["a", "‖SPD‖ (z)"] == 0.0


def test_paper_table1_frame_matches_the_dict():
    t1 = paper.table1().set_index("category")
    assert t1.loc["Age", "paper_fairness"] == paper.TABLE1["Age"][0] and len(t1) == len(paper.TABLE1)


def test_bbq_coverage_counts_held_out_templates():
    bbq = pd.DataFrame({"category": ["Age"] * 4, "source": ["released"] * 4, "example_id": range(4),
                        "question_index": [1, 1, 2, 3], "split": ["train", "train", "eval", "eval"]})
    row = bbq_build.coverage(bbq).iloc[0]
    assert (row["rows"], row["templates"], row["eval_templates"]) == (4, 3, 2)


# ------------------------------------------------------------------------------------------ intersect, shared
def test_baseline_test_scores_per_test_set():
    rows = pd.DataFrame({"labels": [["a"], ["b"]], "test_seen": [True, False], "test_unseen": [False, True],
                         "test_all": [True, True]})
    out = {r["test_set"]: r for r in baselines.test_scores("m", "indic", "C1", rows, [["a"], ["a"]])}
    assert out["seen"]["jaccard"] == 1.0 and out["unseen"]["jaccard"] == 0.0 and out["all"]["n"] == 2


def test_sbic_dev_and_test_together(raw_dir):
    posts = sbic.load_dev_test(raw_dir)
    assert set(posts["split"]) == {"dev", "test"}
    assert posts.groupby("split")["row"].apply(lambda r: list(r) == list(range(len(r)))).all()


def test_loss_curve_figure():
    from biaslab.plots import loss_curve

    fig = loss_curve({"loss_curve": [(1, 2.0), (2, 1.0)]}, ylabel="loss", title="t")
    assert fig.axes[0].get_title() == "t" and len(fig.axes[0].lines) == 1
    assert len(loss_curve({"loss_curve": []}, ylabel="loss", title="empty").axes[0].lines) == 0


# ------------------------------------------------------------------------------------------ findings and claims
U = {"rounds": 500, "confidence": 0.95, "seed": 0}


def toy_questions(slope=0.5, noise=0.0, n=40, seed=0):
    """Retrievals and answers of one task / reader where the reader follows its document with probability
    ``slope``: RAG bias = slope · embedder bias on average."""
    rng = np.random.default_rng(seed)
    rows, answers = [], []
    settings = [("base", "base", 0.2), ("fine-tune", "r@m=0.5", 0.5), ("fine-tune", "r@m=1", 0.8),
                ("projection", "alpha=1", 0.2), ("projection", "alpha=2", 0.4), ("projection", "alpha=3", 0.6),
                ("sampling", "N=3,tau=1", 0.2), ("sampling", "N=8,tau=1", 0.22)]
    for d, (method, setting, p_female) in enumerate(settings):
        for q in range(n):
            female = rng.random() < p_female
            rows.append({"task": "GenderBias-QA", "method": method, "setting": setting, "qid": f"q{q}",
                         "doc_id": d * n + q, "bias1": female, "bias2": not female,
                         "p_bias1": float(p_female), "p_bias2": float(1 - p_female)})
            side = ("female" if female else "male") if rng.random() < slope else rng.choice(["female", "male"])
            answers.append({"task": "GenderBias-QA", "reader": "r1", "qid": f"q{q}", "doc_id": d * n + q,
                            "side": side})
    return pd.DataFrame(rows), pd.DataFrame(answers)


def test_ragcontrol_question_table_reproduces_the_bias_percentages():
    from biaslab.ragcontrol import control, findings

    retrieved, answers = toy_questions()
    t = findings.question_table(retrieved, answers)
    base = t[t["setting"] == "base"]
    r = retrieved[retrieved["setting"] == "base"]
    assert base["emb"].mean() == pytest.approx(control.bias_percent(r["bias1"], r["bias2"]))
    sides = answers.set_index("doc_id").loc[r["doc_id"], "side"]
    assert base["rag"].mean() == pytest.approx(100 * ((sides == "female").mean() - (sides == "male").mean()))
    assert set(t.loc[t["method"] == "base", "family"]) == {"fine-tune"}


def test_ragcontrol_claims_on_a_reader_that_follows_its_documents():
    from biaslab.ragcontrol import findings

    retrieved, answers = toy_questions(slope=0.9, n=80)
    t = findings.question_table(retrieved, answers)
    util = pd.DataFrame([{"task": "GenderBias-QA", "method": m, "setting": s, "year": "dl19", "qid": str(q),
                          "ndcg": v + 0.01 * q} for m, s, v in (("base", "base", 0.5), ("fine-tune", "r@m=1", 0.49),
                                                                 ("projection", "alpha=3", 0.30)) for q in range(15)])
    C = SimpleNamespace(follow_floor=80.0, sampling_bound=10.0)
    following = findings.context_following(retrieved, answers)
    assert following["follows"].mean() > 90  # follows with probability 0.9, guesses right half the other times
    rows, comp = findings.paper_claims(t, util, following, C, level=0.95, rounds=500, seed=0)
    assert comp["check"].tolist() == ["GenderBias-QA, reader r1: answers the side of a one-sided document"]
    assert comp["passed"].all()
    out = {c.claim: c for c in rows}
    slope = next(c for k, c in out.items() if "fine-tune, slope" in k)
    assert slope.verdict == "reproduced" and slope.ci_low > 0 and slope.kind == "claim"
    moved = next(c for k, c in out.items() if "moves the embedder" in k)
    assert moved.verdict == "reproduced" and moved.kind == "check"  # the mitigation acts; never counted
    assert next(c for k, c in out.items() if "sampling" in k).verdict in ("reproduced", "underpowered")
    assert next(c for k, c in out.items() if "projecting" in k).verdict == "reproduced"
    # a reader that ignores its documents fails the floor: its slopes are untestable, the embedder's claims are not
    retrieved, answers = toy_questions(slope=0.0, n=80)
    t = findings.question_table(retrieved, answers)
    rows, comp = findings.paper_claims(t, util, findings.context_following(retrieved, answers), C, level=0.95,
                                       rounds=500, seed=0)
    assert not comp["passed"].any()
    verdicts = {c.claim: c.verdict for c in rows}
    assert {v for k, v in verdicts.items() if "slope" in k} == {"untestable"}
    assert next(v for k, v in verdicts.items() if "projecting" in k) == "reproduced"
    iv = findings.setting_intervals(t, **U)
    assert (iv["rag_bias_ci_low"] <= iv["rag_bias"]).all() and (iv["rag_bias"] <= iv["rag_bias_ci_high"]).all()


def test_ragcontrol_slope_of_an_insensitive_reader_is_not_called_positive():
    from biaslab.ragcontrol import findings

    retrieved, answers = toy_questions(slope=0.0, n=60, seed=3)
    t = findings.question_table(retrieved, answers)
    low, high = findings.slope(t[t["family"] == "fine-tune"], rounds=500, seed=0).interval(0.95)
    assert low < 0 < high  # a reader that ignores its documents has no measurable sensitivity


def test_intersect_claims_pair_the_same_paragraphs():
    from biaslab import claims as cl
    from biaslab.intersect import findings

    rng = np.random.default_rng(0)
    rows = []
    for corpus in ("indic", "western"):
        for subset in ("C1", "C2"):
            for p in range(30):
                unseen = p % 2 == 0
                for model, j in (("BiasRetriever (B4_UB4)", 0.7), ("S-BERT-Base (frozen minilm)", 0.4),
                                 ("BERT-MultiLabel (minilm)", 0.6 if not unseen else 0.3),
                                 ("Zero-shot LLM (smollm2)", 0.65)):
                    for k in (3, 15, 30):
                        rise = 0.1 if (k > 3 and model.startswith("BiasRetriever")) else 0.0
                        rows.append({"model": model, "train_corpus": corpus, "subset": subset, "test_corpus": corpus,
                                     "domain": "in-domain", "k": k, "paragraph_id": f"p{p}", "test_seen": not unseen,
                                     "test_unseen": unseen, "exact_match": 0.0,
                                     "jaccard": float(np.clip(j + rise + rng.normal(0, 0.05), 0, 1))})
    out = cl.finalize(findings.claims(pd.DataFrame(rows), k=3, plateau_from=15, k_max=30, plateau_bound=0.05),
                      level=0.95)
    verdicts = {c.claim.split(": ", 1)[1]: c.verdict for c in out if c.claim.startswith("indic")}
    assert verdicts["BiasRetriever (SR-k4) beats its frozen base in-domain on D_test,N"] == "reproduced"
    assert verdicts["BiasRetriever beats the BCE classifier on unseen categories"] == "reproduced"
    # +0.05 on unseen paragraphs against the abstract's +0.10: there, but smaller than the paper's
    assert verdicts["BiasRetriever beats the zero-shot LLM classifier on unseen categories"] == "reproduced_smaller"
    assert verdicts["a deeper retrieval raises Jaccard (k = 3 to 15)"] == "reproduced"
    assert verdicts["beyond k = 15 Jaccard changes little (k = 15 to 30, within ±0.05)"] == "reproduced"
    assert {c.interval.split(",")[0] for c in out} == {"Student t over 60 paragraphs", "Student t over 30 paragraphs"}


def test_intersect_triplet_checks_see_a_strategy_that_mines_what_sr_k4_mines():
    from biaslab import claims as cl
    from biaslab.intersect import findings

    def mined(strategy, negatives):
        return pd.DataFrame({"anchor_id": ["a", "a", "b", "b", "c", "c"], "anchor": list("AABBCC"),
                             "positive": list("pqpqpq"), "negative": negatives, "strategy": strategy})

    srk4 = mined("srk4", list("xyxyxy"))
    triplets = {"indic": pd.concat([srk4, mined("srk4un", list("xzxzxz")),  # half of each anchor's are new
                                    mined("srk10", list("xyxyxy"))], ignore_index=True)}  # the same triplets
    out = {c.claim: c for c in cl.finalize(findings.triplet_checks(triplets), level=0.95)}
    un = out["indic: the B4_NUB_UB4 strategy mines triplets SR-k4 does not"]
    same = out["indic: the B10_UB10 strategy mines triplets SR-k4 does not"]
    assert un.kind == same.kind == "check" and len(out) == 2
    assert un.our_value == 0.5 and un.n == 3 and same.our_value == 0.0
    assert same.verdict != "reproduced"  # a strategy that mines SR-k4's triplets does not act


def test_ragfair_intervals_and_claims_from_card_decisions():
    from biaslab import claims as cl
    from biaslab.ragfair import cards, findings

    rng = np.random.default_rng(0)

    def card(p_stereo, p_hit=0.7):
        dec = {}
        for cat in ("Age", "Religion"):
            gold = rng.choice(["stereotyped", "non-stereotyped", "unknown"], 120)
            pred = np.where(rng.random(120) < p_stereo, "stereotyped", "non-stereotyped")
            dec[cat] = (gold, pred, rng.random(120) < p_hit)
        return cards.Card({}, pd.DataFrame(), dec)

    base = card(0.8)
    card_of = {"Baseline (frozen encoder)": base,
               "Full framework": cards.Card({}, pd.DataFrame(), {c: (g, np.where(np.arange(120) % 2 == 0,
                                                                                    "stereotyped", "non-stereotyped"),
                                                                       h) for c, (g, _, h) in base.decisions.items()}),
               "Full without fairness (alpha=0)": base}
    iv = findings.intervals(card_of, **U)
    spd = iv[(iv["checkpoint"] == "Full framework") & (iv["measure"] == "spd")].iloc[0]
    assert spd["diff_ci_high"] < 0  # alternating answers remove the stereotyped preference
    same = iv[(iv["checkpoint"] == "Full without fairness (alpha=0)") & (iv["measure"] == "spd")].iloc[0]
    assert same["diff_vs_baseline"] == 0 and same["diff_ci_low"] == same["diff_ci_high"] == 0
    E = SimpleNamespace(acc_floor=50.0, acc_drop_bound=2.0)
    rows, comp = findings.paper_claims(card_of, {}, None, None, E, level=0.95, rounds=500, seed=0, checks=[])
    assert comp["passed"].tolist() == [True] and comp["ci_low"].iloc[0] > 50  # hits at 70 %
    out = {c.claim: c for c in rows}
    full = out["Full framework lowers SPD vs the frozen encoder"]
    assert full.verdict == "reproduced" and full.paper_effect == pytest.approx(0.107 - 0.135)
    # the interval is the Wald-type t interval with the paired bootstrap's standard error over the 240 rows
    d = findings._measure(findings._flat(card_of["Full framework"]), "spd")
    b = findings._measure(findings._flat(base), "spd")
    res = stats.resample_indices(240, 500, 0, np.repeat(["Age", "Religion"], 120))
    se = float(np.std(d(res) - b(res), ddof=1))
    q = (full.ci_high - full.ci_low) / 2 / se  # centred on our value, t quantile at one of Holm's 4 levels
    assert (full.ci_low + full.ci_high) / 2 == pytest.approx(full.our_value)
    assert min(abs(q - scipy.stats.t.ppf(1 - 0.05 / 2 / k, 239)) for k in (1, 2, 3, 4)) < 1e-9
    assert out["the fairness term lowers SPD (Full framework vs its α = 0 control)"].verdict == "reproduced"
    # the same hits: an Acc@1 change of exactly 0, inside ±2
    assert out["the full framework costs little Acc@1 (change within the bound)"].verdict == "reproduced"
    # a retriever below the floor: every claim untestable, naming the check
    weak = {k: cards.Card({}, pd.DataFrame(), {c: (g, p, np.zeros(len(g), bool)) for c, (g, p, _) in v.decisions.items()})
            for k, v in card_of.items()}
    acts = findings.acts_checks(weak["Full framework"].decisions, [0.01, 0.02, 0.01, 0.02, 0.01], base.decisions,
                                [0.03, 0.04, 0.03, 0.04, 0.035], alpha=1000, run="strong", control="a0")
    rows, comp = findings.paper_claims(weak, {}, None, None, E, level=0.95, rounds=500, seed=0, checks=acts)
    assert comp["passed"].tolist() == [False]
    claims = [c for c in rows if c.kind == "claim"]
    assert {c.verdict for c in claims} == {"untestable"} and all("competence check" in c.rule for c in claims)
    # the checks are not gated: a strong α that lowers L_fair per batch and changes half the answers acts
    checks = {c.claim: c for c in rows if c.kind == "check"}
    fair = checks["at α = 1000 the fairness term lowers L_fair on the training pairs (strong vs a0)"]
    assert fair.our_value == pytest.approx(-0.021) and fair.n == 5 and fair.verdict == "reproduced"
    moved = checks["at α = 1000 the fairness term changes retrieval (share of BBQ rows whose retrieved answer differs "
                   "from a0's)"]
    assert moved.verdict == "reproduced" and moved.n == 240 and 0.3 < moved.our_value < 0.7
    # ... and a run that retrieves exactly what its control does has not acted
    [_, same] = cl.finalize(findings.acts_checks(base.decisions, [0.01] * 3, base.decisions, [0.03] * 3, alpha=1000,
                                                 run="strong", control="a0"), level=0.95)
    assert same.our_value == 0 and same.verdict != "reproduced"
    with pytest.raises(ValueError, match="other rows"):
        findings.acts_checks({"Age": base.decisions["Age"]}, [0.0], base.decisions, [0.0], alpha=1, run="a",
                             control="b")


def _baselines(corpus="indic", n=40, *, same=False, stuck=False):
    """Per-paragraph Jaccard of two classifiers, the majority label set and a zero-shot LLM, and a training log."""
    rng = np.random.default_rng(0)
    bce = 0.6 + rng.normal(0, 0.05, n)
    scores = {"Majority label set": np.full(n, 0.2), "BERT-MultiLabel (minilm)": bce,
              "Soft-Hamming (minilm)": bce if same else 0.5 + rng.normal(0, 0.05, n),  # same: paragraph for paragraph
              "Zero-shot LLM (smollm2)": 0.15 + rng.normal(0, 0.05, n)}
    rows = [{"model": model, "train_corpus": corpus, "subset": "C1", "test_corpus": corpus, "domain": "in-domain",
             "paragraph_id": f"p{p}", "test_seen": True, "test_unseen": p % 2 == 0, "exact_match": 0.0,
             "jaccard": float(j[p])} for model, j in scores.items() for p in range(n)]
    log = pd.DataFrame([
        {"model": "BERT-MultiLabel (minilm)", "train_corpus": corpus, "subset": "C1", "epochs_run": 20.0 if stuck else 9.0,
         "stopped_by": "max_epochs" if stuck else "converged", "last_change": 0.05 if stuck else 0.004,
         "converge_tol": 0.01, "loss_per_epoch": "", "distinct_label_sets": 5},
        {"model": "Soft-Hamming (minilm)", "train_corpus": corpus, "subset": "C1", "epochs_run": 6.0,
         "stopped_by": "early_stopping", "last_change": 0.03, "converge_tol": 0.01, "loss_per_epoch": "",
         "distinct_label_sets": 4}])
    return pd.DataFrame(rows), log


def test_intersect_competence_gates_the_claims_against_a_failed_baseline():
    from biaslab.intersect import findings

    per, log = _baselines()
    table = findings.competence(per, log, level=0.95).set_index("check")
    assert table.loc["indic: BERT-MultiLabel (minilm) on C1 is trained to convergence", "passed"]
    assert table.loc["indic: Soft-Hamming (minilm) on C1 is trained to convergence", "passed"]  # early stopping
    assert table.loc["indic: BERT-MultiLabel (minilm) on C1 beats the majority label set", "passed"]
    assert table.loc["indic: BERT-MultiLabel (minilm) and Soft-Hamming (minilm) on C1 score differently", "passed"]
    assert not table.loc["indic: Zero-shot LLM (smollm2) beats the majority label set", "passed"]  # below a constant
    # a classifier still moving at its last epoch, and two classifiers with the same scores, fail
    per2, log2 = _baselines(same=True, stuck=True)
    table2 = findings.competence(per2, log2, level=0.95).set_index("check")
    assert not table2.loc["indic: BERT-MultiLabel (minilm) on C1 is trained to convergence", "passed"]
    assert not table2.loc["indic: BERT-MultiLabel (minilm) and Soft-Hamming (minilm) on C1 score differently",
                          "passed"]
    assert findings.checks_of(table2.reset_index(), "indic", "Soft-Hamming (minilm)") == (
        "indic: Soft-Hamming (minilm) on C1 is trained to convergence",
        "indic: Soft-Hamming (minilm) on C1 beats the majority label set",
        "indic: BERT-MultiLabel (minilm) and Soft-Hamming (minilm) on C1 score differently")
