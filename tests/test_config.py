import pytest
import yaml

from biaslab import config, overrides
from biaslab.config import ParamsError, load_params, validate

from conftest import REPO

REPO_PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())


def fresh() -> dict:
    return yaml.safe_load(yaml.safe_dump(REPO_PARAMS))


def test_repo_params_are_valid():
    p = validate(REPO_PARAMS, "params.yaml")
    assert p.ragfair.seat.e_max == REPO_PARAMS["ragfair"]["seat"]["e_max"]
    assert p.get("ragfair.seat.n_samples") == REPO_PARAMS["ragfair"]["seat"]["n_samples"]


def test_paper_scale_and_grid_configs_validate_when_merged():
    raw = fresh()
    overrides.merge(raw, config.read_yaml(REPO / "configs" / "paper-scale.yaml"))
    validate(raw, "paper-scale")
    overrides.merge(raw, config.read_yaml(REPO / "configs" / "ragfair-app61-grid.yaml"))
    assert len(validate(raw, "grid").ragfair.train.runs) > 200


def test_the_gpu_profile_validates_and_keeps_the_offline_models():
    from biaslab import models

    def names(node) -> set[str]:
        if isinstance(node, dict):
            return set().union(*map(names, node.values())) if node else set()
        if isinstance(node, list):
            return set().union(*map(names, node)) if node else set()
        return {node} if isinstance(node, str) and node in models.REGISTRY else set()

    raw = fresh()
    overrides.merge(raw, config.read_yaml(REPO / "configs" / "gpu.yaml"))
    p = validate(raw, "gpu")
    assert p.common.device == "cuda" and len(p.intersect.train.runs) == 24 and p.fairrank.data.max_pairs == 3000
    # five times the CPU default's pairs at its rate put fairrank's base ranker below BM25 (docs/fairrank.md)
    assert p.fairrank.train.learning_rate < validate(fresh(), "cpu").fairrank.train.learning_rate
    per_task = len(p.ragcontrol.train.runs) * len(p.ragcontrol.train.merges) / len(p.ragcontrol.tasks)
    assert per_task == 20  # embedders per task: freeze_layers 0-4 x 4 WiSE-FT merges
    assert names(raw) == names(fresh())  # no model that does not ship offline


def test_the_ci_device_check_runs_the_gpu_profiles_paths_at_tiny_sizes(tmp_path):
    """.ci/run's CPU device check: configs/gpu.yaml merged, then cut to the tiny pipeline's sizes: valid, on the
    device that is there, with the profile's fine-tuning (cscl's every layer, fairrank's one) and the tiny grids."""
    from tiny_pipeline import write_tiny_params

    write_tiny_params(REPO / "params.yaml", tmp_path / "tiny.yaml", REPO / "configs" / "gpu.yaml")
    p = validate(yaml.safe_load((tmp_path / "tiny.yaml").read_text()), "tiny gpu")
    assert p.common.device == "auto" and p.common.batch_size == 256
    assert p.cscl.train.trainable_layers is None and p.fairrank.train.trainable_layers == 1
    assert p.cscl.seeds == [0, 1] and p.intersect.train.runs == ["indic-srk4-C1"] and p.fairrank.data.max_pairs == 24


def test_unknown_key_names_the_dotted_key():
    raw = fresh()
    raw["ragfair"]["seat"]["n_sample"] = 5
    with pytest.raises(ParamsError) as e:
        validate(raw, "x")
    assert "ragfair.seat.n_sample" in str(e.value) and "unknown key" in str(e.value)


def test_a_missing_key_is_an_error_not_a_hidden_default():
    raw = fresh()
    del raw["ragfair"]["seat"]["n_samples"]
    with pytest.raises(ParamsError, match=r"ragfair.seat.n_samples: missing — every knob is written in params.yaml"):
        validate(raw, "x")


def test_unknown_section_is_rejected():
    with pytest.raises(ParamsError, match="nonsense: unknown section"):
        validate({**REPO_PARAMS, "nonsense": {}}, "x")


@pytest.mark.parametrize("key,value", [("n_samples", "abc"), ("n_samples", 1.5), ("e_max", "2"), ("tests", "weat1")])
def test_wrong_type_names_key_and_value(key, value):
    raw = fresh()
    raw["ragfair"]["seat"][key] = value
    with pytest.raises(ParamsError) as e:
        validate(raw, "x")
    assert f"ragfair.seat.{key}" in str(e.value) and repr(value) in str(e.value)


def test_bad_device_and_bounds():
    raw = fresh()
    raw["common"]["device"] = "gpu"
    with pytest.raises(ParamsError, match="common.device"):
        validate(raw, "x")
    raw = fresh()
    raw["ragfair"]["seat"]["e_max"] = 0
    with pytest.raises(ParamsError, match="ragfair.seat.e_max"):
        validate(raw, "x")


def test_only_the_sections_a_stage_reads_are_validated():
    raw = fresh()
    raw["ragfair"]["seat"]["n_samples"] = "broken"
    p = validate(raw, "x", sections=["common", "intersect"])  # an intersect stage is not stopped by ragfair's typo
    assert p.intersect.train.runs == REPO_PARAMS["intersect"]["train"]["runs"]


def test_missing_and_broken_yaml(tmp_path):
    with pytest.raises(ParamsError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "params.yaml"
    bad.write_text("common: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)


def test_leaf_names_flatten_sections_and_scalars():
    names = config.leaf_names(["common.seed", "ragfair.seat", "intersect.paragraphs.corpora.indic"])
    assert names["seed"] == "common.seed" and names["n_samples"] == "ragfair.seat.n_samples"
    assert names["n_biased"] == "intersect.paragraphs.corpora.indic.n_biased"


def test_leaf_name_collision_is_an_error():
    with pytest.raises(ParamsError, match="comes from both"):
        config.leaf_names(["models.encoder", "llm.model", "ragfair.seat"])


def test_stage_params_take_params_yaml_and_overrides(project, monkeypatch):
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    p = config.stage_params({"n_samples": ..., "seed": 7}, "ragfair_seat")
    assert p.ragfair.seat.n_samples == REPO_PARAMS["ragfair"]["seat"]["n_samples"]  # `...` = params.yaml
    assert p.common.seed == 7  # an override
    p = config.stage_params({"n_samples": 500}, "ragfair_seat")
    assert p.ragfair.seat.n_samples == 500 and p.common.seed == REPO_PARAMS["common"]["seed"]
    with pytest.raises(ParamsError, match="ragfair.seat.n_samples"):
        config.stage_params({"n_samples": "abc"}, "ragfair_seat")


def test_a_nullable_knob_can_be_overridden_to_null(project):
    member = "intersect_train@" + REPO_PARAMS["intersect"]["train"]["runs"][0]
    assert config.stage_params({"max_triplets": None}, member).intersect.train.max_triplets is None
    assert config.stage_params({}, member).intersect.train.max_triplets == REPO_PARAMS["intersect"]["train"][
        "max_triplets"]


def test_a_stage_cannot_read_keys_it_does_not_list(project):
    p = config.stage_params({}, "ragfair_seat")
    assert p.ragfair.seat.alpha == REPO_PARAMS["ragfair"]["seat"]["alpha"]
    assert p.models.local_dirs == {}  # ragfair_seat lists models (model resolution)
    with pytest.raises(ParamsError, match=r"reads ragfair.probing, which its params in dvc.yaml do not list"):
        _ = p.ragfair.probing.tau
    with pytest.raises(ParamsError, match="reads intersect"):
        _ = p.intersect
    with pytest.raises(AttributeError, match="read-only"):
        p.common = None
    partial = config.stage_params({}, "ragfair_diagnosis").ragfair.seat  # lists three keys of ragfair.seat only
    assert partial.e_max == REPO_PARAMS["ragfair"]["seat"]["e_max"]
    with pytest.raises(ParamsError, match="ragfair.seat.tests"):
        _ = partial.tests


def test_stage_params_warn_when_the_kernel_hash_seed_differs(project, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "12345")
    with pytest.warns(UserWarning, match="PYTHONHASHSEED is 12345"):
        config.stage_params({}, "ragfair_seat")
    monkeypatch.setenv("PYTHONHASHSEED", str(REPO_PARAMS["common"]["seed"]))
    config.stage_params({}, "ragfair_seat")  # no warning


def test_apply_overrides_merges_keeps_comments_and_validates(tmp_path):
    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    overrides.apply_overrides(REPO / "configs" / "paper-scale.yaml", target)
    p = load_params(target)
    assert p.common.device == "cuda" and p.models.allow_downloads is True
    assert p.common.seed == REPO_PARAMS["common"]["seed"]
    assert "# Every knob of the pipeline" in target.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("ragfair:\n  seat:\n    n_samples: many\n")
    before = target.read_text()
    with pytest.raises(ParamsError, match="ragfair.seat.n_samples"):
        overrides.apply_overrides(bad, target)
    assert target.read_text() == before


def test_apply_overrides_keeps_float_spelling(tmp_path):
    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    over = tmp_path / "over.yaml"
    over.write_text("intersect:\n  baselines:\n    learning_rate: 3.0e-5\n")
    overrides.apply_overrides(over, target)
    assert load_params(target).intersect.baselines.learning_rate == 3.0e-5
    assert "learning_rate: 3.0e-5" in target.read_text()


def test_ragfair_checkpoints_must_name_trained_runs():
    raw = fresh()
    raw["ragfair"]["evaluate"]["checkpoints"].append({"name": "x", "run": "nope", "mask": False})
    with pytest.raises(ParamsError, match=r"runs \['nope'\] that are not in ragfair.train.runs") as err:
        config.validate(raw, "x")
    assert "got {" not in str(err.value)


def test_ragcontrol_readers_are_checked_and_build_their_own_endpoint(monkeypatch):
    from biaslab.ragcontrol import reader

    raw = fresh()
    rc = raw["ragcontrol"]
    rc["readers"]["api"] = {"engine": "openai", "name": "served-model", "base_url": "http://localhost:9/v1",
                            "gender_mode": "generate", "politics_mode": "generate"}
    p = config.validate(raw, "x")
    monkeypatch.delenv(p.llm.openai.api_key_env, raising=False)
    llm = reader.generator(p.ragcontrol.readers["api"], p.llm.openai, device="cpu")  # no request is made here
    assert (llm.inner.model, llm.inner.base_url) == ("served-model", "http://localhost:9/v1")
    for bad, match in (({"engine": "openai", "name": "m", "gender_mode": "likelihood", "politics_mode": "claim"},
                        "no option likelihoods"),
                       ({"engine": "transformers", "name": "m", "base_url": "http://x/v1", "gender_mode": "likelihood",
                         "politics_mode": "claim"}, "base_url is for engine: openai")):
        raw2 = fresh()
        raw2["ragcontrol"]["readers"]["x"] = bad
        with pytest.raises(ParamsError, match=match):
            config.validate(raw2, "x")
    raw3 = fresh()
    raw3["ragcontrol"]["readers"] = {"a/b": rc["readers"]["smollm2"]}
    with pytest.raises(ParamsError, match="reader keys name files and stages"):
        config.validate(raw3, "x")
    raw3["ragcontrol"]["readers"] = {}
    with pytest.raises(ParamsError, match="ragcontrol.readers is empty"):
        config.validate(raw3, "x")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda f: f["rankers"]["penalty_relevant"].update(lambdas=[1.0, -0.5]),
     r"fairrank\.rankers\.penalty_relevant\.lambdas.*\[-0\.5\] are negative"),
    (lambda f: f["rankers"]["base"].update(lambdas=[1.0]), r"mode none has no regulariser"),
    (lambda f: f["eval"].update(baselines_figure=["nope"]), r"nope"),
    (lambda f: f["eval"].update(cutoffs=[10, 500]), r"rerank_depth"),
])
def test_fairrank_bad_params_name_the_key(edit, message):
    raw = fresh()
    edit(raw["fairrank"])
    with pytest.raises(ParamsError, match=message):
        config.validate(raw, "params.yaml")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["sensitivity"].update(task="madlibs_race"), r"cscl\.sensitivity\.task 'madlibs_race' is not in"),
    (lambda c: c["sensitivity"].update(method="one_stage"), r"must name a method of mode contrastive"),
    (lambda c: c["sensitivity"].update(lambdas=[0.0, 3.0]), r"cscl\.sensitivity\.lambdas \[0\.0, 3\.0\]"),
    (lambda c: c["sensitivity"].update(seed_subset=[99]), r"subset of cscl\.seeds"),
    (lambda c: c["sensitivity"].update(temperatures=[0.0]), r"every τ must be > 0"),
    (lambda c: c["train"].update(grad_cache_chunk=-1), r"grad_cache_chunk"),
    (lambda c: c["sensitivity"].update(augmentations=["eda"]), r"lists cscl\.augment\.strategy \('eda'\)"),
    (lambda c: c["sensitivity"].update(augmentations=["back_translation"]), r"augmentations"),
    (lambda c: c["augment"].update(strategy="backtranslate"), r"strategy"),
    (lambda c: c["augment"].update(top_k=0), r"top_k"),
])
def test_cscl_bad_params_name_the_key(edit, message):
    raw = fresh()
    edit(raw["cscl"])
    with pytest.raises(ParamsError, match=message):
        config.validate(raw, "params.yaml")
