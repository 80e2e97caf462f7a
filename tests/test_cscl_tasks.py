"""cscl tasks: identity-term groups, one row per text, seeded (y, a)-stratified splits without leakage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslab.cscl import tasks

import fixtures


def test_race_attribute_groups_and_longest_term_first():
    got = tasks.race_attribute(["An African American man", "an American", "Black and white", "BLACK!", "a cat",
                                "blackboard"])
    assert got.tolist() == [1, 0, 1, 1, -1, -1]


def test_race_task_keeps_one_row_per_text_and_drops_conflicting_labels():
    df = tasks.race_task(["a black man", "a black man", "a white man", "a white man", "no race", ""],
                         [True, True, False, True, False, False], "x")
    assert df["text"].tolist() == ["a black man"] and df[["y", "a"]].iloc[0].tolist() == [1, 1]
    assert df["y_name"].iloc[0] == "toxic" and df["a_name"].iloc[0] == "black"


def test_builders_on_fixture_files(tmp_path):
    fixtures.write_jigsaw_testsets(tmp_path)
    fixtures.write_bias_in_bios(tmp_path)
    m = tasks.build("madlibs_race", tmp_path, offensive_threshold=0.5, min_topic_questions=1)
    assert m[["text", "y", "a"]].values.tolist() == [["Sara is a wonderful black", 0, 1], ["Joe is a dumb white", 1, 0]]
    b = tasks.build("bios_gender", tmp_path, offensive_threshold=0.5, min_topic_questions=1)
    assert b["y_name"].tolist() == ["nurse", "software_engineer", "accountant"] and b["a"].tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match="unknown cscl task 'jigsaw'"):
        tasks.build("jigsaw", tmp_path, offensive_threshold=0.5, min_topic_questions=1)
    with pytest.raises(ValueError, match="set cscl.full_data"):
        tasks.build("jigsaw_race", tmp_path, offensive_threshold=0.5, min_topic_questions=1)


def test_jigsaw_race_from_a_civil_comments_file(tmp_path):
    path = tmp_path / "all_data_with_identities.csv"
    pd.DataFrame({"comment_text": ["x", "y", "z", "w"], "toxicity": [0.9, 0.1, 0.6, 0.0],
                  "black": [1.0, 0.0, 0.0, 0.0], "white": [0.0, 1.0, 0.0, 0.0], "asian": [0.0, 0.0, 0.7, 0.0],
                  "female": [0.0, 0.0, 0.0, 1.0]}).to_csv(path, index=False)
    df = tasks.build("jigsaw_race", tmp_path, offensive_threshold=0.5, min_topic_questions=1, full_data=str(path))
    assert df[["text", "y", "a"]].values.tolist() == [["x", 1, 1], ["y", 0, 0], ["z", 1, 0]]  # w: no race label


def synthetic(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"text": [f"text {i}" for i in range(n)], "y": rng.integers(0, 2, n),
                         "a": (rng.random(n) < 0.3).astype(int), "y_name": "", "a_name": "", "source": "s"})


def test_split_is_seeded_stratified_and_leak_free():
    df = synthetic()
    s = tasks.split(df, val=0.1, test=0.3, seed=3)
    assert s["split"].value_counts().to_dict() == {"train": 240, "test": 120, "val": 40}
    assert s.equals(tasks.split(df, val=0.1, test=0.3, seed=3)) and not s.equals(tasks.split(df, val=0.1, test=0.3, seed=4))
    share = s.groupby("split")["a"].mean()
    assert (share - df["a"].mean()).abs().max() < 0.03  # stratified by (y, a)
    row = s[s["split"] == "train"].iloc[[0]]
    leaked = pd.concat([s, row.assign(split="test", text="  " + row["text"].iloc[0].upper())])
    with pytest.raises(AssertionError, match="1 texts are in more than one split"):
        tasks.check_no_leakage(leaked)
    with pytest.raises(ValueError, match=r"val \(0.6\) and test \(0.5\)"):
        tasks.split(df, val=0.6, test=0.5, seed=0)
    sub = tasks.subsample(df, 100, seed=1)
    assert len(sub) == 100 and abs(sub["a"].mean() - df["a"].mean()) < 0.03 and tasks.subsample(df, 0, 1) is df


def test_genderqa_topic_keeps_a_questions_passages_together(tmp_path):
    fixtures.write_kim2025(tmp_path)
    path = tmp_path / "debiasing_rag_kim2025" / "GenderBias-QA_test.csv"
    qa = pd.read_csv(path)
    qa.loc[1] = [2, "music", "Who wrote it?", "She wrote it.", "Her song.", "He wrote it.", "His song."]
    qa.to_csv(path, index=False)
    g = tasks.build("genderqa_topic", tmp_path, offensive_threshold=0.5, min_topic_questions=1)
    # sports: one question per split, the same four texts (kept once, in the first question's group); music: one
    assert g.groupby("y_name").size().to_dict() == {"music": 4, "sports": 4} and g["a"].sum() == 4
    assert g.loc[g["text"] == "She wrote it.", ["a_name", "group"]].values.tolist() == [["female", "test-2"]]
    with pytest.raises(ValueError, match="min_topic_questions = 2 keeps 1"):
        tasks.build("genderqa_topic", tmp_path, offensive_threshold=0.5, min_topic_questions=2)
    with pytest.raises(ValueError, match="min_topic_questions = 3 keeps 0"):
        tasks.build("genderqa_topic", tmp_path, offensive_threshold=0.5, min_topic_questions=3)


def test_grouped_split_assigns_whole_groups():
    rng = np.random.default_rng(0)
    groups = np.repeat([f"q{i}" for i in range(100)], 4)
    y = np.repeat(rng.integers(0, 3, 100), 4)
    df = pd.DataFrame({"text": [f"t{i}" for i in range(400)], "y": y, "a": np.tile([1, 1, 0, 0], 100), "y_name": "",
                       "a_name": "", "source": "s", "group": groups})
    s = tasks.split(df, val=0.1, test=0.3, seed=0)
    assert (s.groupby("group")["split"].nunique() == 1).all()
    assert s.drop_duplicates("group")["split"].value_counts().to_dict() == {"train": 60, "test": 30, "val": 10}
    moved = s.copy()
    moved.loc[0, "split"] = "test" if s.loc[0, "split"] != "test" else "train"
    with pytest.raises(AssertionError, match="group 'q0' is in more than one split"):
        tasks.check_no_leakage(moved)
    mixed = df.copy()
    mixed.loc[0, "y"] = (mixed.loc[0, "y"] + 1) % 3
    with pytest.raises(ValueError, match="groups must share one task label"):
        tasks.split(mixed, val=0.1, test=0.3, seed=0)
