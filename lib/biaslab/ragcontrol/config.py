"""The ``ragcontrol`` section of params.yaml (Kim et al. 2025, "Mitigating Bias in RAG: Controlling the
Embedder"). Types and bounds only: every value is written in params.yaml (see ``biaslab.config``)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..config import Section

Task = Literal["GenderBias-QA", "PoliticBias-QA"]
CandidateCorpus = Literal["msmarco", "wikipedia", "twinviews"]


class RagcontrolCandidates(Section):
    """App. "Training": candidate documents per training question (see ``biaslab.ragcontrol.candidates``)."""

    top_k: int = Field(gt=0)  # per corpus and query variant (paper: 3)
    corpora: dict[Task, list[CandidateCorpus]]
    max_pool: int = Field(ge=0)  # documents per candidate corpus, a seeded sample; 0 = the whole corpus
    max_positives: int = Field(gt=0)  # public code: 10
    max_negatives: int = Field(gt=0)  # public code: 10
    pad_negatives_with_neutral: dict[Task, bool]  # as the public code's data.py


class RagcontrolRun(Section):
    """One fine-tuned embedder; ``learning_rate`` / ``epochs`` left unset inherit ragcontrol.train's."""

    task: Task
    freeze_layers: int = Field(ge=0)  # public code --freeze_layers: 0 = full fine-tuning, k = last k MLPs
    learning_rate: float | None = Field(None, gt=0)
    epochs: int | None = Field(None, gt=0)


class RagcontrolTrain(Section):
    """App. "Training" + the public code's grid (lr {3e-5, 1e-5}, epochs {5, 10, 15}, freeze {0..4}, merge
    {0.1..0.9}, batch 8, AdamW wd 0.01, 10 warm-up steps, scale 50)."""

    epochs: int = Field(gt=0)
    batch_size: int = Field(gt=0)
    learning_rate: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    warmup_steps: int = Field(ge=0)
    scale: float = Field(gt=0)
    max_seq_length: int = Field(gt=0)
    runs: dict[str, RagcontrolRun]
    merges: list[float]  # WiSE-FT m; 1.0 = as trained

    @field_validator("merges")
    @classmethod
    def _merges(cls, v: list[float]) -> list[float]:
        if not v or any(not 0 < m <= 1 for m in v):
            raise ValueError("WiSE-FT merge weights must lie in (0, 1]")
        return v


class RagcontrolProjection(Section):
    alphas: list[float]
    words: dict[Task, str]


class RagcontrolSampling(Section):
    top_n: list[int]
    taus: list[float]


class RagcontrolReader(Section):
    """One reader LLM (see ``biaslab.ragcontrol.reader``); the paper compares six (App. "All 6 LLMs")."""

    engine: Literal["transformers", "openai"]  # openai: an OpenAI-compatible endpoint, generate modes
    name: str  # transformers: a causal LM of the model registry; openai: the endpoint's model
    base_url: str | None = None  # openai: this reader's endpoint; None = llm.openai.base_url (key, timeout from there)
    gender_mode: Literal["likelihood", "generate"]
    politics_mode: Literal["letter", "claim", "generate"]

    @model_validator(mode="after")
    def _api_generates(self):
        if self.engine == "openai" and (self.gender_mode, self.politics_mode) != ("generate", "generate"):
            raise ValueError("an openai reader has no option likelihoods here: set gender_mode and politics_mode "
                             "to generate")
        if self.engine == "transformers" and self.base_url is not None:
            raise ValueError("base_url is for engine: openai readers only")
        return self


class RagcontrolReading(Section):
    """What every reader shares: the question subset, prompt documents, batching, the free-generation check."""

    max_questions: int = Field(ge=0)  # a seeded subset of test questions per task; 0 = all
    max_doc_words: int | None = Field(gt=0)  # truncate documents in reader prompts; None = whole
    batch_size: int = Field(gt=0)
    generation_check: int = Field(ge=0)  # questions per task answered by free generation to show how often a
    #                                      scored reader's generation lands on a side; 0 = skip
    generation_tokens: int = Field(gt=0)  # new tokens of a generating reader (greedy; public code: 32)


class RagcontrolUtility(Section):
    trec_dl: list[Literal["dl19", "dl20"]]
    k: int = Field(gt=0)  # nDCG@k of the re-ranked BM25 top-100
    max_queries: int = Field(ge=0)  # judged queries per year, a seeded sample; 0 = all


class RagcontrolClaims(Section):
    """Bounds the claim checks use (``biaslab.ragcontrol.findings``)."""

    sampling_bound: float = Field(gt=0)  # "no noticeable change": expected embedder bias within ± this (points)
    follow_floor: float = Field(ge=0, le=100)  # competence: the reader takes a one-sided document's side (%)


class Ragcontrol(Section):
    tasks: list[Task]
    embedder: str  # paper: thenlper/gte-base
    max_seq_length: int = Field(gt=0)
    judge: Literal["lexicon", "llm"]  # llm: the appendix judge prompts through the llm section
    max_test_questions: int = Field(ge=0)  # a quick smaller problem: seeded test subset + its documents; 0 = all
    candidates: RagcontrolCandidates
    train: RagcontrolTrain
    projection: RagcontrolProjection
    sampling: RagcontrolSampling
    reader: RagcontrolReading
    readers: dict[str, RagcontrolReader]
    utility: RagcontrolUtility
    claims: RagcontrolClaims

    @model_validator(mode="after")
    def _runs_use_listed_tasks(self):
        bad = sorted(name for name, r in self.train.runs.items() if r.task not in self.tasks)
        if bad:
            raise ValueError(f"ragcontrol.train.runs {bad} train a task not in ragcontrol.tasks {self.tasks}")
        if not self.readers:
            raise ValueError("ragcontrol.readers is empty: list at least one reader LLM")
        bad = sorted(k for k in self.readers if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", k))
        if bad:
            raise ValueError(f"ragcontrol.readers {bad}: reader keys name files and stages — use letters, digits, "
                             "'.', '_' and '-'")
        return self


SECTION = Ragcontrol
