"""Text generation behind one interface, with an on-disk response cache.

Backends (``llm.backend`` in params.yaml):

* ``openai`` — any OpenAI-compatible chat-completions endpoint (``llm.openai.base_url``); the API key is read
  from the environment variable named by ``llm.openai.api_key_env``, never from a file;
* ``transformers`` — a local causal LM from the model registry (default SmolLM2-135M-Instruct, shipped in a
  package and dequantised once);
* ``rules`` — an offline, deterministic backend that never needs a model: each request names a *task* and
  passes structured ``inputs``; a rule registered for that task builds the answer from real data (see
  :mod:`biaslab.llm.rules`). A task without a rule is an error, never invented text.

Every backend is wrapped by :class:`~biaslab.llm.cache.CachedLLM`: responses are stored under a key of
(backend, model, messages, generation parameters[, task inputs]), so reruns are free and deterministic.

    from biaslab import llm as llm_layer, models
    dirs = models.preflight(llm_layer.needs_model(P.llm), P.models)
    llm = llm_layer.from_params(P.llm, device=P.common.device, model_dirs=dirs)
    [answer] = llm.generate(["Rewrite without bias: ..."], gen_params(P.llm, P.common.seed),
                            task="rewrite_unbiased", inputs=[{...}])
"""

from .base import LLM, GenParams, LLMError
from .factory import from_params, gen_params, make, needs_model

__all__ = ["LLM", "GenParams", "LLMError", "from_params", "gen_params", "make", "needs_model"]
