"""Build the configured backend, wrapped in the response cache."""

from __future__ import annotations

from pathlib import Path

from .base import LLM, LLMError
from .cache import CachedLLM


def make(backend: str, *, model: str, model_dir: str | Path | None, cache: bool, device: str,
         openai_params=None) -> LLM:
    """A backend: ``rules`` (offline, no model), ``transformers`` (the causal LM ``model`` loaded from ``model_dir``,
    the folder ``models.preflight`` returned for it) or ``openai`` (``openai_params``: the ``llm.openai`` section —
    its own ``model`` names the endpoint's model). ``cache`` wraps it in the on-disk response cache."""
    if backend == "rules":
        from .rules import RuleBased

        inner: LLM = RuleBased()
    elif backend == "transformers":
        from .hf import TransformersLM

        if model_dir is None:
            raise LLMError(f"the transformers backend needs the weights of {model!r}: pass the folder "
                           "models.preflight returned for it")
        inner = TransformersLM(model, model_dir, device=device, batch_size=8)
    elif backend == "openai":
        from .openai_compat import OpenAICompatible

        if openai_params is None:
            raise LLMError("the openai backend needs the llm.openai section (base_url, model, key variable)")
        o = openai_params
        inner = OpenAICompatible(o.model, o.base_url, o.api_key_env, o.timeout, o.max_retries)
    else:
        raise LLMError(f"unknown llm.backend {backend!r}: use rules, transformers or openai")
    return CachedLLM(inner) if cache else inner


def needs_model(llm_params) -> list[str]:
    """The registry names a stage must preflight for this ``llm`` section (the local model, if any)."""
    return [llm_params.model] if llm_params.backend == "transformers" else []


def from_params(llm_params, *, device: str, model_dirs: dict | None = None) -> LLM:
    """From the ``llm`` section of params.yaml; ``model_dirs`` is what ``models.preflight`` returned (it must hold
    ``llm.model`` when the backend is transformers)."""
    folder = (model_dirs or {}).get(llm_params.model) if llm_params.backend == "transformers" else None
    return make(llm_params.backend, model=llm_params.model, model_dir=folder, cache=llm_params.cache, device=device,
                openai_params=llm_params.openai)


def gen_params(llm_params, seed: int):
    """``GenParams`` from the ``llm`` section and the common seed."""
    from .base import GenParams

    return GenParams(max_new_tokens=llm_params.max_new_tokens, temperature=llm_params.temperature,
                     top_p=llm_params.top_p, seed=seed)
