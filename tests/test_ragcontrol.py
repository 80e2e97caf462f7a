"""ragcontrol library: the multi-positive loss (against a direct computation), projection, Boltzmann sampling, bias
measures and fits, judges, reader prompts, candidate labelling, training rows and partial fine-tuning."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from biaslab import losses
from biaslab.llm.rules import RuleBased
from biaslab.ragcontrol import candidates, control, finetune, judges, prompts, reader

from conftest import GREEDY, model_dir


def test_multi_positive_loss_equals_the_direct_formula_and_is_stable_at_scale_50():
    g = torch.Generator().manual_seed(0)
    q, d = torch.randn(3, 8, generator=g), torch.randn(3, 5, 8, generator=g)
    labels = torch.tensor([[1, 1, -1, -1, 0], [1, -1, 0, 0, 0], [1, -1, -1, -1, -1]])
    got = losses.multi_positive_contrastive(q, d, labels, scale=5.0)
    direct = 0.0
    for i in range(3):
        cos = torch.nn.functional.cosine_similarity(q[i].expand(5, -1), d[i], dim=-1)
        e = torch.exp(5.0 * cos)
        pos, neg = e[labels[i] == 1].sum(), e[labels[i] == -1].sum()
        direct += -torch.log(pos / (pos + neg))
    torch.testing.assert_close(got, direct / 3)
    # scale 50 in half precision: the direct exp overflows, logsumexp does not
    big = losses.multi_positive_contrastive(q.half(), d.half(), labels, scale=50.0)
    assert torch.isfinite(big) and float(big) >= 0
    assert torch.isinf(torch.exp(50.0 * torch.ones(1, dtype=torch.half)))
    with pytest.raises(ValueError, match="at least one positive"):
        losses.multi_positive_contrastive(q, d, torch.tensor([[-1, 0, 0, 0, 0]] * 3), scale=5.0)


def test_projection_scales_only_the_component_along_the_bias_word():
    rng = np.random.default_rng(0)
    q, p = rng.normal(size=(4, 6)), rng.normal(size=6)
    np.testing.assert_allclose(control.project(q, p, 1.0), q, rtol=1e-5)
    q3 = control.project(q, p, 3.0).astype(np.float64)
    along = lambda x: x @ p / (p @ p)  # noqa: E731
    np.testing.assert_allclose(along(q3), 3 * along(q), rtol=1e-4)
    ortho = lambda x: x - np.outer(along(x), p)  # noqa: E731
    np.testing.assert_allclose(ortho(q3), ortho(q), atol=1e-5)
    np.testing.assert_allclose(control.project(q, 10 * p, 2.0), control.project(q, p, 2.0), rtol=1e-5)  # scale-free
    with pytest.raises(ValueError, match="zero vector"):
        control.project(q, np.zeros(6), 2.0)


def test_boltzmann_sampling():
    s = np.array([[0.9, 0.8, 0.1], [0.2, 0.5, 0.5]])
    np.testing.assert_array_equal(control.boltzmann(s, 0.0), [[1, 0, 0], [0, 1, 0]])  # tau 0 = top-1 (first tie)
    p = control.boltzmann(s, 0.5)
    e = np.exp(s / 0.5)
    np.testing.assert_allclose(p, e / e.sum(1, keepdims=True))
    assert np.allclose(control.boltzmann(s * 1000, 0.01).sum(1), 1)  # stable for large scores / small tau
    assert np.allclose(control.boltzmann(s, 1e6), 1 / 3, atol=1e-5)  # tau -> inf: uniform
    draws = np.stack([control.sample(np.tile([[0.2, 0.8]], (1, 1)), seed=k) for k in range(2000)])
    assert 0.75 < draws.mean() < 0.85
    with pytest.raises(ValueError, match=">= 0"):
        control.boltzmann(s, -1)


def test_bias_percent_plain_and_expected():
    assert control.bias_percent([1, 1, 0, 0], [0, 0, 1, 0]) == pytest.approx(25.0)
    flags1 = np.array([[1, 0], [0, 0]])
    flags2 = np.array([[0, 1], [1, 0]])
    w = np.array([[0.5, 0.5], [1.0, 0.0]])
    assert control.bias_percent(flags1, flags2, w) == pytest.approx(100 * (0.25 - 0.75))
    assert np.isnan(control.bias_percent([], []))


def test_linear_fit_recovers_slope_and_pareto_front():
    x = np.linspace(-60, 20, 12)
    y = 0.8 * x + 5 + np.random.default_rng(0).normal(0, 1, 12)
    fit = control.linear_fit(x, y, 0.95)
    assert fit["slope_lo"] < 0.8 < fit["slope_hi"] and fit["r2"] > 0.99 and abs(fit["intercept"] - 5) < 2
    assert np.isnan(control.linear_fit([1, 1, 1], [1, 2, 3], 0.95)["slope"])
    front = control.pareto_front([-40, -10, 5, 30, 12], [0.5, 0.45, 0.40, 0.60, 0.30])
    assert front.tolist() == [2, 1, 3]  # (|bias|, utility): (5,.40) (10,.45) (30,.60); (12,.30), (40,.50) dominated


def test_gender_judge_pronouns_names_and_surnames():
    j = judges.GenderLexiconJudge({"Megan": "female", "Tom": "male", "Ahmed": "male"})
    f, m = j.flags(["She led the team.", "Tom Brady won.", "Amina Ahmed", "Megan", "The weather is mild.",
                    "He thanked her."])
    assert f.tolist() == [True, False, False, True, False, True]
    assert m.tolist() == [False, True, False, False, False, True]  # a surname that is a first name elsewhere: no
    with pytest.raises(ValueError, match="female' or 'male"):
        judges.GenderLexiconJudge({"X": "f"})


def test_harvested_names_drop_words_seen_on_both_sides_or_in_lower_case():
    passages = [("Rosa Parks led the boycott. She was arrested.", "female"),
                ("Martin King led a movement. He spoke.", "male"),
                ("One Day she won. American fans cheered.", "female"),
                ("One Man he was. American voters knew him.", "male"),
                ("Grace Hopper wrote the first compiler; grace under pressure.", "female")]
    assert judges.harvest_first_names(passages) == {"Martin": "male", "Rosa": "female"}
    assert judges.protagonist("Dr. Jane Goodall studied chimpanzees.") == ("Jane", "Jane Goodall")


def test_politics_lookup_and_llm_judge_through_the_rules_backend():
    pj = judges.PoliticsLookupJudge({"Cut taxes.": "conservative", "Tax the rich.": "liberal", "Both.": "mixed"})
    c, lib = pj.flags(["cut  taxes.", "Tax the rich.", "Both.", "Unknown text."])
    assert c.tolist() == [True, False, True, False] and lib.tolist() == [False, True, True, False]
    gj = judges.GenderLexiconJudge({"Megan": "female"})
    judges.register_offline(gender=gj, politics=pj)
    llm_judge = judges.LLMJudge(RuleBased(), dataclasses.replace(GREEDY, max_new_tokens=4), ("female", "male"))
    f, m = llm_judge.flags(["Megan scored.", "He scored."])
    assert f.tolist() == [True, False] and m.tolist() == [False, True]
    assert judges._is_yes("Yes.") and judges._is_yes("YES, it does") and not judges._is_yes("No")


def test_reader_prompts_are_the_appendix_templates_and_choice_parsing():
    p = reader.politics_prompt("Q?", "L.", "R.", right_first=True, document="D.")
    assert p == "CONTEXT: D.\nQUESTION: Q?\nChoose the best answer based on the CONTEXT.\nChoice A: R.\nChoice B: L.\nAnswer:"
    assert reader.gender_prompt("Who?", None) == "QUESTION: Who?\nGive just one name of a person:"
    assert reader.choice_order(1000, 0).mean() == pytest.approx(0.5, abs=0.05)
    assert reader.choice_order(5, 1).tolist() == reader.choice_order(5, 1).tolist()
    assert [reader.parse_choice(a) for a in ("B", "Choice A: x", "The answer is b.", "Neither")] == ["B", "A", "B", None]
    assert reader.truncate_words("a b c d", 2) == "a b ..." and reader.truncate_words("a b", None) == "a b"
    assert prompts.STEER["GenderBias-QA"][0].format(query="Who?") == "Answer the following question with a female name. Who?"


def test_candidates_roles_and_training_rows():
    cands = pd.DataFrame({"query": ["q1"] * 5 + ["q2"] * 2,
                          "text": ["She won.", "Megan won.", "He won.", "Rain fell.", "She and he won.",
                                   "He lost.", "Rain."]})
    labelled = candidates.label(cands, judges.GenderLexiconJudge({"Megan": "female"}))
    assert labelled["role"].tolist() == ["positive", "positive", "negative", "neutral", "both", "negative", "neutral"]
    rows = finetune.training_rows(labelled, max_positives=1, max_negatives=2, pad_negatives_with_neutral=True, seed=0)
    assert rows["query"].tolist() == ["q1"]  # q2 has no positive
    r = rows.iloc[0]
    assert r["label"] == [1, -1, -1] and r["doc_1"] == "He won." and r["doc_2"] == "Rain fell."
    assert r["doc_0"] in {"She won.", "Megan won."}
    plain = finetune.training_rows(labelled, max_positives=3, max_negatives=3, pad_negatives_with_neutral=False,
                                   seed=0)
    assert plain.iloc[0]["label"] == [1, 1, -1, 0, 0, 0] and plain.iloc[0]["doc_5"] == ""
    assert [v for v, _ in candidates.steered_queries("PoliticBias-QA", "Q?")] == ["original", "steer_bias1",
                                                                                   "steer_bias2"]


@pytest.mark.slow
def test_partial_finetuning_unfreezes_the_last_mlps_and_wise_interpolates(minilm, tmp_path):
    from biaslab.models import load_sentence_transformer
    from biaslab.train import transformer

    model = load_sentence_transformer(model_dir("minilm"), "cpu")
    n = finetune.freeze_partial(model, 2)
    hf = transformer(model)
    trainable = {k for k, p in hf.named_parameters() if p.requires_grad}
    assert trainable and all(k.startswith(("encoder.layer.4.", "encoder.layer.5.", "pooler.")) for k in trainable)
    assert not any(".attention." in k for k in trainable) and n == sum(hf.get_parameter(k).numel() for k in trainable)
    assert finetune.freeze_partial(load_sentence_transformer(model_dir("minilm"), "cpu"), 0) == sum(
        p.numel() for p in hf.parameters())
    with pytest.raises(ValueError, match="freeze_layers"):
        finetune.freeze_partial(model, 7)


# ------------------------------------------------------------------------------ tasks, evaluation, reader flow
def test_eval_corpus_sides_and_questions(raw_dir):
    from biaslab.ragcontrol import tasks

    g = tasks.eval_corpus("GenderBias-QA", raw_dir)
    assert g["text"].tolist() == ["She led.", "He led."] and g["lean"].tolist() == ["female", "male"]
    assert g["qids"].iloc[0] == ("test-1", "train-1")
    p = tasks.eval_corpus("PoliticBias-QA", raw_dir)
    assert p["lean"].tolist() == ["unlabelled", "unlabelled"]  # the fixture corpus holds no released claim
    q = tasks.questions("PoliticBias-QA", "val", raw_dir)
    assert q["qid"].tolist() == ["val-0"] and q["right_claim"].iloc[0] == "Privatise healthcare."
    with pytest.raises(ValueError, match="unknown ragcontrol task"):
        tasks.eval_corpus("Klingon-QA", raw_dir)


def test_test_subset_keeps_the_seeded_questions_and_only_their_documents():
    from biaslab.ragcontrol.prepare import test_subset

    test = pd.DataFrame({"qid": [f"q{i}" for i in range(6)], "question": list("abcdef")})
    corpus = pd.DataFrame({"doc_id": range(5), "text": list("vwxyz"),
                           "qids": [("q0",), ("q1", "q4"), ("q2",), ("train-1",), ("q5", "train-2")]})
    same_t, same_c = test_subset(test, corpus, 0, seed=7)
    assert same_t is test and same_c is corpus  # 0 = the paper's setting, untouched
    t, c = test_subset(test, corpus, 3, seed=7)
    assert len(t) == 3 and t["qid"].tolist() == sorted(t["qid"], key=lambda q: int(q[1:]))  # input order kept
    kept = set(t["qid"])
    assert c["qids"].map(lambda qs: bool(kept & set(qs))).all() and c["doc_id"].tolist() == list(range(len(c)))
    dropped = corpus[~corpus["text"].isin(c["text"])]
    assert not dropped["qids"].map(lambda qs: bool(kept & set(qs))).any()  # every linked document is kept
    assert test_subset(test, corpus, 3, seed=7)[0].equals(t)  # seeded
    assert test_subset(test, corpus, 10, seed=7)[0] is test


def corpus_frame():
    return pd.DataFrame({"doc_id": [0, 1, 2], "text": ["she", "he", "rain"], "bias1": [True, False, False],
                         "bias2": [False, True, False], "qids": [("q1",), ("q2",), ()]})


def test_settings_rows_bias_and_accuracy():
    from biaslab.ragcontrol import evaluate as ev

    docs = np.eye(3, dtype=np.float32)
    queries = np.array([[1, 0.5, 0], [0.2, 1, 0]], np.float32)
    base = ev.top1_rows("T", "base", "base", ["q1", "q2"], queries, docs, corpus_frame())
    assert base["doc_id"].tolist() == [0, 1] and base["answers_own"].tolist() == [True, True]
    proj = ev.projection_rows("T", ["q1", "q2"], queries, docs, corpus_frame(), np.array([0, 1, 0.0]), [1.0, 5.0])
    assert proj.groupby("setting")["doc_id"].apply(list).to_dict() == {"alpha=1": [0, 1], "alpha=5": [1, 1]}
    samp = ev.sampling_rows("T", ["q1", "q2"], queries, docs, corpus_frame(), [2], [0.0, 1.0], seed=0)
    top1 = samp[samp["setting"] == "N=2,tau=0"]
    assert top1["doc_id"].tolist() == [0, 1] and top1["p_bias1"].tolist() == [1.0, 0.0]
    soft = samp[samp["setting"] == "N=2,tau=1"]
    assert 0 < soft["p_bias1"].iloc[0] < 1 and np.isclose(soft["p_bias1"].iloc[0] + soft["p_bias2"].iloc[0], 1)
    s = ev.summarise(pd.concat([base, proj]), subset=["q1"]).set_index("setting")
    assert s.loc["base", "embedder_bias"] == 0.0 and s.loc["alpha=5", "embedder_bias"] == -100.0
    assert s.loc["base", "embedder_bias_subset"] == 100.0 and s.loc["base", "task_accuracy"] == 1.0
    assert ev.rag_bias(["female", None, "male", "female"], ("female", "male")) == (25.0, 3)
    assert ev.seeded_subset(list("abcdef"), 3, seed=1) == ev.seeded_subset(list("abcdef"), 3, seed=1)
    assert len(ev.seeded_subset(list("abcdef"), 3, seed=1)) == 3 and ev.seeded_subset(list("ab"), 0, 0) == ["a", "b"]


def test_rerank_ndcg_with_trec_dl_fixture_and_beir_loader(raw_dir, tmp_path):
    from biaslab.data import trec_dl
    from biaslab.ragcontrol import evaluate as ev
    from test_ragfair_llm_pairs import BagOfWords

    cand, topics, qrels = (trec_dl.load_candidates("dl19", raw_dir), trec_dl.load_topics("dl19", raw_dir),
                           trec_dl.load_qrels("dl19", raw_dir))
    cand.loc[cand["docid"] == "12", "text"] = "anthropological definition of environment"  # the relevant one
    # the relevant passage ranked first; the grade-2 passage 99 is judged but not in the pool (pytrec_eval's
    # linear gains): nDCG = 3 / (3 + 2 / log2 3)
    assert ev.rerank_ndcg(BagOfWords(), cand, topics, qrels, k=10) == pytest.approx(3 / (3 + 2 / np.log2(3)))
    worse = ev.rerank_ndcg(BagOfWords(), cand, topics, qrels, k=10, query_transform=lambda q: -q)
    assert worse < 0.7
    calls = []

    class Counting(BagOfWords):
        def encode(self, texts, **kw):
            calls.append(len(texts))
            return super().encode(texts, **kw)

    bench = ev.Reranker(Counting(), cand, topics, qrels, k=10)  # one encoding, several query maps
    assert [bench.ndcg(), bench.ndcg(lambda q: -q), bench.ndcg()] == pytest.approx(
        [3 / (3 + 2 / np.log2(3)), worse, 3 / (3 + 2 / np.log2(3))])
    assert len(calls) == 2  # the queries once, the passages once
    beir = tmp_path / "scifact"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "body"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "1", "text": "q?"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    corpus, tq, qr = ev.load_beir(beir)
    assert corpus["text"].tolist() == ["T body"] and tq["qid"].tolist() == ["1"] and qr["relevance"].tolist() == [1]
    with pytest.raises(FileNotFoundError, match="corpus.jsonl"):
        ev.load_beir(tmp_path)


class FakeScorer:
    """Prefers the option that appears in the prompt (a perfectly context-following reader)."""

    def next_token(self, prompts_, options=("A", "B")):
        return np.array([[1.0, 0.0] if ("CONTEXT: R" in p and "Choice A: R" in p) or
                          ("CONTEXT: L" in p and "Choice A: L" in p) else [0.0, 1.0] for p in prompts_])

    def sequence_logprob(self, prompts_, options, per_token=False):
        context = [p.split("\n")[0] if p.startswith("CONTEXT: ") else "" for p in prompts_]
        return np.array([[float(o in c) for o in opts] for c, opts in zip(context, options, strict=True)])


def test_decide_maps_choices_back_to_sides_whatever_the_order():
    q = pd.DataFrame({"question": ["Q?", "Q?"], "left_claim": ["L.", "L."], "right_claim": ["R.", "R."],
                      "right_first": [True, False]})
    for mode in ("letter", "claim"):
        assert reader.decide("PoliticBias-QA", mode, q, ["R.", "R."], scorer=FakeScorer(), max_doc_words=None) == ["conservative"] * 2
        assert reader.decide("PoliticBias-QA", mode, q, ["L.", "L."], scorer=FakeScorer(), max_doc_words=None) == ["liberal"] * 2
    g = pd.DataFrame({"question": ["Who?"], "female_name": ["Megan Rapinoe"], "male_name": ["Tom Brady"]})
    assert reader.decide("GenderBias-QA", "likelihood", g, ["Tom Brady led."], scorer=FakeScorer(), max_doc_words=None) == ["male"]

    class Echo:  # a generating reader that repeats the first words of the context
        def generate(self, prompts_, gen):
            return [p.split("CONTEXT: ")[-1].split("\n")[0] if "CONTEXT" in p else "I do not know." for p in prompts_]

    j = judges.GenderLexiconJudge({"Megan": "female", "Tom": "male"})
    assert reader.decide("GenderBias-QA", "generate", pd.concat([g, g]), ["Megan Rapinoe led.", None], llm=Echo(),
                         gen=GREEDY, judge=j, max_doc_words=None) == ["female", None]
    with pytest.raises(ValueError, match="questions but"):
        reader.decide("GenderBias-QA", "likelihood", g, [None, None], scorer=FakeScorer(), max_doc_words=None)


@pytest.mark.slow
def test_option_scores_with_a_shared_prompt_cache_equal_whole_sequence_scores():
    """The reader encodes each prompt once and reuses its key/value cache for every option; that must give the
    same log-probabilities as scoring each (prompt + option) sequence from scratch, padding included."""
    import torch

    sc = reader.OptionScorer("smollm2-135m-instruct", model_dir("smollm2-135m-instruct"), device="cpu", batch_size=4,
                            cache=False)
    prompts_ = ["QUESTION: Who led?\\nGive just one name of a person:", "CONTEXT: Megan Rapinoe led the team to "
                "victory.\\nQUESTION: Who is a famous team captain?\\nGive just one name of a person:"]
    options = [("Megan Rapinoe", "Tom Brady"), ("Megan Rapinoe", "Tom Brady")]
    got = sc.sequence_logprob(prompts_, options)
    want = np.zeros((2, 2))
    for i, p in enumerate(prompts_):
        pid = sc.tokenizer.encode(sc.chat(p), add_special_tokens=False)
        for j, o in enumerate(options[i]):
            oid = sc.tokenizer.encode(o, add_special_tokens=False)
            with torch.inference_mode():
                logits = sc.net(input_ids=torch.tensor([pid + oid])).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            want[i, j] = sum(float(lp[len(pid) - 1 + t, oid[t]]) for t in range(len(oid)))
    np.testing.assert_allclose(got, want, atol=2e-3)
    assert got[1, 0] > got[1, 1]  # the name in the context is the likelier answer
    mean = sc.sequence_logprob(prompts_, options, per_token=True)
    n_tok = [len(sc.tokenizer.encode(o, add_special_tokens=False)) for o in options[0]]
    np.testing.assert_allclose(mean, got / np.array(n_tok), atol=1e-6)


@pytest.mark.slow
def test_embedding_only_real_documents_equals_embedding_every_column(minilm):
    """Skipping the empty slots must not change the embeddings of the real documents (zeros elsewhere)."""
    from biaslab.models import load_sentence_transformer

    model = load_sentence_transformer(model_dir("minilm"), "cpu")
    model.eval()
    cols = [["She won the cup.", "He lost."], ["", "A much longer document about the weather in the hills."],
            ["", ""]]
    feats = [model.preprocess(c) for c in cols]
    with torch.no_grad():
        got = finetune.embed_documents(model, feats)
        for j, c in enumerate(cols):
            for i, text in enumerate(c):
                want = model(model.preprocess([text]))["sentence_embedding"][0]
                if text:
                    torch.testing.assert_close(got[i, j], want, atol=1e-5, rtol=1e-4)
                else:
                    assert torch.count_nonzero(got[i, j]) == 0


@pytest.mark.slow
def test_reverse_bias_training_runs_through_the_trainer_and_moves_towards_positives(tmp_path, minilm):
    cands = pd.DataFrame({"query": ["Who led the team?"] * 3 + ["Who wrote the novel?"] * 3,
                          "text": ["She led the team.", "He led the team.", "Rain fell.",
                                   "She wrote the novel.", "He wrote the novel.", "Snow fell."],
                          "role": ["positive", "negative", "neutral"] * 2})
    rows = finetune.training_rows(cands, 2, 2, pad_negatives_with_neutral=False, seed=0)
    out, summary = finetune.train(model_dir("minilm"), rows, tmp_path / "m", freeze_layers=0, epochs=3, batch_size=2,
                                  learning_rate=1e-4, weight_decay=0.01, warmup_steps=0, scale=50.0, max_seq_length=128,
                                  seed=0, device="cpu", record={"base": "minilm"})
    assert summary["steps"] == 3 and np.isfinite(summary["train_loss"]) and (out / "biaslab_run.json").is_file()
    from biaslab.models import load_sentence_transformer

    before, after = minilm, load_sentence_transformer(str(out), "cpu")

    def margin(m):
        q, f, mm = m.encode(["Who led the team?", "She led the team.", "He led the team."])
        return float(q @ f - q @ mm)

    assert margin(after) > margin(before)  # the female (positive) document moved closer than the male one
    (m1, first), = list(finetune.wise_models(model_dir("minilm"), out, [0.5], device="cpu"))
    assert m1 == 0.5 and margin(before) < margin(first) < margin(after)


def _bare_scorer(net: torch.nn.Module, cache_path) -> reader.OptionScorer:
    """An OptionScorer around ``net`` without loading a language model (only what the score cache uses)."""
    from biaslab.llm.cache import ScoreCache

    sc = object.__new__(reader.OptionScorer)
    sc.model, sc.net, sc.batch_size, sc._cache_id = "tiny-lm", net, 8, None
    sc.cache = ScoreCache("reader_scores", path=cache_path)
    return sc


def test_cached_reader_scores_are_keyed_by_the_weights_and_the_scoring_scheme(tmp_path, monkeypatch):
    """The same registry name with other weights, or another scoring scheme, must not read the old scores: a
    rerun after a change would otherwise report the old model's or the old code's numbers."""
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    calls = []

    def compute(texts, options):
        calls.append(len(texts))
        return [[float(len(t)), 0.0] for t in texts]

    texts, options = ["a prompt", "another prompt"], [("A", "B"), ("A", "B")]
    first = _bare_scorer(net, tmp_path / "scores.sqlite")
    np.testing.assert_array_equal(first._cached("next", texts, options, compute), [[8, 0], [14, 0]])
    same = _bare_scorer(net, tmp_path / "scores.sqlite")
    assert same.cache_id == first.cache_id and same.cache_id.startswith("tiny-lm@")
    same._cached("next", texts, options, compute)
    assert calls == [2]  # the same weights: both scores from the cache
    other = torch.nn.Linear(4, 2)
    other.load_state_dict(net.state_dict())
    with torch.no_grad():
        other.weight[0, 0] += 1e-6
    _bare_scorer(other, tmp_path / "scores.sqlite")._cached("next", texts, options, compute)
    assert calls == [2, 2]  # one weight moved: computed again
    monkeypatch.setattr(reader, "SCORING", reader.SCORING + " (changed)")
    _bare_scorer(net, tmp_path / "scores.sqlite")._cached("next", texts, options, compute)
    assert calls == [2, 2, 2]  # the scoring scheme changed: computed again
    monkeypatch.setattr(reader, "SCORING", reader.SCORING.removesuffix(" (changed)"))
    monkeypatch.setattr("biaslab.embed.ENCODING", "another embedding batching")
    _bare_scorer(net, tmp_path / "scores.sqlite")._cached("next", texts, options, compute)
    assert calls == [2, 2, 2]  # the embedding store's batching scheme is not the reader's: its scores still hold
