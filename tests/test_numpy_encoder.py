"""The NumPy BERT encoder and the saved reference index behind a warm ``biaslab detect``."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from biaslab import detect_cache
from biaslab.embed import Encoder
from biaslab.intersect import detect
from biaslab.numpy_encoder import NumpyBert, supported

from conftest import REPO, model_dir

TEXTS = ["The new library opens on Monday.", "Women from the village are too emotional to lead.",
         "Ünïcode — 東京, émigré", "word " * 400]  # the last one is cut at max_seq_length
AGG = {"method": "share", "threshold": 0.5, "top_m": 1, "weighted": False}


def reference(tmp_path, extra=""):
    ref = pd.DataFrame({"text": ["Women are bad drivers.", "Old people cannot use phones.", "The park is lovely." + extra],
                        "label": ["gender", "age", "unbiased"]})
    ref.to_parquet(tmp_path / "ref.parquet")
    return tmp_path / "ref.parquet"


def test_numpy_bert_gives_the_encoders_vectors():
    enc = Encoder(model_dir("minilm"), device="cpu", batch_size=8, cache=False)
    mine = NumpyBert(model_dir("minilm"), enc.model.max_seq_length).encode(TEXTS)
    assert mine.shape == (len(TEXTS), 384) and mine.dtype == np.float32
    np.testing.assert_allclose(mine, enc.encode(TEXTS), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-6)
    # truncation is the model's: a shorter max_seq_length changes the long text only
    short = NumpyBert(model_dir("minilm"), 16).encode(TEXTS)
    np.testing.assert_allclose(short[:3], mine[:3], atol=1e-6)
    assert np.abs(short[3] - mine[3]).max() > 1e-3


def test_only_the_bert_mean_pooling_family_is_claimed(tmp_path):
    assert supported(model_dir("minilm")) is None
    assert "not a sentence-transformers folder" in supported(tmp_path)
    folder = tmp_path / "m"
    shutil.copytree(model_dir("minilm"), folder)
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    assert supported(folder) == "pooling is not mean pooling"
    with pytest.raises(ValueError, match="mean pooling"):
        NumpyBert(folder, 128)


@pytest.mark.slow
def test_the_index_is_saved_by_model_and_corpus_and_a_warm_call_needs_no_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASLAB_CACHE_DIR", str(tmp_path / "cache"))
    ref = reference(tmp_path)
    val = pd.DataFrame({"paragraph_id": [0, 1], "val": [True, True]})
    paragraphs = pd.DataFrame({"paragraph_id": [0, 1], "text": ["Women should not drive cars.", "Old people are slow."]})
    val.to_parquet(tmp_path / "splits.parquet")
    paragraphs.to_parquet(tmp_path / "paragraphs.parquet")
    floor_from = (tmp_path / "splits.parquet", tmp_path / "paragraphs.parquet")
    kw = {"device": "cpu", "batch_size": 8, "floor_from": floor_from, "quantile": 0.0}
    cold, floor = detect_cache.detector(model_dir("minilm"), ref, **kw)
    assert isinstance(cold.encoder, Encoder) and len(list((tmp_path / "cache" / "detect").glob("*.npz"))) == 1
    plain = detect.Detector(Encoder(model_dir("minilm"), device="cpu", batch_size=8), pd.read_parquet(ref))
    assert floor == pytest.approx(detect.abstain_floor(plain, paragraphs["text"].tolist(), 0.0), abs=1e-6)
    warm, warm_floor = detect_cache.detector(model_dir("minilm"), ref, **kw)
    assert isinstance(warm.encoder, NumpyBert) and warm_floor == floor
    queries = ["She said women should never drive.", "The quarterly report lists the tax rates."]
    a, b = (d.detect(queries, k=1, min_similarity=floor, **AGG) for d in (cold, warm))
    assert [x.labels for x in a] == [x.labels for x in b] == [["gender"], ["unbiased"]]
    assert b[1].abstained and not b[0].abstained
    np.testing.assert_allclose([v for x in a for *_, v in x.evidence], [v for x in b for *_, v in x.evidence], atol=1e-5)
    # another corpus, or another floor quantile, is another entry; the old one is never read for it
    detect_cache.detector(model_dir("minilm"), reference(tmp_path, " Really."), **kw)
    detect_cache.detector(model_dir("minilm"), ref, **{**kw, "quantile": 0.5})
    assert len(list((tmp_path / "cache" / "detect").glob("*.npz"))) == 3
    # the command: the second call answers from the saved index without importing torch (or transformers)
    code = ("import sys; from biaslab import cli; rc = cli.main(['detect', '--model', 'minilm', '--reference', "
            f"{str(tmp_path / 'other.parquet')!r}, '--k', '1', '--json', 'Women drive badly.']); "
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH'); sys.exit(rc)")
    shutil.copy(ref, tmp_path / "other.parquet")
    env = {**os.environ, "BIASLAB_CACHE_DIR": str(tmp_path / "cache2")}
    outs = [subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    assert [o.returncode for o in outs] == [0, 0], outs[-1].stderr[-2000:]
    assert outs[0].stdout.rstrip().endswith("\nTORCH") and outs[1].stdout.rstrip().endswith("\nNO-TORCH")
    first, second = (json.loads(o.stdout[: o.stdout.rindex("]") + 1]) for o in outs)
    assert first[0]["labels"] == second[0]["labels"] == ["gender"]
    assert first[0]["evidence"][0]["similarity"] == pytest.approx(second[0]["evidence"][0]["similarity"], abs=2e-4)
