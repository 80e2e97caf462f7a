"""ragfair App. 6.2 LLM pipeline: group pairs from BBQ options, the topic × pair grid, stratified sampling, and the
query → retrieval → three rephrasings flow (with a scripted LLM and a lexical encoder, so it runs in milliseconds)."""

import re

import numpy as np
import pandas as pd
import pytest

from biaslab.llm import LLMError
from biaslab.llm.rules import RuleBased
from biaslab.ragfair import llm_pairs
from test_ragfair_lib import bbq_frame

from conftest import GREEDY


class BagOfWords:
    """A deterministic stand-in encoder: hashed word counts (cosine = lexical overlap)."""

    def encode(self, texts, show_progress=None):
        out = np.zeros((len(texts), 64), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                out[i, sum(map(ord, w)) % 64] += 1
        return out


SCRIPT = {  # what a (very literal) LLM would answer; each rule sees the item's structured inputs
    llm_pairs.TASK_QUERY: lambda i: f"history of {i['topic'].lower()}",
    llm_pairs.TASK_NEUTRAL: lambda i: f"neutral: {i['sentence']}",
    llm_pairs.TASK_BIASED: lambda i: f"favours {i['favoured']}: {i['sentence']}",
}


def test_group_pairs_read_stereotyped_and_other_answers_off_disambiguated_rows():
    groups = llm_pairs.group_pairs(bbq_frame(), None, seed=0)
    assert groups.to_dict("records") == [
        {"category": "Age", "stereotyped": "old man", "other": "young man"},
        {"category": "Age", "stereotyped": "young man", "other": "old man"},  # the nonneg rows' biased answer
        {"category": "Religion", "stereotyped": "Jewish", "other": "Muslim"},
        {"category": "Religion", "stereotyped": "Muslim", "other": "Jewish"}]
    assert len(llm_pairs.group_pairs(bbq_frame(), per_category=1, seed=0)) == 2


def test_grid_and_stratified_sample():
    groups = llm_pairs.group_pairs(bbq_frame(), None, seed=0)
    space = llm_pairs.grid(["Chess", "Rivers", "Music"], groups)
    assert len(space) == 12 and list(space.columns) == ["topic", "category", "stereotyped", "other"]
    s = llm_pairs.sample_items(space, 4, seed=1)
    assert len(s) == 4 and s["category"].value_counts().to_dict() == {"Age": 2, "Religion": 2}
    assert s.equals(llm_pairs.sample_items(space, 4, seed=1))  # seeded
    assert len(llm_pairs.sample_items(space, 0, seed=0)) == 12


def test_build_retrieves_the_closest_sentence_and_rephrases_it_three_ways():
    items = llm_pairs.grid(["Chess"], pd.DataFrame({"category": ["Age"], "stereotyped": ["old man"],
                                                    "other": ["young man"]}))
    sentences = ["Rivers flow to the sea.", "The history of chess goes back to India.", "Music has rhythm."]
    out = llm_pairs.build(items, sentences, BagOfWords(), RuleBased(SCRIPT), GREEDY, top_k=2, sentences_per_query=1, words=50)
    row = out.iloc[0]
    assert row["query"] == "history of chess" and row["sentence"] == sentences[1] and row["rank"] == 1
    assert row["passage"] == f"neutral: {sentences[1]}"
    assert row["biased_stereotyped"] == f"favours old man: {sentences[1]}"
    assert row["biased_non_stereotyped"] == f"favours young man: {sentences[1]}"
    two = llm_pairs.build(items, sentences, BagOfWords(), RuleBased(SCRIPT), GREEDY, top_k=2,
                          sentences_per_query=2, words=2)
    assert two["rank"].tolist() == [1, 2] and two["passage"].iloc[0] == "neutral: The history"  # cut at ceil(1.5 × 2) words
    with pytest.raises(ValueError, match="sentences_per_query"):
        llm_pairs.build(items, sentences, BagOfWords(), RuleBased(SCRIPT), GREEDY, top_k=1,
                        sentences_per_query=2, words=50)


def test_the_offline_backend_refuses_instead_of_inventing_rephrasings():
    items = llm_pairs.grid(["Chess"], llm_pairs.group_pairs(bbq_frame(), None, seed=0).head(1))
    with pytest.raises(LLMError, match="no rule for task 'ragfair.neutral_query'.*llm.backend"):
        llm_pairs.build(items, ["A sentence about chess."], BagOfWords(), RuleBased(), GREEDY, top_k=1,
                        sentences_per_query=1, words=50)
