"""TREC 2022 Fair Ranking track topics: 100 WikiProject names (topic names only).

The organisers' DataPrep notebook sorts the list, shuffles it with ``random.Random(20220503)`` and takes the
first 50 as training topics, the rest as evaluation topics; :func:`load` reproduces that split."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir, fix_for, require_file

DATASET = "trec_fair_2022"
FILE = "selected_topics_22.txt"
SPLIT_SEED = 20220503


def load(raw_dir: str | Path) -> pd.DataFrame:
    path = require_file(dataset_dir(DATASET, raw_dir) / FILE, DATASET)
    topics = [t.strip() for t in path.read_text(encoding="utf-8").splitlines()]
    for i, t in enumerate(topics, 1):
        if not t:
            raise DataError(f"{path}: line {i} is empty — {fix_for(DATASET)}")
    if len(set(topics)) != len(topics):
        raise DataError(f"{path}: duplicate topic names — {fix_for(DATASET)}")
    order = sorted(topics)
    random.Random(SPLIT_SEED).shuffle(order)
    train = set(order[:50])
    return pd.DataFrame({"topic": topics, "split": ["train" if t in train else "eval" for t in topics]})


def validate(raw_dir: str | Path) -> dict[str, int]:
    return {FILE: len(load(raw_dir))}
