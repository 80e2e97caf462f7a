"""Regenerate BBQ categories from the released templates and vocabularies (ragfair §3.1.2, §3.2).

Only 6 of BBQ's 11 category files are in the data here; Gender_identity (the category §3.2 probes), Race_ethnicity,
SES and the two intersectional files are missing, but every category's templates (``new_templates_<cat>.csv``)
and the vocabularies are. The original generator script was not released with the data, so this is a
re-implementation of the template filling described in Parrish et al. (2022, §3) and visible in the released
files. One *example set* = one template row × one pair of fillers; each set yields the 2 × 2 block
{ambig, disambig} × {neg, nonneg} with the same three answer options (the two fillers and one UNKNOWN string):

* **Fillers.** When the template lists them (``Names``: ``NAME1: [a, b]; NAME2: [c, d]``), every (NAME1, NAME2)
  combination is used as written; the released templates list the swapped order as a separate row (versions
  a / b), so nothing is swapped. Otherwise they come from the vocabulary: proper names
  (``Proper_nouns_only``) by gender from ``vocabulary_proper_names.csv``, or the category's terms in
  ``vocabulary.csv`` (restricted to the template's ``Subcategory``, ``Pilot_include != No``). NAME1 is a
  member of a stereotyped group, NAME2 a sampled non-stereotyped member (at most ``max_pairs`` pairs per
  template, as BBQ samples five), and both orders are emitted (in the released Religion file every set appears
  with either group first).
* **Answers.** "The {{NAME1}}" / "The {{NAME2}}" filled, plus an UNKNOWN string drawn from the ten BBQ uses;
  the option order is shuffled. ``answer_info`` pairs each option with its group label: ``NAMEx_info`` when the
  template gives one, the proper name's gender, ``F``/``M`` for gendered vocabulary, else the term itself.
* **Labels.** ambig → UNKNOWN; disambig → the filler named by ``Answer_negative`` (neg question) or
  ``Answer_non_negative`` (nonneg).
* ``{{WORD1}}``/``{{WORD2}}`` (``Lexical_diversity``) are drawn once per example set.

Everything random is drawn from one seeded generator. The output has the released files' schema, so it goes
through :func:`biaslab.data.bbq.read_file` (and its ``target_loc``/``biased_loc`` derivation) unchanged. It is not
byte-identical with the official files (different samples of names and UNKNOWN strings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import bbq as bbq_data
from ..io import write_text

UNKNOWN_STRINGS = ("Unknown", "Cannot be determined", "Can't be determined", "Not answerable", "Not known",
                   "Not enough info", "Not enough information", "Cannot answer", "Can't answer", "Undetermined")
# gendered vocabulary terms -> BBQ's gender group labels (the Gender_identity templates stereotype "F" / "M")
GENDER_OF = {"woman": "F", "girl": "F", "female": "F", "wife": "F", "man": "M", "boy": "M", "male": "M",
             "husband": "M"}
_SLOT = re.compile(r"\{\{\s*(NAME1|NAME2|WORD\d)\s*\}\}")


class TemplateError(ValueError):
    """A template row cannot be filled; the message names the file, the Q_id and the fix."""


def parse_slot_lists(text: str) -> dict[str, list[str]]:
    """``"NAME1: [a, b]; {{NAME2}}: [c]"`` -> ``{"NAME1": ["a", "b"], "NAME2": ["c"]}`` (also WORDn lists)."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"(?:\{\{)?\s*(NAME\d|WORD\d)\s*(?:\}\})?\s*:\s*\[([^\]]*)\]", text or ""):
        out[m.group(1)] = [x.strip() for x in m.group(2).split(",") if x.strip()]
    return out


def fill(text: str, values: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        return values.get(m.group(1), m.group(0))

    return re.sub(r"\s+", " ", _SLOT.sub(sub, text)).strip()


def _stereotyped(row: pd.Series) -> list[str]:
    raw = (row.get("Known_stereotyped_groups") or "").strip()
    try:
        groups = json.loads(raw) if raw else []
    except json.JSONDecodeError:
        groups = [g.strip(" \"'") for g in raw.strip("[]").split(",") if g.strip()]
    return [str(g).strip() for g in groups]


def _group_label(term: str, info: str) -> str:
    if info:
        return info
    return GENDER_OF.get(term.lower(), term)


def _norm(label: str) -> str:
    return re.sub(r"[\s_-]+", "", label.lower())


def _vocab_pairs(row: pd.Series, category: str, vocab: pd.DataFrame, names: pd.DataFrame,
                 rng: np.random.Generator, max_pairs: int) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """[((NAME1, group1), (NAME2, group2))] from the vocabularies (see the module docstring)."""
    stereo = {_norm(s) for s in _stereotyped(row)}
    info1, info2 = (row.get("NAME1_info") or "").strip(), (row.get("NAME2_info") or "").strip()
    proper = (row.get("Proper_nouns_only") or "").strip().upper() == "TRUE"
    if proper:
        pool = names[names["First_last"].str.strip().str.lower() == "first"]
        by = "gender" if category == "Gender_identity" else "ethnicity"
        terms = [(n.strip(), g.strip()) for n, g in zip(pool["Name"], pool[by], strict=True)]
    else:
        v = vocab[(vocab["Category"].str.strip().str.lower() == category.lower())
                  & (vocab["Pilot_include"].str.strip().str.lower() != "no")]
        sub = (row.get("Subcategory") or "").strip()
        if sub and (v["SubCat"].str.strip() == sub).any():
            v = v[v["SubCat"].str.strip() == sub]
        terms = [(n.strip(), _group_label(n.strip(), i.strip())) for n, i in zip(v["Name"], v["Info"], strict=True)]
    if proper and info1 and info2:
        # the group is stated in the template ("{{NAME1}}, who is trans"): any two different names, slots fixed
        idx = rng.permutation(len(terms))
        people = [terms[i][0] for i in idx]
        return [((people[2 * k], info1), (people[2 * k + 1], info2)) for k in range(min(max_pairs, len(people) // 2))]
    target = [t for t in terms if _norm(t[1]) in stereo or _norm(t[0]) in stereo]
    other = [t for t in terms if t not in target]
    if not target or not other:
        raise TemplateError(f"Q_id {row['Q_id']}: no vocabulary fillers for stereotyped groups {sorted(stereo)} "
                            f"(category {category}); add them to vocabulary.csv or list Names in the template")
    if proper:  # hundreds of names: max_pairs (stereotyped, other) pairs in all
        a = rng.choice(len(target), min(max_pairs, len(target)), replace=False)
        b = rng.choice(len(other), len(a), replace=len(other) < len(a))
        pairs = [(target[i], other[j]) for i, j in zip(a, b, strict=True)]
    else:  # every stereotyped term against up to max_pairs sampled others (BBQ samples five)
        pairs = []
        for t in target:
            cands = [o for o in other if o[1] != t[1]]
            pick = rng.choice(len(cands), min(max_pairs, len(cands)), replace=False) if cands else []
            pairs += [(t, cands[j]) for j in sorted(pick)]
    return pairs + [(b, a) for a, b in pairs]


def _listed_pairs(row: pd.Series, lists: dict[str, list[str]]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    g1, g2 = (row.get("NAME1_info") or "").strip(), (row.get("NAME2_info") or "").strip()
    return [((a, _group_label(a, g1)), (b, _group_label(b, g2)))
            for a, b in product(lists["NAME1"], lists["NAME2"]) if a != b]


def _which(answer_template: str) -> str:
    m = re.search(r"NAME([12])", answer_template or "")
    if not m:
        raise TemplateError(f"answer {answer_template!r} names neither {{{{NAME1}}}} nor {{{{NAME2}}}}")
    return f"NAME{m.group(1)}"


SUPPORTED = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance", "Race_ethnicity",
             "Religion", "SES", "Sexual_orientation")


def generate_rows(templates: pd.DataFrame, category: str, vocab: pd.DataFrame, names: pd.DataFrame, *,
                  seed: int, max_pairs: int, source: str) -> Iterator[dict]:
    """BBQ records (the released JSONL schema) for every usable template row of one category."""
    if category not in SUPPORTED:
        raise TemplateError(f"BBQ category {category!r} cannot be regenerated: the intersectional templates "
                            f"(Race_x_gender, Race_x_SES) use other slots; supported: {', '.join(SUPPORTED)}")
    rng = np.random.default_rng(seed)
    example_id = 0
    for _, row in templates.iterrows():
        if not (row.get("Ambiguous_Context") or "").strip():
            continue
        try:
            lists = parse_slot_lists(row.get("Names", ""))
            words = parse_slot_lists(row.get("Lexical_diversity", ""))
            if "NAME1" in lists and "NAME2" in lists:
                pairs = _listed_pairs(row, lists)
            else:
                pairs = _vocab_pairs(row, category, vocab, names, rng, max_pairs)
            neg_slot, nonneg_slot = _which(row["Answer_negative"]), _which(row["Answer_non_negative"])
        except TemplateError as err:
            raise TemplateError(f"new_templates_{category}.csv: {err}") from None
        stereo = _stereotyped(row)
        for (n1, grp1), (n2, grp2) in pairs:
            values = {"NAME1": n1, "NAME2": n2, **{w: str(rng.choice(opts)) for w, opts in words.items() if opts}}
            ambig = fill(row["Ambiguous_Context"], values)
            disambig = fill(f"{row['Ambiguous_Context']} {row['Disambiguating_Context']}", values)
            unknown = str(rng.choice(UNKNOWN_STRINGS))
            options = [(fill(row["Answer_negative"] if neg_slot == "NAME1" else row["Answer_non_negative"], values),
                        n1, grp1, "NAME1"),
                       (fill(row["Answer_negative"] if neg_slot == "NAME2" else row["Answer_non_negative"], values),
                        n2, grp2, "NAME2"),
                       (unknown, unknown, "unknown", None)]
            options = [options[i] for i in rng.permutation(3)]
            slot_at = {o[3]: i for i, o in enumerate(options)}
            for polarity, question, slot in (("neg", row["Question_negative_stereotype"], neg_slot),
                                             ("nonneg", row["Question_non_negative"], nonneg_slot)):
                for condition, context in (("ambig", ambig), ("disambig", disambig)):
                    yield {
                        "example_id": example_id, "question_index": str(row["Q_id"]).strip(),
                        "question_polarity": polarity, "context_condition": condition,
                        "category": category,
                        "answer_info": {f"ans{i}": [o[1], o[2]] for i, o in enumerate(options)},
                        "additional_metadata": {"subcategory": (row.get("Subcategory") or "None").strip() or "None",
                                                "stereotyped_groups": stereo,
                                                "version": (row.get("version") or "").strip(),
                                                "source": (row.get("Notes") or "").strip(),
                                                "generated_from": source},
                        "context": context, "question": question.strip(),
                        **{f"ans{i}": o[0] for i, o in enumerate(options)},
                        "label": slot_at[None] if condition == "ambig" else slot_at[slot],
                    }
                    example_id += 1


def regenerate(category: str, out_path: str | Path, raw_dir: str | Path, *, seed: int,
               max_pairs: int) -> pd.DataFrame:
    """Write ``<category>.jsonl`` (released schema) from the templates, then read it back through
    :func:`biaslab.data.bbq.read_file` — the same validation and derived columns as a released file."""
    templates = bbq_data.load_templates(category, raw_dir)
    vocab = bbq_data.load_vocabulary(raw_dir)
    names = bbq_data.load_proper_names(raw_dir)
    rows = list(generate_rows(templates, category, vocab, names, seed=seed, max_pairs=max_pairs,
                              source=f"templates/new_templates_{category}.csv"))
    out_path = Path(out_path)
    write_text(out_path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return bbq_data.read_file(out_path)


def structure(df: pd.DataFrame) -> pd.DataFrame:
    """Per template (``question_index``): rows, the {ambig, disambig} × {neg, nonneg} cell counts, the group
    labels used, and the label rules (ambig → UNKNOWN; disambig → a named group; the stereotype-consistent
    answer ``biased_loc`` is correct in half of the disambiguated rows)."""
    def one(g: pd.DataFrame) -> pd.Series:
        cells = g.groupby(["context_condition", "question_polarity"]).size()
        amb, dis = g[g["context_condition"] == "ambig"], g[g["context_condition"] == "disambig"]
        groups = sorted({x for c in ("group0", "group1", "group2") for x in g[c]} - {"unknown"})
        gcols = g[["group0", "group1", "group2"]].to_numpy()
        targets = sorted(set(gcols[np.arange(len(g)), g["target_loc"].to_numpy()]))
        return pd.Series({
            "rows": len(g),
            **{f"{c}_{p}": int(cells.get((c, p), 0)) for c in ("ambig", "disambig") for p in ("neg", "nonneg")},
            "groups": "|".join(groups), "target_groups": "|".join(targets),
            "ambig_label_unknown": float((amb["label"] == amb["unknown_loc"]).mean()) if len(amb) else float("nan"),
            "disambig_label_named": float((dis["label"] != dis["unknown_loc"]).mean()) if len(dis) else float("nan"),
            "disambig_biased_correct": float((dis["label"] == dis["biased_loc"]).mean()) if len(dis) else float("nan"),
        })

    key = df["question_index"].astype(str)
    out = df.assign(question_index=key).groupby("question_index")[list(df.columns.drop("question_index"))].apply(one)
    return out.reset_index().sort_values("question_index", key=lambda s: s.str.zfill(4)).reset_index(drop=True)


def compare_structure(generated: pd.DataFrame, released: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Side-by-side :func:`structure` of a regenerated and a released category, and the checks that must hold:
    same templates, balanced 2×2 blocks, identical label rules and the same stereotyped groups per template."""
    g, r = structure(generated), structure(released)
    both = g.merge(r, on="question_index", how="outer", suffixes=("_generated", "_released"), indicator=True)
    cells = [f"{c}_{p}" for c in ("ambig", "disambig") for p in ("neg", "nonneg")]

    def balanced(t: pd.DataFrame) -> bool:
        return bool((t[cells].nunique(axis=1) == 1).all())

    checks = {
        "same_templates": bool((both["_merge"] == "both").all()),
        "generated_balanced_2x2": balanced(g),
        "released_balanced_2x2": balanced(r),
        "ambig_always_unknown": bool((g["ambig_label_unknown"] == 1).all() and (r["ambig_label_unknown"] == 1).all()),
        "disambig_always_named": bool((g["disambig_label_named"] == 1).all()
                                      and (r["disambig_label_named"] == 1).all()),
        # stereotyped (target) groups must agree; the sampled non-target groups may differ (BBQ samples them)
        "same_target_groups": bool((both["target_groups_generated"] == both["target_groups_released"]).all()),
        "rows_generated": len(generated), "rows_released": len(released),
        "schema_equal": list(generated.columns) == list(released.columns),
    }
    return both.drop(columns="_merge"), checks


def check_categories(categories, work_dir: str | Path, raw_dir: str | Path, *, seed: int,
                     max_pairs: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Regenerate each released category from its templates (:func:`regenerate`, into ``work_dir``) and compare its
    structure with the release (:func:`compare_structure`): one row of checks per category, and the per-template
    table of all of them. A boolean check column that is not all true means the generator does not reproduce BBQ."""
    checks, tables = [], []
    for cat in categories:
        generated = regenerate(cat, Path(work_dir) / f"{cat}.jsonl", raw_dir, seed=seed, max_pairs=max_pairs)
        both, ok = compare_structure(generated, bbq_data.load([cat], raw_dir))
        checks.append({"category": cat, **ok})
        tables.append(both.assign(category=cat))
    return pd.DataFrame(checks), pd.concat(tables, ignore_index=True)
