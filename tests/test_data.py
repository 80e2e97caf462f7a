"""Readers on tiny fixtures in the real schemas — good files load, bad ones fail naming file, row/column and fix."""

import json

import pandas as pd
import pytest

from biaslab.data import (
    DataError,
    bbq,
    grep_biasir,
    indibias,
    kim2025,
    rekabsaz,
    sbic,
    seat,
    trec_dl,
    trec_fair,
    twinviews,
    wikitext,
)
from biaslab.data.fetch import validators

import fixtures


def test_every_reader_accepts_good_fixtures(raw_dir):
    counts = {name: fn(raw_dir) for name, fn in validators().items()}
    assert counts["indibias"] == {"IndiBias_v1_sample.csv": 2}
    assert counts["seat"] == {"tests": 2}
    assert counts["trec_fair_2022"] == {"selected_topics_22.txt": 100}
    assert counts["msmarco_train_triples_splade_toy"] == {"triplets_raw.tsv": 2}


def test_indibias_columns(raw_dir):
    df = indibias.load(raw_dir)
    assert list(df.columns) == ["pair_id", "sent_more", "sent_less", "sent_more_hindi", "sent_less_hindi",
                                "bias_type", "stereo_antistereo"]
    assert df["pair_id"].tolist() == [649, 12]


def test_missing_dataset_folder_names_the_fix(tmp_path):
    with pytest.raises(DataError, match=r"data set 'indibias' not found .*biaslab fetch indibias"):
        indibias.load(tmp_path)


def test_missing_column_is_named(raw_dir):
    path = raw_dir / "indibias" / "IndiBias_v1_sample.csv"
    df = pd.read_csv(path, index_col=0).drop(columns=["bias_type"])
    df.to_csv(path)
    with pytest.raises(DataError) as e:
        indibias.load(raw_dir)
    assert "IndiBias_v1_sample.csv" in str(e.value) and "bias_type" in str(e.value) and "biaslab fetch" in str(e.value)


def test_empty_cell_names_the_row(raw_dir):
    path = raw_dir / "indibias" / "IndiBias_v1_sample.csv"
    df = pd.read_csv(path, index_col=0, dtype=str)
    df.loc[df.index[1], "modified_eng_sent_less"] = ""
    df.to_csv(path)
    with pytest.raises(DataError, match=r"row 3: column 'modified_eng_sent_less' is empty"):
        indibias.load(raw_dir)


def test_unknown_category_value_is_named(raw_dir):
    path = raw_dir / "indibias" / "IndiBias_v1_sample.csv"
    df = pd.read_csv(path, index_col=0, dtype=str)
    df.loc[df.index[0], "stereo_antistereo"] = "maybe"
    df.to_csv(path)
    with pytest.raises(DataError, match=r"row 2: column 'stereo_antistereo' has 'maybe'"):
        indibias.load(raw_dir)


def test_sbic_parses_lists_and_inverted_flag(raw_dir):
    df = sbic.load("dev", raw_dir)
    assert df["biased"].tolist() == [False, True]
    assert df.loc[1, "target_category"] == ["gender"] and "\n" in df.loc[0, "post"]
    with pytest.raises(ValueError, match="train split is not"):
        sbic.load("train", raw_dir)


def test_sbic_malformed_list_names_record(raw_dir):
    path = raw_dir / "sbic" / "SBIC.v2.agg.dev.csv"
    df = pd.read_csv(path, index_col=0)
    df.loc[1, "targetCategory"] = "gender"  # not JSON
    df.to_csv(path)
    with pytest.raises(DataError, match=r"row 1: column 'targetCategory' is not a JSON list"):
        sbic.load("dev", raw_dir)


def test_sbic_flag_disagreement_is_caught(raw_dir):
    path = raw_dir / "sbic" / "SBIC.v2.agg.tst.csv"
    df = pd.read_csv(path, index_col=0)
    df.loc[0, "hasBiasedImplication"] = 0
    df.to_csv(path)
    with pytest.raises(DataError, match="hasBiasedImplication disagrees"):
        sbic.load("test", raw_dir)


def test_seat_tests_and_bad_file(raw_dir):
    tests = seat.load_tests(None, raw_dir)
    assert [t.name for t in tests] == ["sent-weat6", "weat6"]
    assert tests[1].level == "word" and tests[0].level == "sentence"
    with pytest.raises(DataError, match="unknown SEAT test"):
        seat.load_tests(["weat99"], raw_dir)
    bad = raw_dir / "seat" / "sent-bias_tests" / "weat6.jsonl"
    obj = json.loads(bad.read_text())
    del obj["attr2"]
    bad.write_text(json.dumps(obj))
    with pytest.raises(DataError, match=r"weat6.jsonl: missing 'attr2'"):
        seat.load_tests(["weat6"], raw_dir)
    bad.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        seat.load_tests(["weat6"], raw_dir)


def test_bbq_target_and_biased_answer(raw_dir):
    df = bbq.load(None, raw_dir)
    assert df["target_loc"].tolist() == [0, 0, 0]  # grandfather is the 'old' answer
    assert df["unknown_loc"].tolist() == [2, 2, 2]
    assert df["biased_loc"].tolist() == [0, 1, 0]  # nonneg questions flip to the non-target answer


def test_bbq_matches_surface_strings_and_intersectional_labels():
    rec = fixtures.bbq_record(0)
    rec["answer_info"] = {"ans0": ["British", "Europe"], "ans1": ["Japanese", "AsiaPacific"], "ans2": ["?", "unknown"]}
    rec["additional_metadata"]["stereotyped_groups"] = ["British"]
    assert bbq.derive_locs(rec, None, 1) == (2, 0, 0)
    rec["answer_info"] = {"ans0": ["Unknown", "unknown"], "ans1": ["Jamal", "M-Black"], "ans2": ["Amy", "F-White"]}
    rec["additional_metadata"]["stereotyped_groups"] = ["Black"]
    rec["question_polarity"] = "nonneg"
    assert bbq.derive_locs(rec, None, 1) == (0, 1, 2)


def test_bbq_ambiguous_target_is_an_error(raw_dir):
    path = raw_dir / "bbq" / "data" / "Age.jsonl"
    rec = fixtures.bbq_record(9)
    rec["additional_metadata"]["stereotyped_groups"] = ["old", "nonOld"]
    path.write_text(path.read_text() + json.dumps(rec) + "\n")
    with pytest.raises(DataError, match=r"Age.jsonl: line 4: cannot identify the bias-target answer"):
        bbq.load(["Age"], raw_dir)


def test_bbq_malformed_line_and_missing_category(raw_dir):
    path = raw_dir / "bbq" / "data" / "Age.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(DataError, match=r"Age.jsonl: line 4: not valid JSON"):
        bbq.load(["Age"], raw_dir)
    with pytest.raises(DataError, match="regenerate them from the templates"):
        bbq.load(["Gender_identity"], raw_dir)


def test_kim2025_tasks(raw_dir):
    g = kim2025.load_genderbias_qa("test", raw_dir)
    assert {"female_doc1", "male_doc2"} <= set(g.columns)
    assert kim2025.load_politicbias_qa("val", raw_dir)["left_claim"].tolist() == ["Expand healthcare."]
    assert len(kim2025.load_corpus("GenderBias-QA", raw_dir)) == 2


def test_twinviews_exclusion(raw_dir):
    tv = twinviews.load(raw_dir)
    claims = kim2025.load_politicbias_qa("test", raw_dir)
    kept = twinviews.exclude_pairs(tv, claims)
    assert kept["left"].tolist() == ["Expand healthcare."]


def test_rekabsaz_queries_with_commas_and_wordlists(raw_dir):
    q = rekabsaz.load_gender_queries(raw_dir)
    assert q.loc[1, "query"] == "cats, dogs and birds" and q["label"].tolist() == ["m", "n"]
    assert rekabsaz.load_gender_queries(raw_dir, clean=True)["query"].tolist() == q["query"].tolist()
    wl = rekabsaz.load_wordlist("representative", raw_dir)
    assert wl["word"].tolist() == ["actress", "actor"]
    (raw_dir / "genderbias_ir_rekabsaz2020" / "wordlist_genderspecific.txt").write_text("boy,m\ngirl\n")
    with pytest.raises(DataError, match=r"wordlist_genderspecific.txt: line 2"):
        rekabsaz.load_wordlist("genderspecific", raw_dir)
    assert rekabsaz.load_fair_queries("trecdl19", raw_dir, annotated=True)["categories"].tolist() == ["Career"]


def test_grep_documents(raw_dir):
    docs = grep_biasir.load_documents(raw_dir)
    assert set(docs["content_gender"]) == {"F", "M"} and docs["relevant"].dtype == bool
    assert len(grep_biasir.load_queries(raw_dir)) == 1


def test_trec_fair_split_is_50_50(raw_dir):
    t = trec_fair.load(raw_dir)
    assert t["split"].value_counts().to_dict() == {"train": 50, "eval": 50}


def test_wikitext_articles_sections_and_detokenisation(raw_dir):
    para = wikitext.load_paragraphs(tuple(wikitext.FILES), raw_dir)
    assert para["article"].tolist() == ["Ada Lovelace", "Ada Lovelace", "<unk>"]
    assert para["article_id"].tolist() == [0, 0, 1] and para["section"].fillna("").tolist() == ["", "Early life", ""]
    assert para["text"].iloc[0] == ("Ada Lovelace was an English <unk>. She wrote the first program in 1,843. "
                                    "It ran on the Analytical Engine (a design).")
    assert para["text"].iloc[1].endswith("Lord Byron's marriage.")
    assert para["text"].iloc[2] == 'A state-of-the-art "engine" was built in 0.7 years.'
    sents = wikitext.load_sentences(tuple(wikitext.FILES), raw_dir, min_words=3)
    assert sents.loc[sents["paragraph"] == 0, "sentence"].tolist() == [
        "Ada Lovelace was an English <unk>.", "She wrote the first program in 1,843.",
        "It ran on the Analytical Engine (a design)."]
    (raw_dir / "wikitext2_valid_test" / "wikitext2_valid.txt").write_text("Orphan text before any title .\n")
    with pytest.raises(DataError, match=r"wikitext2_valid.txt: line 1: text before the first"):
        wikitext.load_paragraphs(tuple(wikitext.FILES), raw_dir)


def test_trec_dl_candidates_qrels_topics(raw_dir):
    cand = trec_dl.load_candidates("dl19", raw_dir)
    assert cand["docid"].tolist() == ["11", "12", "13"] and cand["qid"].unique().tolist() == ["19335"]
    qrels = trec_dl.load_qrels("dl19", raw_dir)
    assert trec_dl.judged_queries(cand, qrels) == ["19335"]
    assert trec_dl.load_topics("dl20", raw_dir)["query"].tolist() == ["who is aziz hashim"]
    (raw_dir / "trecdl_passage_bm25_top100_text" / "qrels.dl19-passage.txt").write_text("19335 Q0 11 zero\n")
    with pytest.raises(DataError, match=r"qrels.dl19-passage.txt: line 1"):
        trec_dl.load_qrels("dl19", raw_dir)
