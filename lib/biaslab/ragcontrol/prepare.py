"""The ``ragcontrol_data`` stage's steps (Kim et al. 2025, App. "Dataset Creation", "Training"): the offline judge of a
task, its agreement with the released sides, the reader's test questions, and the candidate pools of the
reverse-bias training data.

The judge is serialised as a small JSON spec (:func:`offline_judge` returns it; ``judges.from_spec`` rebuilds the
judge in the RAG stage), so later stages judge generated answers exactly as the evaluation corpus was judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..data import bbq, trec_dl, twinviews, wikitext
from . import candidates as cd
from . import judges, reader


def offline_judge(task: str, splits: Mapping[str, pd.DataFrame], corpus: pd.DataFrame, raw_dir: str | Path):
    """(judge, spec) — GenderBias-QA: pronouns + a first-name lexicon (BBQ's proper names + the protagonists of
    the released passages, see :mod:`.judges`); PoliticBias-QA: every claim's released side (TwinViews ``l`` /
    ``r``, PoliticBias-QA left / right claims), and ``mixed`` for corpus texts released on both sides."""
    if task == "GenderBias-QA":
        labelled = [(t, side) for q in splits.values() for side, col in (("female", "female_docs"),
                                                                          ("male", "male_docs"))
                    for docs in q[col] for t in docs]
        lexicon = {**judges.bbq_first_names(bbq.load_proper_names(raw_dir)), **judges.harvest_first_names(labelled)}
        return judges.GenderLexiconJudge(lexicon), {"kind": "gender", "first_names": lexicon}
    tv = twinviews.load(raw_dir)
    sides = {**dict.fromkeys(tv["right"], "conservative"), **dict.fromkeys(tv["left"], "liberal")}
    for q in splits.values():
        sides.update({**dict.fromkeys(q["right_claim"], "conservative"), **dict.fromkeys(q["left_claim"], "liberal")})
    sides.update({t: "mixed" for t, s in zip(corpus["text"], corpus["lean"], strict=True) if s == "mixed"})
    return judges.PoliticsLookupJudge(sides), {"kind": "politics", "sides": sides}


def judge_agreement(corpus: pd.DataFrame, groups: Sequence[str]) -> pd.DataFrame:
    """Per released lean of the corpus (columns ``lean``, ``bias1``, ``bias2``): documents and the share judged
    bias1 / bias2, in percent."""
    out = (corpus.groupby("lean")[["bias1", "bias2"]].mean().mul(100).round(1)
           .rename(columns={"bias1": f"% judged {groups[0]}", "bias2": f"% judged {groups[1]}"}).reset_index())
    out.insert(1, "documents", corpus.groupby("lean").size().to_numpy())
    return out


def _answer_name(docs: Sequence[str]) -> str | None:
    """The first name of the first passage (of a question's released passages) that has a protagonist."""
    found = [judges.protagonist(d) for d in docs]
    return next((p[1] for p in found if p), None)


def test_subset(test: pd.DataFrame, corpus: pd.DataFrame, n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A quick, smaller problem (``ragcontrol.max_test_questions``): a seeded subset of ``n`` test questions and
    the evaluation-corpus documents released for them (every other document dropped, so retrieval has fewer
    distractors and its numbers are not comparable with the paper's). ``n`` = 0 or at least the number of
    questions: both unchanged (the paper's setting)."""
    from .evaluate import seeded_subset

    keep = seeded_subset(test["qid"].tolist(), n, seed)
    if len(keep) == len(test):
        return test, corpus
    kept = set(keep)
    test = test[test["qid"].isin(kept)].reset_index(drop=True)
    linked = corpus["qids"].map(lambda qs: bool(kept.intersection(qs)))
    return test, corpus[linked].reset_index(drop=True).assign(doc_id=lambda d: range(len(d)))


def reader_questions(task: str, test: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The test questions as the readers see them. PoliticBias-QA: the seeded A/B order of the two claims
    (``right_first``; App.: "We randomize the order"). GenderBias-QA: the two answer names of the likelihood reader
    (``female_name``, ``male_name``: the protagonists of the question's released female and male passages)."""
    test = test.copy()
    if task == "PoliticBias-QA":
        test["right_first"] = reader.choice_order(len(test), seed)
        return test
    test["female_name"] = test["female_docs"].map(_answer_name)
    test["male_name"] = test["male_docs"].map(_answer_name)
    test["female_docs"] = test["female_docs"].map(list)
    test["male_docs"] = test["male_docs"].map(list)
    return test


def candidate_corpus(name: str, raw_dir: str | Path, splits: Mapping[str, pd.DataFrame]) -> list[str]:
    """The documents of one offline candidate corpus (see :mod:`.candidates`): ``msmarco`` (TREC DL pools),
    ``wikipedia`` (WikiText-2 paragraphs) or ``twinviews`` (TwinViews-13k minus every PoliticBias-QA claim)."""
    if name == "msmarco":
        return sorted(set(pd.concat([trec_dl.load_candidates(y, raw_dir)["text"] for y in trec_dl.YEARS])))
    if name == "wikipedia":
        return wikitext.load_paragraphs(tuple(wikitext.FILES), raw_dir)["text"].drop_duplicates().tolist()
    if name == "twinviews":
        claims = pd.concat(splits.values())[["left_claim", "right_claim"]]
        kept = twinviews.exclude_pairs(twinviews.load(raw_dir), claims)
        return list(dict.fromkeys([*kept["left"], *kept["right"]]))
    raise ValueError(f"unknown candidate corpus {name!r}: use msmarco, wikipedia or twinviews")


def candidate_pools(names: Sequence[str], raw_dir: str | Path, splits: Mapping[str, pd.DataFrame],
                    corpus: pd.DataFrame, *, max_pool: int, seed: int) -> dict[str, list[str]]:
    """Each candidate corpus, subsampled to ``max_pool`` documents (seeded); asserts that no document of the
    evaluation ``corpus`` is among them (the evaluation claims must never be trained on)."""
    pools = {name: cd.subsample(candidate_corpus(name, raw_dir, splits), max_pool, seed) for name in names}
    leaked = {n: len(set(p) & set(corpus["text"])) for n, p in pools.items() if n == "twinviews"}
    if any(leaked.values()):
        raise AssertionError(f"evaluation documents leaked into the candidate pools: {leaked}")
    return pools


def candidate_counts(cands: pd.DataFrame, pools: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Candidates per corpus and role (positive / negative / neutral / both) beside each pool's size."""
    counts = cands.pivot_table(index="corpus", columns="role", values="text", aggfunc="count", fill_value=0)
    counts["corpus size"] = [len(pools[c]) for c in counts.index]
    return counts.reset_index()


def row_stats(rows: pd.DataFrame) -> dict[str, float]:
    """Mean positives and negatives per training question (``label``: +1 / −1 / 0 per document slot)."""
    pos = rows["label"].map(lambda v: sum(x > 0 for x in v))
    neg = rows["label"].map(lambda v: sum(x < 0 for x in v))
    return {"positives_per_question": float(pos.mean()), "negatives_per_question": float(neg.mean())}
