"""Readers of the cscl data: the offline stand-ins (Dixon et al. identity-term sets, the Bias in Bios sample) and
the official full-data layouts a user may point the pipeline at (Civil Comments CSVs, Bias in Bios pickles)."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from biaslab.data import DataError, biasbios, jigsaw

import fixtures


def test_dixon_testsets(tmp_path):
    fixtures.write_jigsaw_testsets(tmp_path)
    m = jigsaw.load_madlibs(tmp_path)
    assert m["toxic"].tolist() == [False, True, True] and m["template"].iloc[2] == "being_adj"
    w = jigsaw.load_wiki_testset(tmp_path, fuzzed=True)
    assert w["text"].tolist() == ["Thanks for the edit.", "You are a stupid muslim"] and w["toxic"].tolist() == [False, True]
    path = tmp_path / jigsaw.DATASET / jigsaw.MADLIBS
    path.write_text(path.read_text().replace("NOT_BAD", "MEH"))
    with pytest.raises(DataError, match=r"bias_madlibs_77k.csv: row 2: column 'Label' has 'MEH'.*biaslab fetch"):
        jigsaw.load_madlibs(tmp_path)
    with pytest.raises(DataError, match="not found.*biaslab fetch jigsaw_identity_term_bias_testsets"):
        jigsaw.load_madlibs(tmp_path / "nowhere")


@pytest.mark.parametrize("score", ["target", "toxicity"])
def test_civil_comments_official_layouts(tmp_path, score):
    path = tmp_path / "train.csv"
    pd.DataFrame({"id": [1, 2, 3], "comment_text": ["a", "b", "c"], score: [0.7, 0.2, 0.5],
                  "black": [0.8, None, 0.1], "white": [0.0, 0.0, 0.6], "split": ["train", "val", "test"]}).to_csv(path)
    df = jigsaw.load_civil_comments(path)
    assert df["toxic"].tolist() == [True, False, True] and df["black"].tolist() == [True, False, False]
    assert df["white"].tolist() == [False, False, True] and df["split"].tolist() == ["train", "val", "test"]
    pd.DataFrame({"comment_text": ["a"], score: [0.1]}).to_csv(path)
    with pytest.raises(DataError, match="no identity column"):
        jigsaw.load_civil_comments(path)
    pd.DataFrame({"comment_text": ["a"], "black": [1.0]}).to_csv(path)
    with pytest.raises(DataError, match=r"train.csv: missing column\(s\) \['toxicity'\]"):
        jigsaw.load_civil_comments(path)


def test_bias_in_bios_sample_and_full_layouts(tmp_path):
    fixtures.write_bias_in_bios(tmp_path)
    s = biasbios.load_samples(tmp_path)
    assert len(s) == 3 and s["gender"].tolist() == ["female", "male", "male"]  # the repeated bio counted once
    records = [{"hard_text_untokenized": "She sings.", "hard_text": "she sings .", "p": "composer", "g": "f"},
               {"hard_text_untokenized": "He paints.", "hard_text": "he paints .", "p": "painter", "g": "m"}]
    pkl = tmp_path / "BIOS.pkl"
    pkl.write_bytes(pickle.dumps(records))
    full = biasbios.load_records(pkl)
    assert full["text"].tolist() == ["She sings.", "He paints."] and full["gender"].tolist() == ["female", "male"]
    pq = tmp_path / "train.parquet"
    pd.DataFrame({"hard_text": ["x", "y"], "profession": [13, 24], "gender": [1, 0]}).to_parquet(pq)
    labhc = biasbios.load_records(pq)
    assert labhc["profession"].tolist() == ["nurse", "software_engineer"] and labhc["gender"].tolist() == ["female", "male"]
    pd.DataFrame({"hard_text": ["x"], "profession": [13], "gender": [7]}).to_parquet(pq)
    with pytest.raises(DataError, match="record 0: gender .7. is not one of"):
        biasbios.load_records(pq)
    bad = tmp_path / biasbios.DATASET / "bios_samples_28_professions.csv"
    bad.write_text("hard_text,profession,gender\nHe flies.,pilot,Male\n")
    with pytest.raises(DataError, match="row 2: column 'profession' has 'pilot'"):
        biasbios.load_samples(tmp_path)


