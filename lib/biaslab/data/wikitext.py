"""WikiText-2 validation + test (Merity et al. 2017): 122 English Wikipedia Good / Featured articles.

The files are the *tokenised* WikiText-2 (space-separated tokens, rare words as ``<unk>``, numbers split as
``1 @,@ 000``). :func:`detokenize` undoes the reversible part of that (``@-@ @,@ @.@``, spaces before
punctuation, inside brackets and quotes); ``<unk>`` cannot be undone and is kept.

* :func:`load_paragraphs`: ``split``, ``article_id`` (running number: some titles repeat, e.g. ``<unk>``),
  ``article`` (title), ``section``, ``paragraph`` (running number), ``text`` (detokenised)
  — one row per non-heading line.
* :func:`load_sentences`: the paragraphs split into sentences (``sentence`` column added), for a
  sentence-level retrieval corpus like the Wikipedia dump ragfair §4.3 retrieves from.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir, fix_for, require_file

DATASET = "wikitext2_valid_test"
FILES = {"valid": "wikitext2_valid.txt", "test": "wikitext2_test.txt"}
_HEADING = re.compile(r"^\s*((?:= )+)(.*?)((?: =)+)\s*$")  # " = Title = ", " = = Section = = "
_SUBS = [
    (re.compile(r" @([-,.])@ "), r"\1"),          # 1 @,@ 000 -> 1,000 ; state @-@ of -> state-of
    (re.compile(r" ([.,;:!?%)\]}])"), r"\1"),     # no space before closing punctuation
    (re.compile(r"([(\[{$]) "), r"\1"),           # none after opening brackets
    (re.compile(r" (n't|'s|'re|'ve|'m|'ll|'d)\b"), r"\1"),
    (re.compile(r"\" (.*?) \""), r'"\1"'),         # " quoted " -> "quoted"
    (re.compile(r"\s{2,}"), " "),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(<])")


def detokenize(text: str) -> str:
    """Readable text from a tokenised WikiText line (``<unk>`` stays)."""
    out = f" {text.strip()} "
    for pattern, repl in _SUBS:
        out = pattern.sub(repl, out)
    return out.strip()


def split_sentences(text: str) -> list[str]:
    """Sentence split on ``. ! ?`` followed by a capital, a quote, a bracket or ``<unk>`` (abbreviations such
    as "H. americanus" stay joined because a lower-case word follows)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def load_paragraphs(splits: tuple[str, ...], raw_dir: str | Path) -> pd.DataFrame:
    rows: list[dict] = []
    n_articles = 0
    for split in splits:
        if split not in FILES:
            raise ValueError(f"unknown WikiText-2 split {split!r}; available here: {sorted(FILES)}")
        path = require_file(dataset_dir(DATASET, raw_dir) / FILES[split], DATASET)
        article = section = None
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            m = _HEADING.match(line)
            if m:
                if m.group(1).count("=") == 1:
                    article, section = m.group(2).strip(), None
                    n_articles += 1
                else:
                    section = m.group(2).strip()
                continue
            if article is None:
                raise DataError(f"{path}: line {lineno}: text before the first ' = Title = ' line — {fix_for(DATASET)}")
            rows.append({"split": split, "article_id": n_articles - 1, "article": article, "section": section,
                         "text": detokenize(line)})
    if not rows:
        raise DataError(f"no paragraphs read from WikiText-2 {splits} — {fix_for(DATASET)}")
    df = pd.DataFrame(rows)
    df.insert(4, "paragraph", range(len(df)))
    return df


def load_sentences(splits: tuple[str, ...], raw_dir: str | Path,
                   min_words: int) -> pd.DataFrame:
    """One row per sentence of at least ``min_words`` words (``article_id``, ``paragraph``, ``sentence``)."""
    para = load_paragraphs(splits, raw_dir)
    rows = [{"article_id": a, "paragraph": p, "sentence": s}
            for a, p, t in zip(para["article_id"], para["paragraph"], para["text"], strict=True)
            for s in split_sentences(t) if len(s.split()) >= min_words]
    return pd.DataFrame(rows)


def validate(raw_dir: str | Path) -> dict[str, int]:
    para = load_paragraphs(tuple(FILES), raw_dir)
    return {f: int((para["split"] == s).sum()) for s, f in FILES.items()}
