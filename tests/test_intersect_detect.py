"""intersect §5: label aggregation, Jaccard / exact match, the detector and the evaluation table."""

import numpy as np
import pandas as pd
import pytest

from biaslab.intersect import detect, evaluate
from biaslab.metrics.detection import exact_match, jaccard, mean_scores

from conftest import model_dir


def test_jaccard_and_exact_match_by_hand():
    assert jaccard({"gender", "caste"}, {"gender"}) == 0.5
    assert jaccard({"gender", "caste"}, {"gender", "age", "caste"}) == pytest.approx(2 / 3)
    assert jaccard({"unbiased"}, {"unbiased"}) == 1.0 and jaccard(set(), set()) == 1.0
    assert jaccard({"unbiased"}, {"gender"}) == 0.0
    assert exact_match(["a", "b"], ["b", "a"]) == 1.0 and exact_match(["a"], ["a", "b"]) == 0.0
    s = mean_scores([["a", "b"], ["u"]], [["a"], ["u"]])
    assert s == {"jaccard": 0.75, "exact_match": 0.5, "n": 2}
    with pytest.raises(ValueError):
        mean_scores([["a"]], [])


AGG = {"method": "share", "threshold": 0.2, "top_m": 2, "weighted": False}


def agg(**over):
    return AGG | over


def test_share_aggregation():
    labs = ["gender"] * 6 + ["caste"] * 5 + ["age"] * 2 + ["unbiased"] * 2
    assert detect.aggregate(labs, **agg(threshold=0.2)) == ["caste", "gender"]
    assert detect.aggregate(labs, **agg(threshold=0.4)) == ["gender"]
    assert detect.aggregate(labs, **agg(threshold=0.9)) == ["gender"]  # fallback: the most frequent biased label
    assert detect.aggregate(["unbiased"] * 3 + ["gender"] * 2, **AGG) == ["unbiased"]  # exclusive
    assert detect.aggregate([], **AGG) == ["unbiased"]


def test_weighted_and_top_aggregation():
    labs = ["gender", "caste", "caste"]
    assert detect.aggregate(labs, [0.9, 0.1, 0.1], **agg(weighted=True, threshold=0.5)) == ["gender"]
    assert detect.aggregate(labs, **agg(method="top", top_m=1)) == ["caste"]
    with pytest.raises(ValueError, match="unknown aggregation"):
        detect.aggregate(labs, **agg(method="vote"))


class OneHot:
    """Encoder stub: a text's vector is the one-hot of its first word."""

    vocab = ("gender", "caste", "kind", "age")

    def encode(self, texts):
        out = np.full((len(texts), 4), 1e-3, np.float32)
        for i, t in enumerate(texts):
            out[i, self.vocab.index(t.split()[0])] = 1.0
        return out


def reference():
    return pd.DataFrame({"text": ["gender a", "gender b", "caste a", "kind a", "age a"],
                         "label": ["gender", "gender", "caste", "unbiased", "age"]})


def test_detector_returns_labels_and_evidence():
    det = detect.Detector(OneHot(), reference())
    [d] = det.detect(["gender story"], k=2, **AGG)
    assert d.labels == ["gender"]
    assert [e[1] for e in d.evidence] == ["gender", "gender"] and d.evidence[0][2] == pytest.approx(1.0, abs=1e-3)
    saved = detect.Detector(OneHot(), reference(), OneHot().encode(reference()["text"]))  # a saved index
    assert saved.detect(["gender story"], k=2, **AGG) == [d]
    with pytest.raises(ValueError, match="4 saved vectors for 5 reference sentences"):
        detect.Detector(OneHot(), reference(), OneHot().encode(reference()["text"][:4]))


def test_evaluate_detector_rows():
    paragraphs = pd.DataFrame({"paragraph_id": ["p1", "p2", "p3"], "text": ["gender x", "caste y", "kind z"],
                               "labels": [["gender"], ["caste", "gender"], ["unbiased"]]})
    splits = pd.DataFrame({"subset": "C1", "paragraph_id": ["p1", "p2", "p3"], "train": False,
                           "test_seen": [True, False, True], "test_unseen": [False, True, True],
                           "test_all": True})
    data = {"indic": evaluate.CorpusData(paragraphs, reference(), splits)}
    res = evaluate.evaluate_detector(OneHot(), model="m", train_corpus="indic", subset="C1", corpora=data, ks=[1], **AGG)
    r = res.set_index("test_set")
    assert r.loc["seen", "jaccard"] == 1.0  # p1 -> gender, p3 -> unbiased
    assert r.loc["unseen", "jaccard"] == pytest.approx((0.5 + 1.0) / 2)  # p2 predicted {caste}
    assert set(res["domain"]) == {"in-domain"}
    summary = evaluate.summarise(res, 1)
    assert summary["subsets"].tolist() == [1, 1, 1]
    assert evaluate.headline(summary)["indic->indic"]["m"]["seen"] == 1.0


def test_k_is_chosen_on_validation_paragraphs_only():
    paragraphs = pd.DataFrame({"paragraph_id": ["v1", "v2", "t1"], "text": ["gender x", "caste y", "gender z"],
                               "labels": [["gender"], ["caste"], ["caste"]]})
    splits = pd.DataFrame({"subset": "C1", "paragraph_id": ["v1", "v2", "t1"], "train": False,
                           "val": [True, True, False], "test_seen": [False, False, True], "test_unseen": False,
                           "test_all": [False, False, True]})
    data = {"indic": evaluate.CorpusData(paragraphs, reference(), splits)}
    val = evaluate.paragraph_scores(OneHot(), model="m", train_corpus="indic", subset="C1", corpora=data, ks=[1, 5],
                                    split="val", **AGG)
    assert set(val["paragraph_id"]) == {"v1", "v2"}  # the test paragraph never takes part
    k, table = evaluate.select_k(val)
    assert k == 1 and table.loc[table["chosen"], "k"].tolist() == [1]
    assert table.set_index("k").loc[1, "jaccard"] == 1.0
    tie = val.assign(jaccard=0.5)
    assert evaluate.select_k(tie)[0] == 1  # ties go to the smaller k
    with pytest.raises(ValueError, match="intersect.splits.validation"):
        evaluate.select_k(val.iloc[:0])
    # intersect.evaluate.k: a number is used as it is, "validation" takes the validation choice
    assert evaluate.evaluation_depth(5, val)[::2] == (5, "fixed")
    assert evaluate.evaluation_depth("validation", val)[::2] == (1, "validation")


def test_frozen_base_stands_in_cross_domain_with_its_own_scores():
    paragraphs = pd.DataFrame({"paragraph_id": ["p1", "p2"], "text": ["gender x", "caste y"],
                               "labels": [["gender"], ["caste"]]})
    splits = pd.DataFrame({"subset": "C1", "paragraph_id": ["p1", "p2"], "train": False, "test_seen": True,
                           "test_unseen": False, "test_all": True})
    data = {c: evaluate.CorpusData(paragraphs, reference(), splits) for c in ("indic", "western")}
    per = evaluate.base_scores(OneHot(), model="base", runs=[("indic", "C1"), ("western", "C1"), ("indic", "C2")],
                               corpora=data, ks=[1], **AGG)
    cross = per[per["domain"] == "cross-domain"]
    # trained-on-western retrievers are tested on indic: the base's bar there is its indic score
    assert set(zip(cross["train_corpus"], cross["test_corpus"], strict=True)) == {("western", "indic"), ("indic", "western")}
    ind = per[(per["domain"] == "in-domain") & (per["test_corpus"] == "indic")]["jaccard"].to_numpy()
    assert np.array_equal(cross[cross["test_corpus"] == "indic"]["jaccard"].to_numpy(), ind)
    assert set(per["subset"]) == {"C1"}  # no C2 test rows exist in these splits
    # one trained retriever is enough: its cross-domain bar is the base on the other corpus
    one = evaluate.base_scores(OneHot(), model="base", runs=[("indic", "C1")], corpora=data, ks=[1], **AGG)
    assert set(zip(one["train_corpus"], one["test_corpus"], one["domain"], strict=True)) == {
        ("indic", "indic", "in-domain"), ("indic", "western", "cross-domain")}


def test_detect_cli_and_function(tmp_path, capsys):
    import json

    from biaslab import cli

    ref = pd.DataFrame({"text": ["Women are bad drivers.", "Old people cannot use phones.", "The park is lovely."],
                        "label": ["gender", "age", "unbiased"]})
    ref.to_parquet(tmp_path / "ref.parquet")
    assert cli.main(["detect", "--model", "minilm", "--reference", str(tmp_path / "ref.parquet"), "--k", "1",
                     "--json", "She said women should never drive."]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["labels"] == ["gender"] and out[0]["evidence"][0]["label"] == "gender"
    from biaslab.embed import Encoder

    enc = Encoder(model_dir("minilm"), device="cpu", batch_size=8)
    [d] = detect.detect_texts(["Grandpa cannot text."], enc, ref, k=1, **AGG)
    assert d.labels == ["age"]


def test_a_text_unlike_the_reference_abstains_below_the_validation_floor(tmp_path, capsys):
    import json

    from biaslab import cli
    from biaslab.embed import Encoder

    ref = pd.DataFrame({"text": ["Women are bad drivers.", "Old people cannot use phones.", "The park is lovely."],
                        "label": ["gender", "age", "unbiased"]})
    det = detect.Detector(Encoder(model_dir("minilm"), device="cpu", batch_size=8), ref)
    validation = ["Women should not be allowed to drive cars.", "Elderly people never understand smartphones."]
    floor = detect.abstain_floor(det, validation, 0.0)  # the lowest validation similarity
    near, far = det.detect(["Women drive badly.", "The quarterly report lists the tax rates."], k=1,
                           min_similarity=floor, **AGG)
    assert near.labels == ["gender"] and not near.abstained
    assert far.labels == ["unbiased"] and far.abstained and far.evidence[0][2] < floor  # the evidence stays
    assert not any(d.abstained for d in det.detect(validation, k=1, min_similarity=floor, **AGG))
    with pytest.raises(ValueError, match="no validation paragraphs"):
        detect.abstain_floor(det, [], 0.01)
    ref.to_parquet(tmp_path / "ref.parquet")
    assert cli.main(["detect", "--model", "minilm", "--reference", str(tmp_path / "ref.parquet"), "--k", "1",
                     "--min-similarity", "0.99", "--json", "Women drive badly."]) == 0
    [out] = json.loads(capsys.readouterr().out)
    assert out["abstained"] and out["labels"] == ["unbiased"] and out["floor"] == 0.99
