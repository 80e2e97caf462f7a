import pytest
import yaml

from biaslab import config
from biaslab.config import ParamsError, load_params, validate

REPO_PARAMS = yaml.safe_load((__import__("conftest").REPO / "params.yaml").read_text())


def test_repo_params_are_valid():
    p = validate(REPO_PARAMS)
    assert p.ragfair.seat.e_max == 2.0
    assert p.get("ragfair.seat.n_samples") == REPO_PARAMS["ragfair"]["seat"]["n_samples"]


def test_unknown_key_names_the_dotted_key():
    raw = yaml.safe_load(yaml.safe_dump(REPO_PARAMS))
    raw["ragfair"]["seat"]["n_sample"] = 5
    with pytest.raises(ParamsError) as e:
        validate(raw)
    assert "ragfair.seat.n_sample" in str(e.value) and "unknown key" in str(e.value)


def test_unknown_section_is_rejected():
    with pytest.raises(ParamsError, match="nonsense: unknown key"):
        validate({**REPO_PARAMS, "nonsense": {}})


@pytest.mark.parametrize("key,value", [("n_samples", "abc"), ("n_samples", 1.5), ("e_max", "2"), ("tests", "weat1")])
def test_wrong_type_names_key_and_value(key, value):
    raw = yaml.safe_load(yaml.safe_dump(REPO_PARAMS))
    raw["ragfair"]["seat"][key] = value
    with pytest.raises(ParamsError) as e:
        validate(raw)
    assert f"ragfair.seat.{key}" in str(e.value) and repr(value) in str(e.value)


def test_bad_device_and_bounds():
    with pytest.raises(ParamsError, match="common.device"):
        validate({"common": {"device": "gpu"}})
    with pytest.raises(ParamsError, match="ragfair.seat.e_max"):
        validate({"ragfair": {"seat": {"e_max": 0}}})


def test_missing_and_broken_yaml(tmp_path):
    with pytest.raises(ParamsError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "params.yaml"
    bad.write_text("common: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)


def test_leaf_names_flatten_sections_and_scalars():
    p = validate(REPO_PARAMS)
    names = config.leaf_names(p, ["common.seed", "ragfair.seat"])
    assert names["seed"] == "common.seed" and names["n_samples"] == "ragfair.seat.n_samples"
    flat = config.flatten_for_notebook(p, ["common.seed", "ragfair.seat"])
    assert flat["tests"] == [] and flat["seed"] == 42


def test_leaf_name_collision_is_an_error():
    p = validate(REPO_PARAMS)
    with pytest.raises(ParamsError, match="comes from both"):
        config.leaf_names(p, ["models.encoder", "llm.model", "ragfair.seat"])


def test_notebook_params_revalidates_injected_values(project):
    ns = {"n_samples": 500, "seed": 7}
    p = config.notebook_params(ns, stage="ragfair_seat")
    assert p.ragfair.seat.n_samples == 500 and p.common.seed == 7
    with pytest.raises(ParamsError, match="ragfair.seat.n_samples"):
        config.notebook_params({"n_samples": "abc"}, stage="ragfair_seat")


def test_apply_overrides_merges_keeps_comments_and_validates(tmp_path):
    from conftest import REPO

    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    config.apply_overrides(REPO / "configs" / "paper-scale.yaml", target)
    p = load_params(target)
    assert p.common.device == "cuda" and p.models.allow_downloads is True and p.common.seed == 42
    assert "# Every knob of the pipeline" in target.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("ragfair:\n  seat:\n    n_samples: many\n")
    before = target.read_text()
    with pytest.raises(ParamsError, match="ragfair.seat.n_samples"):
        config.apply_overrides(bad, target)
    assert target.read_text() == before


def test_apply_overrides_keeps_float_spelling(tmp_path):
    from conftest import REPO

    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    over = tmp_path / "over.yaml"
    over.write_text("intersect:\n  baselines:\n    learning_rate: 3.0e-5\n")
    config.apply_overrides(over, target)
    assert load_params(target).intersect.baselines.learning_rate == 3.0e-5
    assert "learning_rate: 3.0e-5" in target.read_text()


def test_ragfair_checkpoints_must_name_trained_runs():
    from conftest import REPO

    raw = config.read_yaml(REPO / "params.yaml")
    raw["ragfair"]["evaluate"]["checkpoints"].append({"name": "x", "run": "nope", "mask": False})
    with pytest.raises(ParamsError, match=r"runs \['nope'\] that are not in ragfair.train.runs") as err:
        config.validate(raw)
    assert "got {" not in str(err.value)


def test_ragcontrol_readers_are_checked_and_build_their_own_endpoint(monkeypatch):
    from biaslab.ragcontrol import reader

    from conftest import REPO

    raw = config.read_yaml(REPO / "params.yaml")
    rc = raw["ragcontrol"]
    rc["readers"]["api"] = {"engine": "openai", "name": "served-model", "base_url": "http://localhost:9/v1",
                            "gender_mode": "generate", "politics_mode": "generate"}
    p = config.validate(raw)
    monkeypatch.delenv(p.llm.openai.api_key_env, raising=False)
    llm = reader.generator(p.ragcontrol.readers["api"], p.llm.openai)  # no request is made here
    assert (llm.inner.model, llm.inner.base_url) == ("served-model", "http://localhost:9/v1")
    for bad, match in (({"engine": "openai", "name": "m"}, "no option likelihoods"),
                       ({"name": "m", "base_url": "http://x/v1"}, "base_url is for engine: openai")):
        raw2 = config.read_yaml(REPO / "params.yaml")
        raw2["ragcontrol"]["readers"]["x"] = bad
        with pytest.raises(ParamsError, match=match):
            config.validate(raw2)
    raw3 = config.read_yaml(REPO / "params.yaml")
    raw3["ragcontrol"]["readers"] = {"a/b": {}}
    with pytest.raises(ParamsError, match="reader keys name files and stages"):
        config.validate(raw3)
    raw3["ragcontrol"]["readers"] = {}
    with pytest.raises(ParamsError, match="ragcontrol.readers is empty"):
        config.validate(raw3)
