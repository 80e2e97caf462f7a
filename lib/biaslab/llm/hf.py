"""A local causal LM through transformers (offline: SmolLM2-135M-Instruct from its package)."""

from __future__ import annotations

from ..runtime import progress, select_device
from .base import LLM, GenParams


class TransformersLM(LLM):
    backend = "transformers"

    def __init__(self, model: str, folder, *, device: str, batch_size: int, dtype: str = "float32"):
        """``model``: the registry name (it keys the response cache); ``folder``: its loadable weights, as
        ``models.preflight`` returns them."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = model
        self.device = select_device(device)
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.lm = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).to(self.device).eval()

    def _generate(self, messages, params: GenParams, task, inputs):
        import torch

        texts = [self.tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
        out: list[str] = []
        batches = range(0, len(texts), self.batch_size)
        for start in progress(batches, desc=f"generate ({self.model})", disable=len(texts) <= self.batch_size):
            batch = texts[start : start + self.batch_size]
            enc = self.tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            kwargs = dict(max_new_tokens=params.max_new_tokens, pad_token_id=self.tokenizer.pad_token_id)
            if params.temperature > 0:
                torch.manual_seed(params.seed + start)
                kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p)
            else:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            if params.stop:
                kwargs.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
            with torch.inference_mode():
                gen = self.lm.generate(**enc, **kwargs)
            new = gen[:, enc["input_ids"].shape[1]:]
            out.extend(t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True))
        return out
