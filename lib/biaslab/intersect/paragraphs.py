"""Intersectional paragraphs: Indic-Intersect and Western-Intersect (intersect §3.1.2, Table 4, Figs. 13–16).

* Biased paragraph of category ``a+b(+c)``: one biased reference sentence per constituent axis (sampled so each
  sentence is reused as little as possible), a character profile, and a narrative (Fig. 13 / 14 prompt).
* Unbiased paragraph: an intersectional context is drawn from the corpus's categories; for each axis a
  candidate pool of unbiased reference sentences with that ``bias_context`` is sampled, and the combination (one
  per axis) with the highest mean pairwise cosine similarity under all-MiniLM-L6-v2 is chosen — the paper's
  coherence-based sampling, done exhaustively over the pools (:func:`most_coherent`). The narrative follows the
  Fig. 15 prompt.

With the offline ``rules`` backend the narratives are composed from the real sentences by fixed templates
(:data:`BIASED_TEMPLATE`, :data:`UNBIASED_TEMPLATE`) that add only neutral framing, and the character profile is
the list of axes. Such paragraphs contain their seed sentences verbatim, which makes retrieval-based detection
easier than on LLM-written narratives; the evaluation stage can exclude a paragraph's own seeds from retrieval.

Labels: a biased paragraph carries its axes (e.g. ``["caste", "gender"]``), an unbiased one ``["unbiased"]``
and keeps its intersectional ``context``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..llm.rules import rule
from . import prompts

BIASED_TEMPLATE = {
    "opening": "Over one ordinary week, the same person kept running into remarks like these.",
    "frames": ["Someone said: \"{}\"", "Later, another person added: \"{}\"", "Then came the remark: \"{}\"",
               "Before the week ended, someone else said: \"{}\""],
}
UNBIASED_TEMPLATE = {"opening": "On an ordinary day in the neighbourhood, a few moments came together.",
                     "frames": ["{}", "{}", "{}", "{}"]}
COLUMNS = ["paragraph_id", "text", "labels", "category", "context", "seed_ids", "generator"]


def canonical(category: str) -> str:
    """``race+body+social`` -> ``body+race+social`` (axes sorted, stripped)."""
    return "+".join(sorted(a.strip() for a in category.split("+") if a.strip()))


def axes(category: str) -> list[str]:
    return canonical(category).split("+")


def compose(sentences: Sequence[str], template: Mapping) -> str:
    frames = template["frames"]
    return " ".join([template["opening"], *(frames[i % len(frames)].format(s) for i, s in enumerate(sentences))])


@rule("intersect.biased_paragraph")
def _biased_offline(inputs: Mapping) -> str:
    """Offline Figs. 13/14: the seed sentences in a fixed neutral frame (:data:`BIASED_TEMPLATE`)."""
    return compose(inputs["sentences"], BIASED_TEMPLATE)


@rule("intersect.unbiased_paragraph")
def _unbiased_offline(inputs: Mapping) -> str:
    """Offline Fig. 15: the coherent unbiased sentences in a fixed frame (:data:`UNBIASED_TEMPLATE`)."""
    return compose(inputs["sentences"], UNBIASED_TEMPLATE)


def most_coherent(pools: Sequence[np.ndarray]) -> tuple[int, ...]:
    """Indices (one per pool) maximising the mean pairwise cosine of the chosen unit vectors.

    Exhaustive and vectorised: the score tensor has one axis per pool (pool sizes multiply, so keep pools
    small — the default of 8 per axis gives at most 512 combinations for three axes)."""
    k = len(pools)
    if k == 1:
        return (0,)
    total = np.zeros([len(p) for p in pools])
    for i, j in itertools.combinations(range(k), 2):
        sims = pools[i] @ pools[j].T
        shape = [1] * k
        shape[i], shape[j] = sims.shape
        total = total + sims.reshape(shape)
    return tuple(int(x) for x in np.unravel_index(int(np.argmax(total)), total.shape))


class _Sampler:
    """Draws reference sentences of a label, cycling through a seeded permutation (least reuse first)."""

    def __init__(self, ref: pd.DataFrame, column: str, rng: np.random.Generator):
        self.rng = rng
        self.order = {lab: list(rng.permutation(idx)) for lab, idx in ref.groupby(column).indices.items()}
        self.pos = dict.fromkeys(self.order, 0)

    def take(self, label: str, n: int = 1) -> list[int]:
        if label not in self.order:
            raise ValueError(f"no reference sentence with label {label!r}")
        order, out = self.order[label], []
        for _ in range(n):
            if self.pos[label] == len(order):  # exhausted: reshuffle and reuse
                self.order[label] = order = list(self.rng.permutation(order))
                self.pos[label] = 0
            out.append(int(order[self.pos[label]]))
            self.pos[label] += 1
        return out


def check_categories(ref: pd.DataFrame, categories: Sequence[str], corpus: str) -> list[str]:
    """Canonical categories whose every axis has biased and unbiased reference sentences."""
    cats = [canonical(c) for c in categories]
    biased = set(ref.loc[ref["label"] != "unbiased", "label"])
    contexts = set(ref.loc[ref["label"] == "unbiased", "bias_context"])
    for c in cats:
        missing = [a for a in axes(c) if a not in biased]
        if missing:
            raise ValueError(f"{corpus}: category {c!r} needs biased reference sentences labelled {missing}")
        missing = [a for a in axes(c) if a not in contexts]
        if missing:
            raise ValueError(f"{corpus}: category {c!r} needs unbiased reference sentences with context {missing}")
    if len(set(cats)) != len(cats):
        raise ValueError(f"{corpus}: duplicate categories in {list(categories)}")
    return cats


def build_paragraphs(ref: pd.DataFrame, *, corpus: str, categories: Sequence[str], n_biased: int, n_unbiased: int,
                     llm, gen, encoder, pool_size: int, seed: int) -> pd.DataFrame:
    """``n_biased`` paragraphs spread evenly over ``categories`` (remainder to the first ones) and
    ``n_unbiased`` unbiased paragraphs with contexts drawn uniformly from ``categories``."""
    cats = check_categories(ref, categories, corpus)
    rng = np.random.default_rng(seed)
    biased_ref = ref[ref["label"] != "unbiased"].reset_index(drop=True)
    unbiased_ref = ref[ref["label"] == "unbiased"].reset_index(drop=True)
    counts = [n_biased // len(cats) + (i < n_biased % len(cats)) for i in range(len(cats))]

    # biased
    sampler = _Sampler(biased_ref, "label", rng)
    b_seeds = [(c, [sampler.take(a)[0] for a in axes(c)]) for c, n in zip(cats, counts, strict=True)
               for _ in range(n)]
    template = prompts.BIASED_PARAGRAPH_INDIC if corpus == "indic" else prompts.BIASED_PARAGRAPH_WESTERN
    b_sent = [[biased_ref["text"].iloc[i] for i in idx] for _, idx in b_seeds]
    b_prompts = [template.format(character=f"person facing {' and '.join(axes(c))}",
                                 sentences=prompts.bullet_list(s)) for (c, _), s in zip(b_seeds, b_sent, strict=True)]
    b_text = llm.generate(b_prompts, gen, task="intersect.biased_paragraph",
                          inputs=[{"sentences": s} for s in b_sent])

    # unbiased, coherence-sampled
    vecs = encoder.encode(unbiased_ref["text"].tolist())
    u_sampler = _Sampler(unbiased_ref, "bias_context", rng)
    u_seeds = []
    for c in rng.choice(cats, size=n_unbiased):
        pools_idx = [u_sampler.take(a, pool_size) for a in axes(str(c))]
        pick = most_coherent([vecs[p] for p in pools_idx])
        u_seeds.append((str(c), [pools_idx[a][j] for a, j in enumerate(pick)]))
    u_sent = [[unbiased_ref["text"].iloc[i] for i in idx] for _, idx in u_seeds]
    u_text = llm.generate([prompts.UNBIASED_PARAGRAPH.format(sentences=prompts.bullet_list(s, quote=False))
                           for s in u_sent], gen, system=prompts.UNBIASED_PARAGRAPH_SYSTEM,
                          task="intersect.unbiased_paragraph", inputs=[{"sentences": s} for s in u_sent])

    rows = [(t, axes(c), c, c, [biased_ref["ref_id"].iloc[i] for i in idx])
            for (c, idx), t in zip(b_seeds, b_text, strict=True)]
    rows += [(t, ["unbiased"], "unbiased", c, [unbiased_ref["ref_id"].iloc[i] for i in idx])
             for (c, idx), t in zip(u_seeds, u_text, strict=True)]
    out = pd.DataFrame(rows, columns=["text", "labels", "category", "context", "seed_ids"])
    out.insert(0, "paragraph_id", [f"{corpus}-p{i:05d}" for i in range(len(out))])
    out["text"] = out["text"].map(lambda t: " ".join(str(t).split()))
    out["generator"] = f"{llm.backend}:{llm.model}"
    return out[COLUMNS]
