"""The identity terms of the cscl tasks (:mod:`biaslab.cscl.tasks`): which words put a text in the race task and
make a = 1 (Black identity), which words the augmentations never edit, each one's counterpart in
counterfactual views (``cscl.augment.swap_identity_terms``), and the proper nouns a view may mask
(``cscl.augment.mask_proper_nouns``). A module of its own so that a stage can use the terms without importing the
task builders (and their data readers)."""

from __future__ import annotations

import re
from collections.abc import Iterable

BLACK_TERMS = ("black", "blacks", "african", "african american", "african americans", "african-american")
OTHER_RACE_TERMS = ("white", "whites", "european", "american", "canadian", "asian", "chinese", "japanese", "indian",
                    "hispanic", "latino", "latina", "latinx", "mexican", "middle eastern", "arab", "arabs")
GENDER_TERMS = ("he", "she", "him", "her", "his", "hers", "himself", "herself", "man", "woman", "men", "women", "mr",
                "mrs", "ms", "male", "female", "boy", "girl", "father", "mother", "husband", "wife", "son", "daughter")
# Counterfactual pairs (Zhao et al. 2018's and Lu et al. 2018's gender swap, cut to GENDER_TERMS; for race the Black
# term and its white counterpart). Read in order, each word keeps its first counterpart: "her" is one word for the
# object and the possessive and becomes "him", "his" becomes "her"; names are not swapped.
GENDER_PAIRS = (("he", "she"), ("him", "her"), ("his", "her"), ("hers", "his"), ("himself", "herself"),
                ("man", "woman"), ("men", "women"), ("mr", "mrs"), ("ms", "mr"), ("male", "female"), ("boy", "girl"),
                ("father", "mother"), ("husband", "wife"), ("son", "daughter"))
RACE_PAIRS = (("black", "white"), ("blacks", "whites"), ("african", "european"))


def identity_terms(task: str) -> frozenset[str]:
    """Single words that carry the task's protected attribute (kept out of the augmentations' edits)."""
    if task.endswith("_race"):
        return frozenset(w for t in BLACK_TERMS + OTHER_RACE_TERMS for w in t.split())
    return frozenset(GENDER_TERMS)


def counterparts(task: str) -> dict[str, str]:
    """Each identity word of the task's pairs (``GENDER_PAIRS`` / ``RACE_PAIRS``) → its counterpart, lower-case."""
    out: dict[str, str] = {}
    for a, b in RACE_PAIRS if task.endswith("_race") else GENDER_PAIRS:
        out.setdefault(a, b)
        out.setdefault(b, a)
    return out


# what a masked proper noun becomes in a view (``cscl.augment.mask_proper_nouns``): a word that names no one
MASK_WORD = "someone"


def proper_nouns(texts: Iterable[str], task: str) -> frozenset[str]:
    """The words of ``texts`` only ever written capitalised — names, and places, brands, acronyms — lower-case and
    split as EDA's cleaning splits them (apostrophes dropped, hyphens and other non-letters break words), so that
    they match the words of a view. A heuristic: a common word that happens to start every sentence it is in counts
    too. The task's identity terms are left out (``cscl.augment.swap_identity_terms`` decides
    them)."""
    capitalised, lower = set(), set()
    for text in texts:
        for w in re.findall(r"[A-Za-z]+", text.replace("’", "").replace("'", "").replace("-", " ")):
            (capitalised if w[0].isupper() else lower).add(w.lower())
    return frozenset(capitalised - lower - identity_terms(task))


def view_edits(task: str, texts: Iterable[str], *, swap: bool, mask: bool) -> dict[str, str] | None:
    """The word replacements every view of ``texts`` gets after its augmentation (:func:`biaslab.cscl.augment.views`'
    ``edits``), ``None`` for none: with ``swap`` (``cscl.augment.swap_identity_terms``) each identity term →
    its counterpart (:func:`counterparts`); with ``mask`` (``cscl.augment.mask_proper_nouns``) each proper noun of
    ``texts`` (:func:`proper_nouns`) → ``MASK_WORD``, so no two views share a subject's name."""
    edits = (counterparts(task) if swap else {}) | ({w: MASK_WORD for w in proper_nouns(texts, task)} if mask else {})
    return edits or None
