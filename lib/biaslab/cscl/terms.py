"""The identity terms of the cscl tasks (:mod:`biaslab.cscl.tasks`): which words put a text in the race task and
make a = 1 (Black identity), and which words the augmentations never edit. A module of its own so that a stage can
use the terms without importing the task builders (and their data readers)."""

from __future__ import annotations

BLACK_TERMS = ("black", "blacks", "african", "african american", "african americans", "african-american")
OTHER_RACE_TERMS = ("white", "whites", "european", "american", "canadian", "asian", "chinese", "japanese", "indian",
                    "hispanic", "latino", "latina", "latinx", "mexican", "middle eastern", "arab", "arabs")
GENDER_TERMS = ("he", "she", "him", "her", "his", "hers", "himself", "herself", "man", "woman", "men", "women", "mr",
                "mrs", "ms", "male", "female", "boy", "girl", "father", "mother", "husband", "wife", "son", "daughter")


def identity_terms(task: str) -> frozenset[str]:
    """Single words that carry the task's protected attribute (kept out of the augmentations' edits)."""
    if task.endswith("_race"):
        return frozenset(w for t in BLACK_TERMS + OTHER_RACE_TERMS for w in t.split())
    return frozenset(GENDER_TERMS)
