"""Reader LLMs for the RAG-bias measurement (Kim et al. 2025, App. "Prompt Template").

A reader answers each test question with no document or with one retrieved document; its answer falls on one
side (female / male, conservative / liberal) or on neither. Two ways of reading an answer:

* ``likelihood`` (local models; the default for the 135M SmolLM2 reader): the model's own preference between
  the two answers, read off its output distribution after the chat template's assistant turn.
  PoliticBias-QA: the next-token logit of "A" vs "B" — exactly what the public code does with its local readers
  (``generate_response``, ``get_token_ids``). GenderBias-QA: the log-probability of the female vs the male answer
  name (the protagonists of the question's released female and male passages). A 135M model asked for "just one
  name" often answers with a sentence, a name not in the context, or nothing usable (measured in the stage);
  scoring the two names is the reliable reading, and it is what this mode reports.
* ``generate``: greedy generation through the LLM layer (any backend, cached), then the judge — the paper's
  procedure; PoliticBias-QA answers are mapped by their first "A" / "B" letter.

Choice order for PoliticBias-QA is randomised per question with the seed (App.: "We randomize the order"), and
kept the same for every embedder, so settings differ only in the document shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..llm.cache import ScoreCache
from ..runtime import progress
from . import prompts

# How option scores are computed; with the weights it keys the score cache (:meth:`OptionScorer.cache_id`), so a
# change to the computation must change this text, or a rerun would read the old code's scores from the cache.
SCORING = ("left-padded prompts, one key/value cache per prompt reused for each option, float32 log-softmax; "
           "the prompt pass projects only its last position onto the vocabulary")


def truncate_words(text: str, max_words: int | None) -> str:
    """The first ``max_words`` words (a CPU-budget knob for long passages; None keeps everything)."""
    words = str(text).split()
    if max_words and len(words) > max_words:
        return " ".join(words[:max_words]) + " ..."
    return " ".join(words)


def choice_order(n: int, seed: int) -> np.ndarray:
    """True where the right (conservative) claim is shown as Choice A, one seeded coin per question."""
    return np.random.default_rng(seed).random(n) < 0.5


def politics_prompt(question: str, left: str, right: str, right_first: bool, document: str | None) -> str:
    a, b = (right, left) if right_first else (left, right)
    if document is None:
        return prompts.POLITICS_NO_DOC.format(query=question, choice_a=a, choice_b=b)
    return prompts.POLITICS_WITH_DOC.format(document=document, query=question, choice_a=a, choice_b=b)


def gender_prompt(question: str, document: str | None) -> str:
    if document is None:
        return prompts.GENDER_NO_DOC.format(query=question)
    return prompts.GENDER_WITH_DOC.format(document=document, query=question)


class OptionScorer:
    """Scores answer options under a local causal LM (transformers), batched, left-padded with correct position
    ids, every score cached on disk (:class:`biaslab.llm.cache.ScoreCache`)."""

    def __init__(self, model: str, folder, *, device: str, batch_size: int, cache: bool):
        """``model``: the registry name (it keys the score cache); ``folder``: its weights as ``models.preflight``
        returns them."""
        from ..llm.hf import TransformersLM

        self._lm = TransformersLM(model, folder, device=device, batch_size=batch_size)
        self.model, self.tokenizer, self.net = model, self._lm.tokenizer, self._lm.lm
        self.batch_size = batch_size
        self.cache = ScoreCache("reader_scores") if cache else None
        self._cache_id: str | None = None

    @property
    def cache_id(self) -> str:
        """What a cached score depends on besides its prompt and options: the registry name, the scoring scheme
        (:data:`SCORING`) and a content hash of the loaded weights — never the name alone, which stays the same
        when the weights or the code change."""
        if self._cache_id is None:
            from ..embed import fingerprint

            digest = fingerprint(self.net, scheme=SCORING)[:32]
            self._cache_id = f"{self.model}@{digest}"
        return self._cache_id

    @property
    def llm(self):
        """The same loaded model as an LLM-layer backend (for generating with it without a second copy)."""
        return self._lm

    def chat(self, prompt: str) -> str:
        return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                  tokenize=False)

    def _left_pad(self, sequences: list[list[int]]):
        """Token ids padded on the left to the longest sequence, the attention mask, and position ids that start at
        0 on each sequence's first real token (padding positions clamp to 0)."""
        import torch

        width = max(map(len, sequences))
        ids = torch.full((len(sequences), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for i, s in enumerate(sequences):
            ids[i, width - len(s):] = torch.tensor(s)
            mask[i, width - len(s):] = 1
        return ids, mask, (mask.cumsum(1) - 1).clamp(min=0)

    def _forward(self, sequences: list[list[int]]):
        """Next-token logits after each of the left-padded ``sequences`` ([batch, vocab]). Only the last position
        goes through the output projection (``logits_to_keep=1``): with SmolLM2's 49k-token vocabulary, projecting
        every prompt position was a fifth of the forward pass and a [batch, length, vocab] float32 tensor, for
        logits nobody reads."""
        import torch

        ids, mask, pos = self._left_pad(sequences)
        dev = next(self.net.parameters()).device
        with torch.inference_mode():
            out = self.net(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev),
                           logits_to_keep=1)
        return out.logits[:, -1].float().cpu()

    def _option_logprobs(self, prompt_ids: list[list[int]], option_ids: list[list[list[int]]],
                         per_token: bool) -> np.ndarray:
        """Σ (or mean) log p(option | prompt) for every option of every prompt, encoding each prompt once: the
        prompts' key/value cache is reused for each option and cropped back afterwards. The prompt pass projects
        only its last position onto the vocabulary (see :meth:`_forward`)."""
        import torch

        n, k = len(prompt_ids), len(option_ids[0])
        pad = self.tokenizer.pad_token_id
        ids, mask, prompt_pos = self._left_pad(prompt_ids)
        dev = next(self.net.parameters()).device
        lengths = mask.sum(1)
        out = np.zeros((n, k))
        with torch.inference_mode():
            first = self.net(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=prompt_pos.to(dev),
                             use_cache=True, logits_to_keep=1)
            cache = first.past_key_values
            last = torch.log_softmax(first.logits[:, -1].float(), dim=-1).cpu()
            for j in range(k):
                opts = [option_ids[i][j] for i in range(n)]
                span = max(map(len, opts))
                oid = torch.full((n, span), pad, dtype=torch.long)
                omask = torch.zeros((n, span), dtype=torch.long)
                for i, o in enumerate(opts):
                    oid[i, : len(o)] = torch.tensor(o)
                    omask[i, : len(o)] = 1
                pos = lengths[:, None] + torch.arange(span)[None, :]
                res = self.net(input_ids=oid.to(dev), attention_mask=torch.cat([mask, omask], 1).to(dev),
                               position_ids=pos.to(dev), past_key_values=cache, use_cache=True)
                cache.crop(-span)  # drop this option again: the cache holds the prompts only
                logp = torch.log_softmax(res.logits.float(), dim=-1).cpu()
                for i, o in enumerate(opts):
                    total = float(last[i, o[0]]) + sum(float(logp[i, t - 1, o[t]]) for t in range(1, len(o)))
                    out[i, j] = total / len(o) if per_token else total
        return out

    def _cached(self, kind: str, texts: list[str], options: list[tuple[str, ...]], compute) -> np.ndarray:
        ident = self.cache_id if self.cache else self.model  # uncached: the keys only find repeated texts
        keys = [ScoreCache.key(ident, kind, t, o) for t, o in zip(texts, options, strict=True)]
        found = self.cache.get(keys) if self.cache else {}
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        todo = sorted((i for k, i in first.items() if k not in found), key=lambda i: -len(texts[i]))
        if todo:  # longest first, so similar lengths share a batch
            new: dict[str, list[float]] = {}
            batches = range(0, len(todo), self.batch_size)
            for s in progress(batches, desc=f"reader {kind} ({self.model})", disable=len(batches) <= 1):
                idx = todo[s : s + self.batch_size]
                for i, v in zip(idx, compute([texts[i] for i in idx], [options[i] for i in idx]), strict=True):
                    new[keys[i]] = [float(x) for x in v]
            if self.cache:
                self.cache.put(new)
            found.update(new)
        return np.array([found[k] for k in keys], dtype=np.float64)

    def next_token(self, prompts_: Sequence[str], options: Sequence[str] = ("A", "B")) -> np.ndarray:
        """[n, len(options)] next-token logits of each option's first token after the assistant turn opens."""
        opt = tuple(options)
        ids = [self.tokenizer.encode(o, add_special_tokens=False)[0] for o in opt]
        texts = [self.chat(p) for p in prompts_]

        def compute(batch, _):
            seqs = [self.tokenizer.encode(t, add_special_tokens=False) for t in batch]
            return self._forward(seqs)[:, ids].numpy()

        return self._cached("next_token", texts, [opt] * len(texts), compute)

    def sequence_logprob(self, prompts_: Sequence[str], options: Sequence[Sequence[str]], *,
                         per_token: bool = False) -> np.ndarray:
        """[n, k] Σ log p(option tokens | prompt) for each prompt's k options (k equal for all prompts); the mean
        over the option's tokens with ``per_token`` (length-normalised, for options of different lengths)."""

        texts = [self.chat(p) for p in prompts_]
        opts = [tuple(o) for o in options]
        if len({len(o) for o in opts}) > 1:
            raise ValueError("every prompt needs the same number of options")

        def compute(batch, batch_opts):
            prompt_ids = [self.tokenizer.encode(t, add_special_tokens=False) for t in batch]
            option_ids = [[self.tokenizer.encode(o, add_special_tokens=False) for o in os_] for os_ in batch_opts]
            return self._option_logprobs(prompt_ids, option_ids, per_token)

        return self._cached("token_mean_logprob" if per_token else "sequence_logprob", texts, opts, compute)


_LETTER = re.compile(r"\b(?:choice\s*)?([AB])\b", re.IGNORECASE)


def generator(spec, openai_params, *, device: str, model_dirs: dict | None = None):
    """The cached text generator of one reader (``ragcontrol.readers.<key>``): a local causal LM of the model
    registry (its folder from ``model_dirs``, what ``models.preflight`` returned), or the reader's own
    OpenAI-compatible endpoint — ``spec.name`` is the endpoint's model and ``spec.base_url`` overrides
    ``openai_params.base_url`` (the ``llm.openai`` section: key variable, timeout and retries come from there)."""
    from ..llm import make

    folder = None
    if spec.engine == "openai":
        openai_params = openai_params.model_copy(update={"model": spec.name,
                                                         "base_url": spec.base_url or openai_params.base_url})
    else:
        folder = (model_dirs or {}).get(spec.name)
    return make(spec.engine, model=spec.name, model_dir=folder, cache=True, device=device,
                openai_params=openai_params)


def parse_choice(answer: str) -> str | None:
    """'A' or 'B' from a generated answer ("B", "Choice A: ...", "The answer is B."), None when absent."""
    m = _LETTER.search(str(answer))
    return m.group(1).upper() if m else None


def decide(task: str, mode: str, questions, documents: Sequence[str | None], *, scorer: OptionScorer | None = None,
           llm=None, gen=None, judge=None, max_doc_words: int | None) -> list[str | None]:
    """The side of each answer (a group name of :data:`.tasks.GROUPS`, or None) for ``questions`` (rows with
    ``question`` and, for PoliticBias-QA, ``left_claim, right_claim, right_first``; for GenderBias-QA likelihood
    mode, ``female_name, male_name``), each shown ``documents[i]`` (None = the no-document prompt)."""
    docs = [None if d is None else truncate_words(d, max_doc_words) for d in documents]
    rows = list(questions.itertuples(index=False))
    if len(rows) != len(docs):
        raise ValueError(f"{len(rows)} questions but {len(docs)} documents")
    if task == "PoliticBias-QA":
        ps = [politics_prompt(r.question, r.left_claim, r.right_claim, bool(r.right_first), d)
              for r, d in zip(rows, docs, strict=True)]
        if mode == "letter":
            logits = scorer.next_token(ps, ("A", "B"))
            letters = np.where(logits[:, 0] >= logits[:, 1], "A", "B")
        elif mode == "claim":
            opts = [(r.right_claim, r.left_claim) if r.right_first else (r.left_claim, r.right_claim) for r in rows]
            lp = scorer.sequence_logprob(ps, opts, per_token=True)
            letters = np.where(lp[:, 0] >= lp[:, 1], "A", "B")
        elif mode == "generate":
            letters = [parse_choice(a) for a in llm.generate(ps, gen)]
        else:
            raise ValueError(f"unknown PoliticBias-QA reader mode {mode!r}")
        return [None if x is None else ("conservative" if (x == "A") == bool(r.right_first) else "liberal")
                for x, r in zip(letters, rows, strict=True)]
    if task == "GenderBias-QA":
        ps = [gender_prompt(r.question, d) for r, d in zip(rows, docs, strict=True)]
        if mode == "likelihood":
            lp = scorer.sequence_logprob(ps, [(r.female_name, r.male_name) for r in rows])
            return ["female" if a >= b else "male" for a, b in lp]
        if mode == "generate":
            f, m = judge.flags(llm.generate(ps, gen))
            return ["female" if x and not y else "male" if y and not x else None for x, y in zip(f, m, strict=True)]
        raise ValueError(f"unknown GenderBias-QA reader mode {mode!r}")
    raise ValueError(f"unknown task {task!r}")
