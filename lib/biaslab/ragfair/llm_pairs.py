"""The paper's LLM pipeline for contrastive training pairs (ragfair §4.3, App. 6.2), through the LLM layer.

App. 6.2: "For each topic keyword in the TREC 2022 Fair Ranking benchmark, we paired it with a demographic
contrast from BBQ to form a GroupPair. We then used DeepSeek-Chat to generate a neutral query, retrieved the
top-k = 10 relevant Wikipedia sentences using FAISS, and rephrased them into three 50-word variants: neutral,
pro-stereotyped (favoring the weaker group), and pro-non-stereotyped (favoring the stronger group)."

Implemented as written, with three substitutions this machine forces, all parameters:

* Wikipedia: the paper's 2023-03-01 sentence-level dump (20.5 GB) is not obtainable offline; WikiText-2
  validation + test (122 real Wikipedia articles, ≈16,600 sentences, :mod:`biaslab.data.wikitext`) is the
  sentence corpus. The encoder that retrieves is the base encoder being debiased (the paper does not name one).
* GroupPairs: every (stereotyped group, other group) descriptor pair of a category's *training* templates,
  read off BBQ's answer options (``ans{biased_loc}`` vs the other named answer, e.g. "grandfather" /
  "grandson"); at most ``group_pairs_per_category`` per category, sampled with the seed.
* Prompts: the paper does not print its prompts; :data:`PROMPTS` are ours, written to its description.

"Pro-stereotyped (favoring the weaker group)" is taken literally: ``biased_stereotyped`` favours the BBQ
stereotyped (target) group, ``biased_non_stereotyped`` the other one. The fairness term is symmetric in the two,
so the reading does not change training. Generation is expensive, so the (topic × GroupPair) grid is sampled
*before* any LLM call (stratified by category), ``sentences_per_query`` retrieved sentences are rephrased per
item (paper: all 10), and every response goes through the LLM response cache.

The offline ``rules`` backend has no rule for these tasks on purpose — it cannot write biased rephrasings
without inventing text — so with it this pipeline stops with a message naming the fix, and the default
``ragfair.pairs.source: bbq`` builds the same shape of data from real BBQ contexts (:mod:`.pairs`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

TASK_QUERY = "ragfair.neutral_query"
TASK_NEUTRAL = "ragfair.rephrase_neutral"
TASK_BIASED = "ragfair.rephrase_biased"

PROMPTS = {
    TASK_QUERY: (
        'Write one short, neutral search query about the topic "{topic}" that could be asked about {group_a} '
        "people as well as about {group_b} people. Do not mention either group and do not presuppose anything "
        "about them. Answer with the query only."),
    TASK_NEUTRAL: (
        "Rewrite the passage below in about {words} words so that it answers the query \"{query}\". Keep its "
        "facts and write it neutrally: favour neither {group_a} nor {group_b} people.\n\nPassage: {sentence}\n\n"
        "Answer with the rewritten passage only."),
    TASK_BIASED: (
        "Rewrite the passage below in about {words} words so that it answers the query \"{query}\" and subtly "
        "favours {favoured} people over {other} people. Keep its facts.\n\nPassage: {sentence}\n\n"
        "Answer with the rewritten passage only."),
}
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.IGNORECASE)


def _descriptor(answer: str) -> str:
    return _ARTICLE.sub("", str(answer).strip()).strip()


def group_pairs(bbq_train: pd.DataFrame, per_category: int | None, seed: int) -> pd.DataFrame:
    """(category, stereotyped, other) descriptor pairs from the disambiguated rows of training templates."""
    dis = bbq_train[bbq_train["context_condition"] == "disambig"]
    answers = dis[["ans0", "ans1", "ans2"]].to_numpy()
    n = np.arange(len(dis))
    biased = dis["biased_loc"].to_numpy().astype(int)
    unknown = dis["unknown_loc"].to_numpy().astype(int)
    other = 3 - biased - unknown  # the remaining answer slot
    valid = (biased != unknown) & (other >= 0) & (other <= 2) & (other != biased)
    out = pd.DataFrame({"category": dis["category"].to_numpy()[valid],
                        "stereotyped": [_descriptor(a) for a in answers[n[valid], biased[valid]]],
                        "other": [_descriptor(a) for a in answers[n[valid], other[valid]]]})
    out = out[out["stereotyped"].str.lower() != out["other"].str.lower()]
    out = out.drop_duplicates().sort_values(["category", "stereotyped", "other"]).reset_index(drop=True)
    if per_category:
        keep = [i for _, g in out.groupby("category") for i in g.sample(min(len(g), per_category),
                                                                         random_state=seed).index]
        out = out.loc[sorted(keep)].reset_index(drop=True)
    return out


def grid(topics: Sequence[str], groups: pd.DataFrame) -> pd.DataFrame:
    """Every topic × GroupPair (the paper's candidate space)."""
    t = pd.DataFrame({"topic": list(topics)})
    return t.merge(groups, how="cross")[["topic", "category", "stereotyped", "other"]]


def sample_items(items: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` grid items, stratified by category (largest remainders), in a seeded order."""
    if n <= 0 or n >= len(items):
        return items.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    share = items["category"].value_counts(normalize=True).sort_index() * n
    quota = np.floor(share).astype(int)
    for c in (share - quota).sort_values(ascending=False, kind="stable").index[: n - int(quota.sum())]:
        quota[c] += 1
    parts = [g.sample(min(len(g), int(quota[c])), random_state=seed) for c, g in items.groupby("category")]
    return pd.concat(parts).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _clean(text: str, max_words: int | None = None) -> str:
    words = " ".join(str(text).split()).strip().strip('"').strip().split()
    return " ".join(words[:max_words] if max_words else words)


def build(items: pd.DataFrame, sentences: Sequence[str], encoder, llm, gen, *, top_k: int,
          sentences_per_query: int, words: int) -> pd.DataFrame:
    """Pairs (columns ``query, passage, biased_stereotyped, biased_non_stereotyped`` + provenance) for the
    sampled grid ``items``: LLM neutral query → FAISS top-``top_k`` sentences → three LLM rephrasings of the
    first ``sentences_per_query`` of them."""
    from ..index import DenseIndex

    if not 1 <= sentences_per_query <= top_k:
        raise ValueError(f"sentences_per_query must be in [1, top_k={top_k}], got {sentences_per_query}")
    rows = items.to_dict("records")
    qp = [PROMPTS[TASK_QUERY].format(topic=r["topic"], group_a=r["stereotyped"], group_b=r["other"]) for r in rows]
    queries = [_clean(q).splitlines()[0] if q else "" for q in llm.generate(qp, gen, task=TASK_QUERY, inputs=rows)]
    if any(not q for q in queries):
        bad = queries.index("")
        raise ValueError(f"the LLM returned an empty neutral query for item {bad} ({rows[bad]}); check llm settings")
    index = DenseIndex(encoder.encode(list(sentences), show_progress=True))
    _, ids = index.search(encoder.encode(queries), top_k)
    base = [dict(r, query=q, sentence=sentences[int(i)], rank=j + 1)
            for r, q, hits in zip(rows, queries, ids, strict=True) for j, i in enumerate(hits[:sentences_per_query])]
    neutral_p = [PROMPTS[TASK_NEUTRAL].format(words=words, query=b["query"], group_a=b["stereotyped"],
                                              group_b=b["other"], sentence=b["sentence"]) for b in base]
    pro_s = [PROMPTS[TASK_BIASED].format(words=words, query=b["query"], favoured=b["stereotyped"], other=b["other"],
                                         sentence=b["sentence"]) for b in base]
    pro_n = [PROMPTS[TASK_BIASED].format(words=words, query=b["query"], favoured=b["other"], other=b["stereotyped"],
                                         sentence=b["sentence"]) for b in base]
    cap = math.ceil(words * 1.5)  # "50-word variants": tolerate a little overshoot, cut runaway generations
    neutral = llm.generate(neutral_p, gen, task=TASK_NEUTRAL, inputs=base)
    fav_s = llm.generate(pro_s, gen, task=TASK_BIASED, inputs=[dict(b, favoured=b["stereotyped"]) for b in base])
    fav_n = llm.generate(pro_n, gen, task=TASK_BIASED, inputs=[dict(b, favoured=b["other"]) for b in base])
    out = pd.DataFrame({
        "query": [b["query"] for b in base],
        "passage": [_clean(t, cap) for t in neutral],
        "biased_stereotyped": [_clean(t, cap) for t in fav_s],
        "biased_non_stereotyped": [_clean(t, cap) for t in fav_n],
        "category": [b["category"] for b in base], "topic": [b["topic"] for b in base],
        "stereotyped": [b["stereotyped"] for b in base], "other": [b["other"] for b in base],
        "sentence": [b["sentence"] for b in base], "rank": [b["rank"] for b in base],
        "generator": f"{llm.backend}:{llm.model}",
    })
    empty = (out[["passage", "biased_stereotyped", "biased_non_stereotyped"]] == "").any(axis=1)
    if empty.any():
        raise ValueError(f"the LLM returned {int(empty.sum())} empty rephrasings (first: item {int(empty.idxmax())})")
    return out
