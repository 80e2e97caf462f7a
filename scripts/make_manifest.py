"""Regenerate lib/biaslab/data/manifest.json from a local data mirror.

Usage: python scripts/make_manifest.py MIRROR_DIR

The manifest records, for every file the pipeline reads, its size and SHA-256 (so fetch can verify a
mirror or a download) and its official origin (repository, commit, upstream path) from which an online
URL is built. Run it only when a data set is added; the checked-in manifest is the source of truth.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

GH = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"

# dataset -> (repo, commit, licence, {local relative path: upstream path or None if not online})
ORIGINS: dict[str, dict] = {
    "indibias": dict(
        repo="sahoonihar/IndiBias", commit="42940cb03f90f7ae1494715e38780a9a51de2bd3", license="none stated",
        files={"IndiBias_v1_sample.csv": "IndiBias_v1_sample.csv"},
    ),
    "sbic": dict(
        repo="shallinan1/MarcoDetoxification", commit="9ffb7fe0b373cc862d5a430a147dd3c07b9c9fdc",
        license="CC BY 4.0",
        files={
            "SBIC.v2.agg.dev.csv": "datasets/sbf/SBIC.v2.agg.dev.csv",
            "SBIC.v2.agg.tst.csv": "datasets/sbf/SBIC.v2.agg.tst.csv",
            "SBIC.v2.dev.csv": "datasets/sbf/SBIC.v2.dev.csv",
        },
    ),
    "bbq": dict(
        repo="nyu-mll/BBQ", commit="bea11bd97d79217245b5871acd247b9d6eb24598", license="CC BY 4.0",
        files="bbq",
    ),
    "seat": dict(
        repo="W4ngatang/sent-bias", commit="e3559fb669ca4832743b42fee715994c15c7f1af",
        license="CC BY-NC 4.0 (sent-bias); none stated (bias-bench extras)", files="seat",
    ),
    "twinviews_13k": dict(
        repo="sfulay/truth_politics", commit="4b632580aa41d8e5a80a59b6ed858834e425d84f", license="CC BY 4.0",
        files={"twinviews-13k.csv": "data/twinviews-13k.csv"},
    ),
    "debiasing_rag_kim2025": dict(
        repo="danielkty/debiasing-rag", commit="b4261174ea4333be3ff7e72ff9303c57978bbd7d", license="MIT",
        files="kim",
    ),
    "genderbias_ir_rekabsaz2020": dict(
        repo="navid-rekabsaz/GenderBias_IR", commit="3b940f978e8db5a890899b953dba1fa3e05cc3d3", license="MIT",
        files={
            "queries_gender_annotated.csv": "resources/queries_gender_annotated.csv",
            "wordlist_genderspecific.txt": "resources/wordlist_genderspecific.txt",
            "queries_gender_annotated.clean.tsv": (
                "aminbigdeli/bias-eval-llms", "99f8251b54ad5a0fe96b425529d36db3dc08b893",
                "data/gender_annotated_queries.tsv",
            ),
        },
    ),
    "msmarco_fair_queries_rekabsaz2021": dict(
        repo="CPJKU/FairnessRetrievalResults", commit="81693da5305d67307673574252a4d963510a3632", license="MIT",
        files={
            "msmarco_passage.dev.fair.tsv": "dataset/msmarco_passage.dev.fair.tsv",
            "msmarco_passage.dev.fair.FULL_ANNOTATION.tsv": "dataset/msmarco_passage.dev.fair.FULL_ANNOTATION.tsv",
            "trecdeep19_passage.fair.tsv": "dataset/trecdeep19_passage.fair.tsv",
            "trecdeep19_passage.fair.FULL_ANNOTATION.tsv": "dataset/trecdeep19_passage.fair.FULL_ANNOTATION.tsv",
            "wordlist_gender_representative.txt": "resources/wordlist_gender_representative.txt",
        },
    ),
    "grep_biasir": dict(
        repo="KlaraKrieg/GrepBiasIR", commit="ed44a461054bd4fa506049ad29c44ef405c53fec", license="CC0 1.0",
        files="grep",
    ),
    "trec_fair_2022": dict(
        repo="fair-trec/trec2022-fair-public", commit="6fd105f2b69d616c88a3bc276409773a8493927d", license="MIT",
        files={"selected_topics_22.txt": "data/selected_topics_22.txt"},
    ),
}


def _upstream(dataset: str, rel: str, spec: dict):
    """Return (repo, commit, upstream path) or None when the file has no byte-identical online origin."""
    files = spec["files"]
    if isinstance(files, dict):
        up = files[rel]
        if isinstance(up, tuple):
            return up
        return (spec["repo"], spec["commit"], up)
    if files == "bbq":
        if rel.startswith("data/"):
            return (spec["repo"], spec["commit"], rel)
        name = rel.split("/", 1)[1]
        if name.startswith("new_templates_"):
            cat = name[len("new_templates_"):-len(".csv")].replace("_", " ")
            return (spec["repo"], spec["commit"], f"templates/new_templates - {cat}.csv")
        return (spec["repo"], spec["commit"], f"templates/{name}")
    if files == "seat":
        sub, name = rel.split("/", 1)
        if sub == "sent-bias_tests":
            return (spec["repo"], spec["commit"], f"tests/{name}")
        path = "data/bias_attribute_words.json" if name.endswith(".json") else f"data/seat/{name}"
        return ("McGill-NLP/bias-bench", "291426aab926f78ecfc7bd040b531429ee8123e0", path)
    if files == "kim":
        if rel.startswith("hf_splits_jsonl/"):
            return None  # converted from the upstream Arrow datasets: no byte-identical online file
        return (spec["repo"], spec["commit"], f"dataset/tasks/{rel}")
    if files == "grep":
        if rel == "queries.csv":
            return (spec["repo"], spec["commit"], rel)
        cat = rel[len("queries-documents_"):-len(".csv")]
        cat = "Sex & Relationship" if cat == "Sex_and_Relationship" else cat.replace("_", " ")
        return (spec["repo"], spec["commit"], f"queries-documents_{cat}.csv")
    raise ValueError(files)


def main(mirror: Path) -> None:
    out: dict = {}
    for dataset, spec in ORIGINS.items():
        entries = []
        for f in sorted((mirror / dataset).rglob("*")):
            if not f.is_file() or f.name == "SOURCE.md":
                continue
            rel = f.relative_to(mirror / dataset).as_posix()
            up = _upstream(dataset, rel, spec)
            entries.append(
                dict(
                    path=rel,
                    size=f.stat().st_size,
                    sha256=hashlib.sha256(f.read_bytes()).hexdigest(),
                    url=GH.format(repo=up[0], commit=up[1], path=up[2]).replace(" ", "%20") if up else None,
                )
            )
        out[dataset] = dict(origin=f"{spec['repo']}@{spec['commit']}", license=spec["license"], files=entries)
    target = Path(__file__).resolve().parents[1] / "lib/biaslab/data/manifest.json"
    target.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {target}: {sum(len(v['files']) for v in out.values())} files")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
