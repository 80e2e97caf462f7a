"""Triplet mining for BiasRetriever (intersect §3.4–3.5, Table 1, App. A.4).

Anchors are paragraphs; positives and negatives are reference sentences mined from an exact FAISS index
(cosine on the mining encoder's normalised embeddings):

* biased anchor with labels L — for **each** constituent label l ∈ L, the top-k reference sentences labelled l
  are the positives, paired rank-wise with k negatives: the most similar sentences whose label is biased and
  not in L. Table 1's counts equal k × (Σ_biased |L| + #unbiased) for both corpora (e.g. 4 × 7,892 = 31,568),
  which is how we read "top-k positives" per label; each label's unit takes the next k negatives, so no
  (anchor, negative) pair repeats;
* unbiased anchor with context C — the top-k ``unbiased`` sentences, paired with the top-k biased sentences
  whose label is an axis of C.

Strategies (``STRATEGIES``; the paper's model names in brackets):

* ``srk4`` (SR-k4, B4_UB4) and ``srk10`` (SR-k10, B10_UB10): the rules above with k = 4 / 10;
* ``srk4un`` (SR-k4-UN, B4_NUB_UB4): for biased anchors each negative slot is drawn from the other-bias pool
  with probability 0.8 and from the ``unbiased`` pool with 0.2 (seeded);
* ``srk4llm`` (SR-k4+LLM, LLM): SR-k4 plus LLM triplets from the four App. A.4 strategies
  (:func:`llm_triplets`). With the offline ``rules`` backend only the two strategies that need no free text
  generation run — mined positive + counterfactual negative (demographic terms swapped with bias-bench's
  attribute word lists) and neutral-anchor paraphrasing (the paragraph's most similar seed sentence); Dual-LLM
  and LLM-positive strategies need a real LLM and are skipped, and the counts table says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..index import DenseIndex
from ..llm.rules import rule
from . import prompts

STRATEGIES = {"srk4": "SR-k4", "srk10": "SR-k10", "srk4un": "SR-k4-UN", "srk4llm": "SR-k4+LLM"}
MODEL_NAMES = {"srk4": "B4_UB4", "srk10": "B10_UB10", "srk4un": "B4_NUB_UB4", "srk4llm": "LLM"}
COLUMNS = ["anchor_id", "anchor", "positive", "negative", "source", "anchor_category"]


class RankedPools:
    """Reference sentences ranked by similarity to each anchor, one FAISS search per anchor batch."""

    def __init__(self, ref: pd.DataFrame, ref_vecs: np.ndarray, anchor_vecs: np.ndarray):
        self.ref = ref.reset_index(drop=True)
        _, self.order = DenseIndex(ref_vecs).search(anchor_vecs, len(self.ref))  # full ranking, exact
        self.label = self.ref["label"].to_numpy()

    def ranked(self, anchor: int, mask: np.ndarray) -> np.ndarray:
        """Reference rows satisfying ``mask``, most similar to the anchor first."""
        row = self.order[anchor]
        return row[mask[row]]


def mine(paragraphs: pd.DataFrame, ref: pd.DataFrame, pools: RankedPools, *, k: int,
         unbiased_negative_share: float, seed: int) -> pd.DataFrame:
    """Semantic-retrieval triplets (SR-k); ``unbiased_negative_share`` = 0.2 gives SR-k-UN."""
    rng = np.random.default_rng(seed)
    labels = pools.label
    text = pools.ref["text"].to_numpy()
    is_unbiased = labels == "unbiased"
    rows = []
    for a, p in enumerate(paragraphs.itertuples(index=False)):
        if p.category == "unbiased":
            ctx = set(p.context.split("+"))
            pos = pools.ranked(a, is_unbiased)[:k]
            neg = pools.ranked(a, np.isin(labels, list(ctx)))[:k]
            rows += [(p.paragraph_id, p.text, text[i], text[j], "sr", p.category) for i, j in zip(pos, neg, strict=False)]
            continue
        anchor_labels = list(p.labels)
        other = pools.ranked(a, ~np.isin(labels, anchor_labels) & ~is_unbiased)
        unb = pools.ranked(a, is_unbiased)
        n_other = n_unb = 0
        for lab in anchor_labels:
            pos = pools.ranked(a, labels == lab)[:k]
            negs = []
            for _ in range(len(pos)):
                use_unb = unbiased_negative_share > 0 and rng.random() < unbiased_negative_share
                if use_unb and n_unb < len(unb):
                    negs.append(unb[n_unb])
                    n_unb += 1
                elif n_other < len(other):
                    negs.append(other[n_other])
                    n_other += 1
            rows += [(p.paragraph_id, p.text, text[i], text[j], "sr", p.category) for i, j in zip(pos, negs, strict=False)]
    return pd.DataFrame(rows, columns=COLUMNS)


# ------------------------------------------------------------------------------- LLM strategies
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def swap_table(attribute_words: Mapping[str, Sequence[Sequence[str]]]) -> dict[str, str]:
    """word -> counterfactual word from bias-bench's attribute lists (pairs / tuples rotate by one)."""
    table: dict[str, str] = {}
    for groups in attribute_words.values():
        for group in groups:
            words = [w.lower() for w in group]
            for i, w in enumerate(words):
                table.setdefault(w, words[(i + 1) % len(words)])
    return table


def counterfactual(sentence: str, table: Mapping[str, str]) -> str | None:
    """Swap every demographic term found in ``table`` (case kept); None when nothing was swapped."""
    changed = False

    def repl(m: re.Match) -> str:
        nonlocal changed
        w = m.group(0)
        new = table.get(w.lower())
        if new is None:
            return w
        changed = True
        return new.capitalize() if w[0].isupper() else new

    out = _WORD.sub(repl, sentence)
    return out if changed else None


@rule("intersect.counterfactual")
def _counterfactual_offline(inputs: Mapping) -> str:
    """Offline Fig. 19: word-list counterfactual prepared by the miner (inputs['counterfactual'])."""
    return str(inputs["counterfactual"])


@rule("intersect.paraphrase")
def _paraphrase_offline(inputs: Mapping) -> str:
    """Offline Fig. 20: the paragraph's seed sentence closest to the whole paragraph (a real sentence)."""
    return str(inputs["closest_seed"])


def llm_triplets(paragraphs: pd.DataFrame, ref: pd.DataFrame, pools: RankedPools, llm, gen, *,
                 attribute_words: Mapping, para_vecs: np.ndarray, ref_vecs: np.ndarray, per_strategy: int,
                 seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The four App. A.4 strategies, up to ``per_strategy`` triplets each. Returns (triplets, counts)."""
    rng = np.random.default_rng(seed)
    text = pools.ref["text"].to_numpy()
    labels = pools.label
    biased = [i for i, c in enumerate(paragraphs["category"]) if c != "unbiased"]
    unbiased = [i for i, c in enumerate(paragraphs["category"]) if c == "unbiased"]
    offline = llm.backend == "rules"
    table = swap_table(attribute_words)
    rows: list[tuple] = []
    counts = {}

    def anchor_bias(i: int) -> str:
        return " and ".join(paragraphs["category"].iloc[i].split("+"))

    # 1. Dual-LLM and 2. LLM-positive + counterfactual negative need free generation
    for name in ("dual_llm", "llm_positive_counterfactual"):
        if offline:
            counts[name] = "skipped: needs a generative LLM (llm.backend rules)"
            continue
        pick = rng.choice(biased, size=min(per_strategy, len(biased)), replace=False)
        a_text = paragraphs["text"].to_numpy()[pick]
        pos = llm.generate([prompts.LLM_POSITIVE.format(anchor_bias_clean=anchor_bias(i), anchor_text=t)
                            for i, t in zip(pick, a_text, strict=True)], gen, task="intersect.llm_positive")
        if name == "dual_llm":
            neg = llm.generate([prompts.LLM_NEGATIVE.format(anchor_bias_clean=anchor_bias(i), anchor_text=t)
                                for i, t in zip(pick, a_text, strict=True)], gen, task="intersect.llm_negative")
        else:
            neg = llm.generate([prompts.COUNTERFACTUAL.format(positive_text=s) for s in pos], gen,
                               system=prompts.COUNTERFACTUAL_SYSTEM, task="intersect.counterfactual")
        new = [(paragraphs["paragraph_id"].iloc[i], paragraphs["text"].iloc[i], p_, n_, name,
                paragraphs["category"].iloc[i]) for i, p_, n_ in zip(pick, pos, neg, strict=True) if p_.strip() and n_.strip()]
        rows += new
        counts[name] = len(new)

    # 3. mined positive + counterfactual negative
    cands = []
    for i in rng.permutation(biased):
        lab = paragraphs["labels"].iloc[i]
        top = pools.ranked(i, np.isin(labels, list(lab)))[:1]
        if len(top):
            cf = counterfactual(text[top[0]], table)
            if cf is not None or not offline:
                cands.append((i, text[top[0]], cf))
        if len(cands) == per_strategy:
            break
    neg = llm.generate([prompts.COUNTERFACTUAL.format(positive_text=s) for _, s, _ in cands], gen,
                       system=prompts.COUNTERFACTUAL_SYSTEM, task="intersect.counterfactual",
                       inputs=[{"counterfactual": cf} for _, _, cf in cands])
    new = [(paragraphs["paragraph_id"].iloc[i], paragraphs["text"].iloc[i], s, n_, "mined_positive_counterfactual",
            paragraphs["category"].iloc[i]) for (i, s, _), n_ in zip(cands, neg, strict=True) if n_.strip() and n_ != s]
    rows += new
    counts["mined_positive_counterfactual"] = len(new)

    # 4. neutral anchor paraphrasing: positive = paraphrase; negative = unbiased sentence of a disjoint context
    ref_index = {r: j for j, r in enumerate(pools.ref["ref_id"])}
    pick = rng.permutation(unbiased)[:per_strategy]
    inputs = []
    for i in pick:
        seeds = [ref_index[s] for s in paragraphs["seed_ids"].iloc[i] if s in ref_index]
        best = max(seeds, key=lambda j: float(ref_vecs[j] @ para_vecs[i])) if seeds else None
        inputs.append({"closest_seed": text[best] if best is not None else ""})
    para = llm.generate([prompts.PARAPHRASE.format(paragraph=paragraphs["text"].iloc[i]) for i in pick], gen,
                        system=prompts.PARAPHRASE_SYSTEM, task="intersect.paraphrase", inputs=inputs)
    ctx_of = pools.ref["bias_context"].to_numpy()
    new = []
    for i, p_ in zip(pick, para, strict=True):
        ctx = set(paragraphs["context"].iloc[i].split("+"))
        negs = pools.ranked(i, (labels == "unbiased") & ~np.isin(ctx_of, list(ctx)))
        if p_.strip() and len(negs):
            new.append((paragraphs["paragraph_id"].iloc[i], paragraphs["text"].iloc[i], p_, text[negs[0]],
                        "neutral_paraphrase", "unbiased"))
    rows += new
    counts["neutral_paraphrase"] = len(new)
    return pd.DataFrame(rows, columns=COLUMNS), pd.DataFrame(
        [{"strategy": k, "triplets": v} for k, v in counts.items()])


def counts_table(triplets: Mapping[str, pd.DataFrame], corpus: str) -> pd.DataFrame:
    """Table 1 layout: one row per curation, our count beside the paper's."""
    paper = {"indic": {"srk4": 31568, "srk10": 78920, "srk4un": 31568, "srk4llm": 51568},
             "western": {"srk4": 31140, "srk10": 105070, "srk4un": 31140, "srk4llm": 51140}}[corpus]
    return pd.DataFrame([{"curation": STRATEGIES[s], "model": MODEL_NAMES[s], "ours": len(t), "paper": paper[s]}
                         for s, t in triplets.items()])
