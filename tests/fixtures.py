"""Tiny data files in the real schemas of each data set, written by the tests themselves.

``write_all(raw_dir)`` lays out a miniature ``data/raw`` (good files); ``break_*`` helpers damage one file in a
specific way so tests can check the error names the file, the row or column and the fix.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path


def _csv(path: Path, header: list[str], rows: list[list], index: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(([""] if index else []) + header)
        for i, r in enumerate(rows):
            w.writerow(([i] if index else []) + list(r))
    return path


def write_seat(raw: Path) -> None:
    base = raw / "seat" / "sent-bias_tests"
    base.mkdir(parents=True, exist_ok=True)
    tests = {
        "weat6": (["John", "Paul", "Mike"], ["Amy", "Joan", "Lisa"], ["executive", "salary", "career"],
                  ["home", "parents", "family"]),
        "sent-weat6": (["This is John.", "That is Paul.", "Here is Mike."], ["This is Amy.", "That is Joan.",
                       "Here is Lisa."], ["This is a career.", "That is a salary."], ["This is a family.",
                       "That is home."]),
    }
    for name, (x, y, a, b) in tests.items():
        obj = {"targ1": {"category": "MaleNames", "examples": x}, "targ2": {"category": "FemaleNames", "examples": y},
               "attr1": {"category": "Career", "examples": a}, "attr2": {"category": "Family", "examples": b}}
        (base / f"{name}.jsonl").write_text(json.dumps(obj, indent=2))
    extra = raw / "seat" / "bias-bench_extra"
    extra.mkdir(parents=True, exist_ok=True)
    (extra / "bias_attribute_words.json").write_text(json.dumps({"gender": [["he", "she"]], "race": [], "religion": []}))


def write_indibias(raw: Path) -> None:
    _csv(raw / "indibias" / "IndiBias_v1_sample.csv",
         ["index", "modified_eng_sent_more", "modified_eng_sent_less", "sent_more_hindi", "sent_less_hindi",
          "bias_type", "stereo_antistereo"],
         [[649, "The brahmin family lived in a mansion.", "The OBC family lived in a mansion.", "अ", "ब", "Caste", "stereo"],
          [12, "Women cannot drive.", "Men cannot drive.", "क", "ख", "gender", "antistereo"]], index=True)


def write_sbic(raw: Path) -> None:
    header = ["post", "targetMinority", "targetCategory", "targetStereotype", "whoTarget", "intentYN", "sexYN",
              "offensiveYN", "dataSource", "hasBiasedImplication"]
    rows = [["a post about nothing\non two lines", "[]", "[]", "[]", "", 0.1, 0.0, 0.0, "Gab", 1],
            ["a biased post", '["women"]', '["gender"]', '["women are weak"]', 1.0, 0.9, 0.0, 1.0, "t/davidson", 0]]
    for name in ("SBIC.v2.agg.dev.csv", "SBIC.v2.agg.tst.csv"):
        _csv(raw / "sbic" / name, header, rows, index=True)


def bbq_record(example_id: int, polarity: str = "neg", condition: str = "ambig", category: str = "Age") -> dict:
    return {
        "example_id": example_id, "question_index": "1", "question_polarity": polarity,
        "context_condition": condition, "category": category,
        "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["grandson", "nonOld"], "ans2": ["Unknown", "unknown"]},
        "additional_metadata": {"subcategory": "None", "stereotyped_groups": ["old"], "version": "a", "source": "x"},
        "context": "I saw a grandson and their grandfather outside.", "question": "Who was forgetful?",
        "ans0": "The grandfather", "ans1": "The grandson", "ans2": "Unknown", "label": 2,
    }


def write_bbq(raw: Path) -> None:
    data = raw / "bbq" / "data"
    data.mkdir(parents=True, exist_ok=True)
    recs = [bbq_record(0, "neg"), bbq_record(1, "nonneg"), bbq_record(2, "neg", "disambig")]
    (data / "Age.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    tpl = raw / "bbq" / "templates"
    header = ["Q_id", "Category", "Ambiguous_Context", "Disambiguating_Context", "Question_negative_stereotype",
              "Question_non_negative"]
    for cat in ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                "Race_ethnicity", "Race_x_gender", "Race_x_SES", "Religion", "SES", "Sexual_orientation"):
        _csv(tpl / f"new_templates_{cat}.csv", header, [[1, cat, "ctx {{NAME1}}", "dis", "neg?", "nonneg?"]])
    _csv(tpl / "vocabulary.csv", ["Category", "Pilot_include", "SubCat", "Name", "Info", "Source"],
         [["Age", "yes", "old", "grandfather", "", ""]])
    _csv(tpl / "vocabulary_proper_names.csv", ["Name", "First_last", "gender", "ethnicity", "source", "info"],
         [["Ebony", "first", "F", "Black", "x", ""]])


def write_twinviews(raw: Path) -> None:
    _csv(raw / "twinviews_13k" / "twinviews-13k.csv", ["l", "r", "topic"],
         [["Tax the rich.", "Cut taxes.", "Taxes"], ["Expand healthcare.", "Privatise healthcare.", "Health"]])


def write_kim2025(raw: Path) -> None:
    root = raw / "debiasing_rag_kim2025"
    for split in ("train", "test"):
        _csv(root / f"GenderBias-QA_{split}.csv",
             ["num", "topic", "question", "bias1-document1", "bias1-document2", "bias2-document1", "bias2-document2"],
             [[1, "sports", "Who is a famous captain?", "She led.", "Her team won.", "He led.", "His team won."]])
        _csv(root / f"PoliticBias-QA_{split}.csv", ["num", "topic", "question", "left_claim", "right_claim"],
             [[800, "Taxes", "How should taxes work?", "Tax the rich.", "Cut taxes."]])
    hf = root / "hf_splits_jsonl"
    hf.mkdir(parents=True, exist_ok=True)
    (hf / "PoliticBias-QA__val.jsonl").write_text(json.dumps(
        {"topics": "Health", "queries": "Who pays?", "left_claims": "Expand healthcare.",
         "right_claims": "Privatise healthcare."}) + "\n")
    for task in ("GenderBias-QA", "PoliticBias-QA"):
        (hf / f"{task}__corpus.jsonl").write_text(json.dumps({"text": "She led."}) + "\n" +
                                                  json.dumps({"text": "He led."}) + "\n")


def write_rekabsaz(raw: Path) -> None:
    r20 = raw / "genderbias_ir_rekabsaz2020"
    r20.mkdir(parents=True, exist_ok=True)
    (r20 / "queries_gender_annotated.csv").write_text("986563,who was known as the heretic king,m\n"
                                                       "12,cats, dogs and birds,n\n")
    (r20 / "queries_gender_annotated.clean.tsv").write_text("qid\tquery\tlabel\n986563\twho was known as the heretic "
                                                             "king\tm\n12\tcats, dogs and birds\tn\n")
    (r20 / "wordlist_genderspecific.txt").write_text("boy,m\ngirl,f\n")
    r21 = raw / "msmarco_fair_queries_rekabsaz2021"
    r21.mkdir(parents=True, exist_ok=True)
    for stem in ("msmarco_passage.dev.fair", "trecdeep19_passage.fair"):
        (r21 / f"{stem}.tsv").write_text("361240\thow to get big thighs\n1056160\twhat is early childhood studies")
        (r21 / f"{stem}.FULL_ANNOTATION.tsv").write_text(
            "QID\tQuery\tCategories\tDomains\tSubdomains\tExample/Description\n461718\tname of dr\tCareer\tWork\tQ\t\n")
    (r21 / "wordlist_gender_representative.txt").write_text("Actress,f\nactor,m\n")


def write_grep(raw: Path) -> None:
    root = raw / "grep_biasir"
    _csv(root / "queries.csv", ["q_id", "category", "query"], [[0, "Appearance", "hair regulations"]])
    for cat in ("Appearance", "Career", "Child_Care", "Cognitive_Capabilities", "Domestic_Work",
                "Physical_Capabilities", "Sex_and_Relationship"):
        _csv(root / f"queries-documents_{cat}.csv",
             ["q_id", "d_id", "relevant", "query", "doc_title", "document", "content_gender", "exp_stereotype"],
             [[0, 1, 1, "q", "t", "She cut her hair.", "F", "No Annotation Agreement"],
              [0, 2, 0, "q", "t", "He cut his hair.", "M", ""]])


def write_trec_fair(raw: Path) -> None:
    root = raw / "trec_fair_2022"
    root.mkdir(parents=True, exist_ok=True)
    (root / "selected_topics_22.txt").write_text("\n".join(f"Topic {i}" for i in range(100)))


def write_wikitext(raw: Path) -> None:
    root = raw / "wikitext2_valid_test"
    root.mkdir(parents=True, exist_ok=True)
    (root / "wikitext2_valid.txt").write_text(
        " \n = Ada Lovelace = \n \n Ada Lovelace was an English <unk> . She wrote the first program in 1 @,@ 843 "
        ". It ran on the Analytical Engine ( a design ) . \n \n = = Early life = = \n \n She was born in London "
        ", the only child of Lord Byron 's marriage . \n")
    (root / "wikitext2_test.txt").write_text(" \n = <unk> = \n \n A state @-@ of @-@ the @-@ art \" engine \" was "
                                             "built in 0 @.@ 7 years . \n")


def write_trec_dl(raw: Path) -> None:
    root = raw / "trecdl_passage_bm25_top100_text"
    root.mkdir(parents=True, exist_ok=True)
    for year, qid in (("dl19", 19335), ("dl20", 1030303)):
        hits = [{"content": f"Passage {d} about anthropology.", "qid": qid, "docid": str(d), "rank": r + 1,
                 "score": 10.0 - r} for r, d in enumerate((11, 12, 13))]
        (root / f"retrieve_results_bm25_{year}.json").write_text(json.dumps([{"query": "q", "hits": hits}]))
        (root / f"qrels.{year}-passage.txt").write_text(f"{qid} Q0 11 0\n{qid} Q0 12 3\n{qid} Q0 99 2\n")
    (root / "topics.dl19-passage.txt").write_text("19335\tanthropological definition of environment\n")
    (root / "topics.dl20.txt").write_text("1030303\twho is aziz hashim\n")


def write_jigsaw_testsets(raw: Path) -> None:
    root = raw / "jigsaw_identity_term_bias_testsets"
    _csv(root / "bias_madlibs_77k.csv", ["Text", "Label", "Template"],
         [["Sara is a wonderful black", "NOT_BAD", "name_adj"], ["Joe is a dumb white", "BAD", "name_adj"],
          ["Being gay is awful.", "BAD", "being_adj"]])
    for name in ("toxicity_nonfuzzed_testset.csv", "toxicity_fuzzed_testset.csv"):
        _csv(root / name, ["rev_id", "comment", "toxic"], [[1, "  Thanks for the edit.  ", "False"],
                                                          [2, "You are a stupid muslim", "True"]])


def write_bias_in_bios(raw: Path) -> None:
    root = raw / "bias_in_bios_samples"
    _csv(root / "bios_samples_28_professions.csv", ["hard_text", "profession", "gender"],
         [["She treats patients at night.", "nurse", "Female"], ["He writes compilers.", "software_engineer", "Male"]])
    _csv(root / "accountant_complete.csv", ["hard_text", "profession", "gender"],
         [["He audits firms.", "accountant", "Male"], ["She treats patients at night.", "nurse", "Female"]])


def write_msmarco_toy(raw: Path) -> None:
    root = raw / "msmarco_train_triples_splade_toy"
    root.mkdir(parents=True, exist_ok=True)
    (root / "triplets_raw.tsv").write_text("what do nurses do\tShe treats patients at night.\tHe writes compilers.\n"
                                           "who audits firms\tAn accountant audits firms.\tThe river is long.\n")


WRITERS = {
    "seat": write_seat, "indibias": write_indibias, "sbic": write_sbic, "bbq": write_bbq,
    "twinviews_13k": write_twinviews, "debiasing_rag_kim2025": write_kim2025,
    "genderbias_ir_rekabsaz2020": write_rekabsaz, "msmarco_fair_queries_rekabsaz2021": write_rekabsaz,
    "grep_biasir": write_grep, "trec_fair_2022": write_trec_fair, "wikitext2_valid_test": write_wikitext,
    "trecdl_passage_bm25_top100_text": write_trec_dl,
    "jigsaw_identity_term_bias_testsets": write_jigsaw_testsets, "bias_in_bios_samples": write_bias_in_bios,
    "msmarco_train_triples_splade_toy": write_msmarco_toy,
}


def write_all(raw: Path) -> Path:
    for fn in dict.fromkeys(WRITERS.values()):
        fn(raw)
    return raw


def cscl_toy():
    """Eight short posts, four friendly (y 0) and four offensive (y 1), each class split over two groups (a), for
    cscl's training tests on either device."""
    import pandas as pd

    return pd.DataFrame({
        "text": ["what a lovely day", "I love this film", "great work, thanks", "a wonderful person",
                 "you are an idiot", "this is garbage", "shut up, moron", "what a stupid idea"],
        "y": [0, 0, 0, 0, 1, 1, 1, 1],
        "a": [0, 1, 0, 1, 0, 1, 0, 1],
    })


def ragfair_pairs(n: int = 16):
    """``n`` debiasing pairs in the schema of ``data/processed/ragfair/pairs.parquet`` (query, neutral passage, the
    stereotyped and the non-stereotyped variant), for training runs in tests and in scripts/device_check.sh."""
    import pandas as pd

    names = [("old man", "young woman"), ("grandfather", "granddaughter"), ("retiree", "teenager"), ("elder", "youth")]
    rows = []
    for i in range(n):
        a, b = names[i % len(names)]
        rows.append({"query": f"Who forgot the meeting number {i}?", "passage": f"Someone forgot meeting {i}.",
                     "biased_stereotyped": f"The {a} forgot meeting {i}.",
                     "biased_non_stereotyped": f"The {b} forgot meeting {i}."})
    return pd.DataFrame(rows)
