"""The LLM interface shared by all backends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]
Prompt = str | Sequence[Message]


class LLMError(RuntimeError):
    """A backend is misconfigured or failed; the message names the setting to fix."""


@dataclass(frozen=True)
class GenParams:
    """Generation parameters; part of the cache key. ``temperature == 0`` means greedy decoding."""

    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


def to_messages(prompt: Prompt, system: str | None = None) -> list[Message]:
    """A plain string becomes one user message (after the optional system message)."""
    if isinstance(prompt, str):
        msgs = [{"role": "user", "content": prompt}]
    else:
        msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]
    if system and not (msgs and msgs[0]["role"] == "system"):
        msgs = [{"role": "system", "content": system}, *msgs]
    return msgs


class LLM:
    """Base class: ``generate`` maps prompts to completions, in order, one per prompt."""

    backend: str = "base"
    model: str = ""
    uses_inputs: bool = False  # True when answers depend on ``inputs`` (the rules backend)

    def _generate(self, messages: list[list[Message]], params: GenParams, task: str | None,
                  inputs: list[Mapping[str, Any]]) -> list[str]:
        raise NotImplementedError

    def generate(self, prompts: Sequence[Prompt], params: GenParams, *, system: str | None = None,
                 task: str | None = None, inputs: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
        prompts = list(prompts)
        inputs = list(inputs) if inputs is not None else [{} for _ in prompts]
        if len(inputs) != len(prompts):
            raise LLMError(f"{len(prompts)} prompts but {len(inputs)} inputs")
        msgs = [to_messages(p, system) for p in prompts]
        return self._generate(msgs, params, task, inputs)
