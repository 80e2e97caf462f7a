"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp server, TGI, ...)."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from ..runtime import progress
from .base import LLM, GenParams, LLMError

LOOPBACK = ("localhost", "127.0.0.1", "::1")


class OpenAICompatible(LLM):
    backend = "openai"

    def __init__(self, model: str, base_url: str, api_key_env: str, timeout: float,
                 max_retries: int):
        try:
            import openai
        except ImportError:
            raise LLMError("llm.backend is 'openai' but the openai package is missing: pip install -e '.[llm]'") from None
        key = os.environ.get(api_key_env, "")
        if not key:
            if urlparse(base_url).hostname in LOOPBACK:
                key = "not-needed"  # local servers usually accept any key
            else:
                raise LLMError(f"llm.backend is 'openai' ({base_url}) but the environment variable {api_key_env} is "
                               f"not set; export {api_key_env}=<your key> (keys are never read from files)")
        self.model = model
        self.base_url = base_url
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self._errors = (openai.OpenAIError,)

    def _generate(self, messages, params: GenParams, task, inputs):
        out = []
        for msgs in progress(messages, desc=f"{self.model} via API", disable=len(messages) < 8):
            kwargs = dict(model=self.model, messages=msgs, max_tokens=params.max_new_tokens,
                          temperature=params.temperature, top_p=params.top_p, seed=params.seed)
            if params.stop:
                kwargs["stop"] = list(params.stop)
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except self._errors as err:
                raise LLMError(f"{self.base_url}: request for model {self.model!r} failed: {err}") from None
            out.append(resp.choices[0].message.content or "")
        return out
