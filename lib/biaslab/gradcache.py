"""Gradient caching for large contrastive batches on small memory (Gao et al. 2021, "Scaling deep contrastive
learning batch size under memory limited setup" — the technique cscl §4.1 uses for its batch-size sweep).

A contrastive loss couples every example of a batch, so the batch cannot be split the ordinary way (gradient
accumulation changes the loss: each chunk would only see its own negatives). Gradient caching keeps the loss exact:

1. encode the batch chunk by chunk **without** a graph (memory of one chunk), keep the representations;
2. compute the loss on the full batch of representations and its gradient with respect to them (and to the
   parameters that act on representations only: heads, discriminators);
3. when the loss is back-propagated, re-encode each chunk **with** a graph and push the cached representation
   gradient through it (one chunk's activations alive at a time).

The random state (dropout) of each chunk's first pass is saved and restored for its second pass, so both passes
see the same masks (sentence-transformers' cached losses do the same with their ``RandContext``). The result is
the gradient of the unchunked loss, up to floating-point summation order (tested in ``tests/test_gradcache.py``).

Written here rather than taken from sentence-transformers because its cached losses
(``CachedMultipleNegativesRankingLoss``, ``CachedGISTEmbedLoss``) each fix their own loss formula and input form
(sentence-transformers ``SentenceTransformer`` modules and text pairs); the cscl objectives are SupCon /
CS-InfoNCE with labels and groups, plus CE and adversarial terms on the same representations. The same
three-step schedule as theirs, for an arbitrary ``loss_fn``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def _rng_state():
    import torch

    return torch.get_rng_state(), (torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)


def _set_rng_state(state) -> None:
    import torch

    torch.set_rng_state(state[0])
    if state[1] is not None:  # pragma: no cover - no GPU here
        torch.cuda.set_rng_state_all(state[1])


def _chunks(view: Sequence, size: int):
    n = int(view[0].shape[0])
    for start in range(0, n, size):
        yield start, tuple(t[start:start + size] for t in view)


def grad_cached_loss(encode: Callable, views: Sequence[Sequence], loss_fn: Callable, *, chunk_size: int,
                     loss_params: Sequence = ()):
    """The loss ``loss_fn([encode(*view) for view in views])`` whose backward pass runs ``encode`` in chunks of
    ``chunk_size`` examples. ``views``: each a tuple of tensors with the batch on dimension 0 (e.g. token ids and
    attention mask; several views = several inputs per example, e.g. two augmentations). ``loss_fn`` takes the list
    of representation tensors and returns ``(loss, aux)``; ``loss_params`` are the parameters ``loss_fn`` uses
    directly (they receive their gradient when the loss is back-propagated, like the encoder's).

    Returns ``(loss, aux)``: ``loss`` a scalar that back-propagates (``loss.backward()``, or a scaled copy — the
    scale reaches every gradient) and ``aux`` detached. Call it only with gradients enabled (training)."""
    import torch

    if chunk_size < 1:
        raise ValueError(f"chunk_size = {chunk_size}: the number of examples encoded at a time must be >= 1")
    reps, states = [], []
    with torch.no_grad():
        for view in views:
            parts, view_states = [], []
            for _, chunk in _chunks(view, chunk_size):
                view_states.append(_rng_state())
                parts.append(encode(*chunk))
            reps.append(torch.cat(parts).detach().requires_grad_())
            states.append(view_states)
    params = [p for p in loss_params if p.requires_grad]
    with torch.enable_grad():
        loss, aux = loss_fn(reps)
        grads = torch.autograd.grad(loss, [*reps, *params], allow_unused=True)
    rep_grads, param_grads = grads[:len(reps)], grads[len(reps):]
    out = loss.detach().requires_grad_()

    def backward(scale):
        after = _rng_state()
        for p, g in zip(params, param_grads, strict=True):
            if g is not None:
                p.grad = g * scale if p.grad is None else p.grad + g * scale
        for view, view_states, rep_grad in zip(views, states, rep_grads, strict=True):
            for (start, chunk), state in zip(_chunks(view, chunk_size), view_states, strict=True):
                _set_rng_state(state)
                with torch.enable_grad():
                    r = encode(*chunk)
                    torch.autograd.backward(r, grad_tensors=rep_grad[start:start + r.shape[0]] * scale)
        _set_rng_state(after)

    out.register_hook(backward)
    detached = (tuple(a.detach() if torch.is_tensor(a) else a for a in aux) if isinstance(aux, tuple)
                else aux.detach() if torch.is_tensor(aux) else aux)
    return out, detached
