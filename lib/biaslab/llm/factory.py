"""Build the configured backend, wrapped in the response cache."""

from __future__ import annotations

from .base import LLM, LLMError
from .cache import CachedLLM


def make(backend: str, *, model: str = "smollm2-135m-instruct", cache: bool = True, device: str = "auto",
         openai_params=None) -> LLM:
    if backend == "rules":
        from .rules import RuleBased

        inner: LLM = RuleBased()
    elif backend == "transformers":
        from .hf import TransformersLM

        inner = TransformersLM(model, device=device)
    elif backend == "openai":
        from ..config import OpenAIParams
        from .openai_compat import OpenAICompatible

        o = openai_params or OpenAIParams()
        inner = OpenAICompatible(o.model, o.base_url, o.api_key_env, o.timeout, o.max_retries)
    else:
        raise LLMError(f"unknown llm.backend {backend!r}: use rules, transformers or openai")
    return CachedLLM(inner) if cache else inner


def from_params(llm_params, device: str = "auto") -> LLM:
    """From the ``llm`` section of params.yaml (``Params.llm``)."""
    return make(llm_params.backend, model=llm_params.model, cache=llm_params.cache, device=device,
                openai_params=llm_params.openai)


def gen_params(llm_params, seed: int):
    """``GenParams`` from the ``llm`` section and the common seed."""
    from .base import GenParams

    return GenParams(max_new_tokens=llm_params.max_new_tokens, temperature=llm_params.temperature,
                     top_p=llm_params.top_p, seed=seed)
