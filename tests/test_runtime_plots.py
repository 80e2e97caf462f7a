import random

import matplotlib
import numpy as np
import pytest

from biaslab.runtime import progress, progress_enabled, seed_everything, select_device

matplotlib.use("Agg")


def test_seed_everything_makes_all_generators_repeat():
    import torch

    seed_everything(123)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(123)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a


def test_select_device(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert select_device("auto") == "cpu" and select_device("cpu") == "cpu"
    with pytest.raises(RuntimeError, match="no CUDA device"):
        select_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert select_device("auto") == "cuda" and select_device("cuda:1") == "cuda:1"
    with pytest.raises(ValueError, match="unknown device"):
        select_device("tpu")


def test_progress_respects_tqdm_disable(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert not progress_enabled() and progress(range(3)).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert progress_enabled() and not progress(range(3)).disable
    assert progress(range(3), disable=True).disable


def test_save_figure_is_atomic_and_deterministic(tmp_path):
    import matplotlib.pyplot as plt

    from biaslab.plots import save_figure, set_style

    set_style()
    outs = []
    for name in ("a.png", "b.png"):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        outs.append(save_figure(fig, tmp_path / "figs" / name, caption="a caption").read_bytes())
        plt.close(fig)
    assert outs[0][:4] == b"\x89PNG" and outs[0] == outs[1]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["a.png", "b.png"]
