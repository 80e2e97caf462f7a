"""Document bias and fairness terms of fairrank (Seyedsalehi, Zihayat & Bagheri), computed once per document.

* **Ψ(d)**, the boolean gender magnitude difference of §3.3.1, eqs. 14–15: mag_g(d) = 1 when any word of the
  gender-definitional list G_g (``genderbias_ir_rekabsaz2020/wordlist_genderspecific.txt``) occurs in d, else 0;
  Ψ(d) = mag_f(d) − mag_m(d) ∈ {−1, 0, 1} (positive: female, negative: male). The authors' code uses the absolute
  value |Ψ| (any one-gender document is "biased"); :func:`psi` offers both (``fairrank.loss.psi``).
* **ζ(d)**, document neutrality of §3.3.2, eq. 22 (Rekabsaz et al. 2021): mag_a(d) = count of the representative
  words of group a (``msmarco_fair_queries_rekabsaz2021/wordlist_gender_representative.txt``); ζ = 1 when
  Σ_a mag_a ≤ τ (τ = 1, the reference code's threshold), else 1 − Σ_a |mag_a / Σ_x mag_x − J_a| with J_a = ½.
  (With two groups this is 1 − 2·|share_f − ½|: 1 for balanced, 0 for one-gender documents.)

Tokenisation follows the reference measurement code: lower-case, split on whitespace, whole-token matches (no
punctuation stripping, so ``"he,"`` is not ``he``). :func:`document_terms` returns every count the measures need
for a set of documents in one table, computed once (the data stage stores it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

GENDERS = ("f", "m")


def tokens(text: str) -> list[str]:
    """The reference tokenisation: ``text.lower().split()``."""
    return str(text).lower().split()


def word_sets(wordlist: pd.DataFrame, label: str) -> dict[str, frozenset[str]]:
    """{``f``: words, ``m``: words} from a ``word, gender`` frame; an empty list or gender is an error."""
    if wordlist is None or len(wordlist) == 0:
        raise ValueError(f"{label} is empty: the bias terms need its female and male words (check the file)")
    sets = {g: frozenset(wordlist.loc[wordlist["gender"] == g, "word"].str.lower()) for g in GENDERS}
    empty = [g for g, s in sets.items() if not s]
    if empty:
        raise ValueError(f"{label} has no {' / '.join(empty)} words: the bias terms compare both genders")
    return sets


def counts(texts: Iterable[str], words: Mapping[str, frozenset[str]]) -> np.ndarray:
    """[n, 2] counts of female and male list words per text (reference tokenisation)."""
    out = []
    for text in texts:
        toks = tokens(text)
        out.append([sum(t in words[g] for t in toks) for g in GENDERS])
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def psi(c_f: np.ndarray, c_m: np.ndarray, mode: str) -> np.ndarray:
    """Ψ (eq. 15) from definitional-word counts: ``signed`` = mag_f − mag_m (the paper), ``abs`` = |mag_f − mag_m|
    (the authors' code)."""
    v = (np.asarray(c_f) > 0).astype(np.float64) - (np.asarray(c_m) > 0).astype(np.float64)
    if mode == "signed":
        return v
    if mode == "abs":
        return np.abs(v)
    raise ValueError(f"unknown Ψ mode {mode!r}: signed (paper eq. 15) or abs (the authors' code)")


def neutrality(c_f: np.ndarray, c_m: np.ndarray, threshold: float) -> np.ndarray:
    """ζ / ω (eq. 22) from representative-word counts, J_a = ½ for both groups."""
    c_f, c_m = np.asarray(c_f, dtype=np.float64), np.asarray(c_m, dtype=np.float64)
    total = c_f + c_m
    with np.errstate(invalid="ignore", divide="ignore"):
        share_f = np.where(total > 0, c_f / np.where(total > 0, total, 1), 0.5)
    unbalance = np.abs(share_f - 0.5) + np.abs((1 - share_f) - 0.5)
    return np.where(total <= threshold, 1.0, 1.0 - unbalance)


def document_terms(docs: pd.DataFrame, definitional: pd.DataFrame, representative: pd.DataFrame, *,
                   neutrality_threshold: float) -> pd.DataFrame:
    """Per distinct ``docid`` of ``docs`` (columns ``docid``, ``text``): word counts and the terms of every
    measure — ``n_tokens``; ``def_f``/``def_m`` (definitional words: ARaB, Ψ, the gendered-term frequency);
    ``rep_f``/``rep_m`` (representative words: NFaiRR, ζ); ``psi`` (signed Ψ) and ``zeta`` (ζ at the threshold).
    A docid with two different texts is an error."""
    if docs.empty:
        return pd.DataFrame(columns=["docid", "n_tokens", "def_f", "def_m", "rep_f", "rep_m", "psi", "zeta"])
    d = docs[["docid", "text"]].drop_duplicates()
    clash = d["docid"].duplicated(keep=False)
    if clash.any():
        raise ValueError(f"document {d.loc[clash, 'docid'].iloc[0]!r} appears with two different texts: document "
                         "ids must name one passage")
    texts = d["text"].tolist()
    defn = counts(texts, word_sets(definitional, "the definitional (ARaB) word list"))
    rep = counts(texts, word_sets(representative, "the representative (NFaiRR) word list"))
    out = pd.DataFrame({"docid": d["docid"].astype(str).to_numpy(), "n_tokens": [len(tokens(t)) for t in texts],
                        "def_f": defn[:, 0], "def_m": defn[:, 1], "rep_f": rep[:, 0], "rep_m": rep[:, 1]})
    out["psi"] = psi(out["def_f"], out["def_m"], "signed")
    out["zeta"] = neutrality(out["rep_f"], out["rep_m"], neutrality_threshold)
    return out.reset_index(drop=True)


def lookup(terms: pd.DataFrame, docids: Sequence[str], column: str, *, what: str = "document") -> np.ndarray:
    """``terms[column]`` for ``docids`` in order; an id without terms is an error naming it."""
    s = terms.set_index("docid")[column]
    missing = [d for d in dict.fromkeys(docids) if d not in s.index]
    if missing:
        raise KeyError(f"{len(missing)} {what} id(s) have no bias terms (first: {missing[0]!r}): they are not in the "
                       "collection the data stage measured — check the run / training file against the collection")
    return s.loc[list(docids)].to_numpy(dtype=np.float64)
