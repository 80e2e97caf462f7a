"""Frozen bottom layers, run once: the output of an encoder's first n transformer layers for a set of texts is
computed once and every model that shares those layers runs only its own top layers on it.

Four users, one mechanism (and one store, :class:`StateBank`: per text its states in float16, saved as npz):

* cscl's partial fine-tuning (``cscl.train.trainable_layers``): the states of the frozen bottom are computed once
  per text and augmented view, and every training step runs only the trainable top (``biaslab.cscl.train``).
* ragcontrol's last-k-MLP embedders (``freeze_layers: k``, the public code's partial fine-tuning): embeddings and
  the first n − k layers keep the base weights, and so do their WiSE-FT merges, so the base model's states after
  layer n − k serve every one of them (:class:`FrozenBottom`, :func:`shared_bottom_encoder`;
  ``ragcontrol.retrieval.study``). Encoding then costs k / n of a full pass. Sharing is checked, not assumed: a
  model whose bottom differs from the base in any bit, or that tokenizes otherwise, is refused.
* the bias cards (``biaslab.cards.load.load_encoder``): every checkpoint that kept the base encoder's bottom
  (found by :func:`shared_depth`: ragfair's WiSE-FT runs, ragcontrol's last-k runs) encodes the cards' texts on
  the base's states of it (:class:`Bottoms`).
* fairrank's cross-encoder re-rankers (``fairrank.train.trainable_layers``): the bottom's states of every
  query–passage pair (training pairs and the re-ranked BM25 lists) are computed once in the data stage; every
  ranker of every seed trains and scores with its top layers only (``biaslab.fairrank.train``).

The top layers are the model's own ``nn.Module`` layers called with the attention mask transformers builds for
them (``create_bidirectional_mask``). Every bottom is computed by :func:`bottom_states`, batched as
:class:`biaslab.embed.Encoder` batches (equal token counts, no padding, filled to a row-independent product): an
item's states never depend on the items computed with it, and :class:`FrozenBottom`'s embeddings equal the full
forward pass's bit for bit (tested: ``tests/test_frozen.py``). The training users' top layers run on padded batches
of these states, equal to the full model up to floating-point summation order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def run_layers(layers, config, x, mask):
    """The hidden states after running ``layers`` (encoder layers of one model, with ``config``) on states ``x``
    [batch, tokens, dim] with ``mask`` [batch, tokens] marking real tokens."""
    from transformers.masking_utils import create_bidirectional_mask

    ext = create_bidirectional_mask(config=config, inputs_embeds=x, attention_mask=mask)
    for layer in layers:
        x = layer(x, ext)
        x = x[0] if isinstance(x, tuple) else x
    return x


def encoder_stack(hf_model):
    """(embeddings, layers) of a BERT-style encoder (``model.embeddings``, ``model.encoder.layer``)."""
    try:
        return hf_model.embeddings, hf_model.encoder.layer
    except AttributeError:
        raise ValueError(f"{type(hf_model).__name__} is not a BERT-style encoder (embeddings + encoder.layer): "
                         "frozen-layer caching supports those only") from None


def tokenized(tokenizer, *columns: Sequence[str], max_length: int, truncation: bool | str = True):
    """Texts (one column) or text pairs (two columns) tokenized once by a transformers ``tokenizer``, unpadded, as a
    :class:`biaslab.embed.tokens.Read` (token counts, ids, token types where the tokenizer gives them) for
    :func:`bottom_states` with :func:`biaslab.embed.tokens.read_inputs`."""
    from .embed.tokens import Read

    enc = tokenizer(*map(list, columns), truncation=truncation, max_length=max_length)
    ids = [np.asarray(i, np.int64) for i in enc["input_ids"]]
    types = [np.asarray(t, np.int64) for t in enc["token_type_ids"]] if "token_type_ids" in enc else None
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    return Read(lengths, lengths, ids, types)


def bottom_states(hf_model, inputs: Callable[[np.ndarray], dict], lengths: Sequence[int], *, n_frozen: int,
                  batch_size: int, desc: str | None = None) -> list[np.ndarray]:
    """Per item, the float32 [tokens, dim] output of the embeddings and the first ``n_frozen`` layers of
    ``hf_model`` (eval mode, no gradient), for ``len(lengths)`` items (texts, or query–passage pairs) of these token
    counts. Batched as every encoder of the library batches (:func:`biaslab.embed.batching.batch_plan`): equal token
    counts, no padding, each batch filled to a row-independent product, so an item's states are the same bits
    whichever items share the call (length-sorted padded batches let them move by an fp16 step with their
    batch-mates). ``inputs(idx)`` returns the model's input tensors (ids, attention mask, token types; other entries
    are ignored) for the items ``idx`` (an index array, an index possibly repeated), which all have one token count:
    unpadded (:func:`tokenized` and :func:`biaslab.embed.tokens.read_inputs`)."""
    import torch

    from .embed.batching import batch_plan, model_row_independent
    from .runtime import progress

    embeddings, layers = encoder_stack(hf_model)
    device = next(hf_model.parameters()).device
    was_training = hf_model.training
    hf_model.eval()
    lengths = np.asarray(lengths, np.int64)
    plan = batch_plan(lengths, batch_size, model_row_independent(hf_model)) if len(lengths) else []
    out: list[np.ndarray | None] = [None] * len(lengths)
    with torch.inference_mode():
        for idx, run in progress(plan, desc=desc or f"frozen layers 1-{n_frozen}", disable=len(plan) <= 1):
            enc = {k: v.to(device) for k, v in inputs(np.asarray(run)).items() if torch.is_tensor(v)}
            if tuple(enc["input_ids"].shape) != (len(run), lengths[idx[0]]):
                raise ValueError(f"bottom_states: inputs gave ids of shape {tuple(enc['input_ids'].shape)} for "
                                 f"{len(run)} items of {lengths[idx[0]]} tokens; pass each item's exact token count "
                                 "as lengths and unpadded inputs (frozen.tokenized + embed.tokens.read_inputs)")
            x = embeddings(input_ids=enc["input_ids"], token_type_ids=enc.get("token_type_ids"))
            x = run_layers(layers[:n_frozen], hf_model.config, x, enc["attention_mask"]).float().cpu().numpy()
            for j, i in enumerate(idx):
                out[i] = x[j]
    hf_model.train(was_training)
    return out


def pad_states(arrays: Sequence[np.ndarray]):
    """(x [batch, longest, dim] float32, mask [batch, longest]) torch tensors for per-text states, zero-padded."""
    import torch

    n = max(len(a) for a in arrays)
    x = np.zeros((len(arrays), n, arrays[0].shape[1]), np.float32)
    mask = np.zeros((len(arrays), n), np.int64)
    for i, a in enumerate(arrays):
        x[i, : len(a)], mask[i, : len(a)] = a, 1
    return torch.from_numpy(x), torch.from_numpy(mask)


class FrozenBottom:
    """The states after the first ``n_frozen`` layers of a sentence-transformers ``base`` model, computed once per
    text (tokenised exactly as the model's own ``encode`` does) and kept in memory, for every model whose
    embeddings and first ``n_frozen`` layers equal the base's bit for bit (:meth:`shares`)."""

    def __init__(self, base, n_frozen: int, *, batch_size: int):
        _, layers = encoder_stack(self._hf(base))
        if not 0 < n_frozen < len(layers):
            raise ValueError(f"n_frozen must be between 1 and {len(layers) - 1} for a {len(layers)}-layer encoder, "
                             f"got {n_frozen}")
        self.base, self.n_frozen, self.batch_size = base, int(n_frozen), batch_size
        self._reference = {k: v.detach().clone() for k, v in self._bottom(base).items()}
        self._states: dict[str, np.ndarray] = {}

    @staticmethod
    def _hf(st_model):
        return st_model[0].auto_model

    def _bottom(self, st_model) -> dict:
        embeddings, layers = encoder_stack(self._hf(st_model))
        out = {f"embeddings.{k}": v for k, v in embeddings.state_dict().items()}
        for i in range(self.n_frozen):
            out.update({f"layer.{i}.{k}": v for k, v in layers[i].state_dict().items()})
        return out

    def shares(self, st_model) -> bool:
        """True when ``st_model``'s embeddings and first ``n_frozen`` layers equal the base's exactly and it
        tokenises the same way (same maximum length, same tokenizer): the base's states are then its own."""
        return _reads_alike(st_model, self.base) and _equal_tensors(self._bottom(st_model), self._reference)

    def states(self, texts: Sequence[str], read=None) -> list[np.ndarray]:
        """The bottom's states of ``texts`` (computed for the ones not seen yet), in batches of equal token count
        filled to a row-independent product, as :class:`biaslab.embed.Encoder` batches: no padding, so the states and
        the embeddings built on them are the full forward pass's, bit for bit. The texts are tokenized once
        (:func:`biaslab.embed.tokens.read_tokens`: the batch plan and the ids the layers read) — or not at all when the
        caller passes ``read``, their ``read_tokens`` under a model that :meth:`shares` the bottom (so reads them
        as the base does) —, by the base's own preprocessing per batch only where that direct path does not
        apply."""
        from .embed.tokens import read_inputs, read_tokens

        texts = list(texts)
        first: dict[str, int] = {}
        for i, t in enumerate(texts):
            if t not in self._states:
                first.setdefault(t, i)
        if first:
            missing, pos = list(first), np.fromiter(first.values(), np.int64, len(first))
            if read is None:
                read, pos = read_tokens(self.base, missing), np.arange(len(missing))
            if read.ids is not None:
                def inputs(idx):
                    return read_inputs(read, pos[idx])
            else:
                def inputs(idx):
                    return self.base.preprocess([missing[i] for i in idx])
            computed = bottom_states(self._hf(self.base), inputs, read.lengths[pos], n_frozen=self.n_frozen,
                                     batch_size=self.batch_size, desc=f"shared frozen layers 1-{self.n_frozen}")
            self._states.update(zip(missing, computed, strict=True))
        return [self._states[t] for t in texts]

    def encode(self, st_model, texts: Sequence[str], *, normalize: bool, read=None) -> np.ndarray:
        """Sentence embeddings of ``texts`` under ``st_model`` (which must :meth:`share` the bottom): its top layers
        on the shared states, then its own pooling / normalisation modules. ``read``: ``read_tokens(st_model,
        texts)`` when the caller has it (:meth:`states`)."""
        import torch

        from .embed.batching import batch_plan, model_row_independent
        from .runtime import progress

        if not self.shares(st_model):
            raise ValueError("this model's embeddings or first layers differ from the base's: it cannot reuse the "
                             "shared frozen states (encode it in full)")
        hf = self._hf(st_model)
        _, layers = encoder_stack(hf)
        device = next(hf.parameters()).device
        states = self.states(texts, read)
        # equal token counts per batch, filled to a row-independent product: the top layers never pad, as the Encoder
        plan = batch_plan([len(s) for s in states], self.batch_size, model_row_independent(st_model))
        out = np.zeros((len(texts), st_model.get_embedding_dimension()), np.float32)
        was_training = st_model.training
        st_model.eval()
        with torch.inference_mode():
            for idx, run in progress(plan, desc=f"top layers {self.n_frozen + 1}-{len(layers)}", disable=len(plan) <= 1):
                x, mask = pad_states([states[i] for i in run])
                x, mask = x.to(device), mask.to(device)
                features = {"token_embeddings": run_layers(layers[self.n_frozen:], hf.config, x, mask),
                            "attention_mask": mask}
                for module in list(st_model)[1:]:
                    features = module(features)
                emb = features["sentence_embedding"][: len(idx)]
                if normalize:
                    emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                out[idx] = emb.float().cpu().numpy()
        st_model.train(was_training)
        return out


def _reads_alike(a, b) -> bool:
    """Whether two sentence-transformers models turn a text into the same ids: the same maximum length and the same
    tokenizer (:func:`biaslab.embed.tokens.tokenizer_spec`)."""
    from .embed.tokens import tokenizer_spec

    return (getattr(a, "max_seq_length", None) == getattr(b, "max_seq_length", None)
            and tokenizer_spec(getattr(a, "tokenizer", None)) == tokenizer_spec(getattr(b, "tokenizer", None)))


def _equal_tensors(mine: dict, ref: dict) -> bool:
    """Whether two state dicts hold the same names and equal tensors, bit for bit."""
    import torch

    return mine.keys() == ref.keys() and all(torch.equal(mine[k].to("cpu"), ref[k].to("cpu")) for k in mine)


def shared_bottom_encoder(bottom: FrozenBottom, model, *, batch_size: int, normalize: bool = True):
    """A :class:`biaslab.embed.Encoder` for ``model`` (cached, under the full model's fingerprint) whose cache misses
    run only ``model``'s top layers on the states of ``bottom``; refuses a model that does not :meth:`share
    <FrozenBottom.shares>` the bottom. Its layer-wise encodings (probing) run the full model."""
    from .embed import Encoder

    if not bottom.shares(model):
        raise ValueError(f"{getattr(model, 'name_or_path', 'this model')}: its embeddings or first {bottom.n_frozen} "
                         "layers differ from the shared frozen bottom's; encode it in full (biaslab.embed.Encoder)")

    class _TopEncoder(Encoder):
        def _encode(self, texts: list[str], show_progress: bool | None, read=None) -> np.ndarray:
            return bottom.encode(self.model, texts, normalize=self.normalize, read=read)  # read as the base reads

    return _TopEncoder(model, device=str(next(model.parameters()).device), batch_size=batch_size, normalize=normalize)


def shared_depth(base, model) -> int:
    """How many of ``base``'s transformer layers, from the bottom, ``model`` (a sentence-transformers model) has bit
    for bit, with the embeddings, the tokenizer and the maximum length — at most all but the last layer, the most a
    :class:`FrozenBottom` holds; 0 when any of the rest differs (or either is not a BERT-style encoder)."""
    def same(a, b) -> bool:
        return _equal_tensors(a.state_dict(), b.state_dict())

    if not _reads_alike(model, base):
        return 0
    try:
        (be, bl), (me, ml) = (encoder_stack(FrozenBottom._hf(m)) for m in (base, model))
    except (ValueError, AttributeError, TypeError, IndexError):
        return 0
    if len(bl) != len(ml) or not same(be, me):
        return 0
    n = 0
    while n < len(bl) - 1 and same(bl[n], ml[n]):
        n += 1
    return n


class Bottoms:
    """The frozen bottoms of one ``base`` model, one per depth, each made when a model first needs it: for a stage
    that encodes the same texts with many checkpoints of that base, some of which kept its bottom layers (partial
    fine-tuning, WiSE-FT merges of it). :meth:`encoder` gives such a checkpoint an encoder that runs only the layers
    above the deepest bottom it shares (the same vectors, bit for bit: :class:`FrozenBottom`); each text's bottom
    is computed once for all of them."""

    def __init__(self, base, *, batch_size: int):
        self.base, self.batch_size = base, batch_size
        self._by_depth: dict[int, FrozenBottom] = {}

    def encoder(self, model, *, normalize: bool = True):
        """:func:`shared_bottom_encoder` of ``model`` on the deepest bottom it shares with the base, or None when
        it shares none (:func:`shared_depth`)."""
        depth = shared_depth(self.base, model)
        if not depth:
            return None
        if depth not in self._by_depth:
            self._by_depth[depth] = FrozenBottom(self.base, depth, batch_size=self.batch_size)
        return shared_bottom_encoder(self._by_depth[depth], model, batch_size=self.batch_size, normalize=normalize)


def frozen_count(model_dir, trainable_layers: int | None, *, knob: str) -> int:
    """How many bottom layers of the encoder in ``model_dir`` stay frozen when only its top ``trainable_layers``
    train (None: 0, the whole model trains). ``knob`` names the parameter in the error (e.g.
    ``cscl.train.trainable_layers``)."""
    from transformers import AutoConfig

    n = AutoConfig.from_pretrained(str(model_dir)).num_hidden_layers
    if trainable_layers is None:
        return 0
    if not 0 < trainable_layers <= n:
        raise ValueError(f"{knob} = {trainable_layers}: the encoder has {n} layers, so trainable_layers must be "
                         f"between 1 and {n} (or null for all)")
    return n - int(trainable_layers)


def check_bank(bank: StateBank, path, model_dir, trainable_layers: int | None, *, knob: str, stage: str) -> StateBank:
    """``bank`` (loaded from ``path``) when its frozen depth is the one ``knob`` = ``trainable_layers`` asks for; else
    an error naming the stage to rerun (its states were saved under another setting)."""
    want = frozen_count(model_dir, trainable_layers, knob=knob)
    if bank.n_frozen != want:
        raise ValueError(f"{path} holds {bank.n_frozen} frozen layers, {knob} = {trainable_layers} asks for {want}: "
                         f"rerun the {stage} stage")
    return bank


def save_npz(path, **arrays: np.ndarray) -> None:
    """``np.savez`` written atomically (a temporary file, then renamed)."""
    from .atomic import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


class StateBank:
    """The frozen bottom's output for a set of texts: per text its [tokens, dim] hidden states (real tokens only),
    stored flat in float16 with offsets. ``n_frozen`` = 0 holds no states (full fine-tuning reads token ids)."""

    def __init__(self, n_frozen: int, texts: Sequence[str] = (), flat: np.ndarray | None = None,
                 offsets: np.ndarray | None = None):
        self.n_frozen, self.texts = int(n_frozen), list(texts)
        self.flat = np.zeros((0, 0), np.float16) if flat is None else flat
        self.offsets = np.zeros(1, np.int64) if offsets is None else offsets
        self.index = {t: i for i, t in enumerate(self.texts)}

    def __len__(self):
        return len(self.texts)

    def get(self, text: str) -> np.ndarray:
        try:
            i = self.index[text]
        except KeyError:
            raise KeyError(f"no frozen states for {text[:60]!r}: rerun the data stage that saved them (its states "
                           "file is older than the rows it serves)") from None
        return self.flat[self.offsets[i]:self.offsets[i + 1]]

    def merged(self, other: StateBank) -> StateBank:
        """This bank with ``other``'s texts that it lacks (same frozen depth)."""
        if other.n_frozen != self.n_frozen and len(other):
            raise ValueError(f"cannot merge state banks of {self.n_frozen} and {other.n_frozen} frozen layers")
        if not self.n_frozen:
            return self
        new = [i for i, t in enumerate(other.texts) if t not in self.index]
        if not new:
            return self
        parts = [other.flat[other.offsets[i]:other.offsets[i + 1]] for i in new]
        flat = np.concatenate([self.flat, *parts]) if len(self.flat) else np.concatenate(parts)
        offsets = np.concatenate([self.offsets, self.offsets[-1] + np.cumsum([len(x) for x in parts])])
        return StateBank(self.n_frozen, [*self.texts, *(other.texts[i] for i in new)], flat, offsets)

    def save(self, path) -> None:
        save_npz(path, n_frozen=self.n_frozen, texts=np.array(self.texts, dtype=object), flat=self.flat,
                 offsets=self.offsets)

    @classmethod
    def load(cls, path) -> StateBank:
        with np.load(path, allow_pickle=True) as z:
            return cls(int(z["n_frozen"]), z["texts"].tolist(), z["flat"], z["offsets"])
