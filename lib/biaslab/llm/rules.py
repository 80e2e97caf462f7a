"""The offline rule-based backend: deterministic answers built from the request's structured inputs.

It never needs a model and never invents text. A caller names a *task* and passes, per prompt, the inputs a
rule needs (the real sentences, the candidate answers, ...); the rule registered for the task derives the
answer from them. Papers register their own rules with :func:`rule` (for example: "the unbiased rewrite of
an IndiBias sentence is its released less-stereotyped counterpart"), and say in their notebooks what the rule
does. A task with no rule raises :class:`LLMError` telling the user to configure a real backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .base import LLM, LLMError

Rule = Callable[[Mapping[str, Any]], str]
RULES: dict[str, Rule] = {}


def rule(task: str) -> Callable[[Rule], Rule]:
    """Register ``fn(inputs) -> str`` as the offline answer to ``task``."""

    def deco(fn: Rule) -> Rule:
        RULES[task] = fn
        return fn

    return deco


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@rule("echo")
def echo(inputs: Mapping[str, Any]) -> str:
    """Return ``inputs["text"]`` unchanged (identity rewrite; a documented no-op)."""
    return str(inputs["text"])


@rule("choose_by_overlap")
def choose_by_overlap(inputs: Mapping[str, Any]) -> str:
    """Pick the option of ``inputs["options"]`` sharing most word types with ``inputs["context"]``
    (ties: the first). A transparent lexical reader, useful as a no-model baseline."""
    ctx = _tokens(str(inputs.get("context", "")) + " " + str(inputs.get("question", "")))
    options = [str(o) for o in inputs["options"]]
    if not options:
        raise LLMError("choose_by_overlap: inputs['options'] is empty")
    scores = [len(_tokens(o) & ctx) for o in options]
    return options[max(range(len(options)), key=lambda i: (scores[i], -i))]


class RuleBased(LLM):
    backend = "rules"
    model = "rules-v1"
    uses_inputs = True

    def __init__(self, rules: Mapping[str, Rule] | None = None):
        # the global registry by default (not a copy): rules registered later by paper modules are seen
        self.rules = RULES if rules is None else dict(rules)

    def _generate(self, messages, params, task, inputs):
        if task is None or task not in self.rules:
            raise LLMError(
                f"the offline 'rules' backend has no rule for task {task!r} (rules: {', '.join(sorted(self.rules))}); "
                "set llm.backend to 'transformers' (local model) or 'openai' (an API endpoint) in params.yaml"
            )
        fn = self.rules[task]
        return [fn(i) for i in inputs]
