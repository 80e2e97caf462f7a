"""The ``cards`` section of params.yaml: which checkpoints get a cross-paper bias card and which extrinsic
measures each card carries. Types and bounds only: every value is written in params.yaml. The measurement
settings themselves are the papers' own (``ragfair.seat``, ``ragfair.probing``, ``ragfair.evaluate``,
``fairrank.eval``), so a card measures a checkpoint exactly as the paper that owns the measure does."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import Section


class Cards(Section):
    base_models: list[str] = Field(min_length=1)  # registry names: the untouched encoders every card compares with
    papers: list[Literal["ragfair", "intersect", "ragcontrol"]]  # whose trained encoders (data/models/<paper>/*)
    embedder_tasks: list[Literal["GenderBias-QA", "PoliticBias-QA"]]  # ragcontrol's embedder bias (§3) per task
    rank_query_set: Literal["trecdl", "dl19_fair"]  # fairrank's queries for the bi-encoder re-ranking measures
    rank_measures: list[str] = Field(min_length=1)  # fairrank measure names, e.g. ARaB-tc@10, NFaiRR@10, MRR@10
    moved_top: int = Field(gt=0)  # checkpoints listed per measure in moved.csv (the largest reductions)
    max_seq_length: int = Field(gt=0)  # one truncation for every encoder measured (tokens)
    permutation_rounds: int = Field(gt=0)  # random swaps of the paired randomisation test of each change
    p_adjust: Literal["bh", "by", "none"]  # multiple-comparison adjustment of the changes' p-values (one family)


SECTION = Cards
