"""The reproduction report: built from claims tables and artefact files only, every file it references exists, every
number in it is read from an input, a missing output fails naming it, and the scale column follows params."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from biaslab import config, render, report

REPO = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def _fixture(tmp_path: Path, our_value: float = 0.4217) -> Path:
    reports = tmp_path / "reports"
    (reports / "alpha/results").mkdir(parents=True)
    (reports / "paper_values").mkdir()
    pd.DataFrame({
        "claim": ["A lowers bias", "B beats C", "D is flat"],
        "paper_section": ["§4.1, Fig. 2", "§4.2, Table 3", "§5"],
        "paper_value": ["−61.5%", "yes", "flat"],
        "our_value": [our_value, -0.0731, 0.0058],
        "ci_low": [0.3111, -0.1393, -0.0214],
        "ci_high": [0.5329, -0.0092, 0.0377],
        "verdict": ["contradicted", "reproduced", "underpowered"],
        "rule": ["effect below 0", "effect below 0", "no change"],
        "kind": "claim", "paper_effect": None, "n": 10, "interval": "Student t over 10 units", "p_value": None,
        "p_adjusted": None, "mde": None, "n_needed": None,
    }).to_csv(reports / "alpha/results/claims.csv", index=False)
    (reports / "alpha/results/fig2_x.png").write_bytes(PNG)
    (reports / "alpha/results/fig2_y.png").write_bytes(PNG)
    pd.DataFrame({"setting": ["s", "t", "u"], "score": [0.8765, 0.5, 0.25], "paper_score": [0.9, 0.75, None]}).to_csv(
        reports / "alpha/results/table3.csv", index=False)
    (reports / "paper_values/alpha.yaml").write_text(yaml.safe_dump({
        "paper": "alpha", "title": "Alpha paper", "text": "alpha.md",
        "artefacts": [
            {"id": "Figure 2", "ref": "§4.1", "shows": "bias against lambda", "ours": ["alpha/results/fig2_*.png"],
             "match": ["Fig. 2"]},
            {"id": "Table 3", "ref": "§4.2", "shows": "methods", "ours": ["alpha/results/table3.csv"],
             "match": ["Table 3"], "compare": [{"what": "score", "file": "alpha/results/table3.csv", "key": ["setting"],
                                               "ours": "score", "paper": "paper_score", "tolerance": 0.05}]},
            {"id": "Table 9", "ref": "App.", "shows": "other backbone", "ours": [],
             "not_reproduced": "the backbone is not available offline"},
        ]}, allow_unicode=True), encoding="utf-8")
    return reports


PARAMS = {"alpha": {"train": {"epochs": 3, "lr": 1e-4}, "seeds": [0, 1]}}
PAPER_SCALE = {"alpha": {"train": {"epochs": 10}, "seeds": [0, 1]}}


def test_the_report_reads_every_number_from_its_inputs(tmp_path):
    reports = _fixture(tmp_path)
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    assert "1 reproduced, 1 contradicted, 1 underpowered" in md
    assert "CPU default (1 of 2 paper-scale settings differ: alpha.train.epochs)" in md
    assert "| Figure 2 | §4.1 | bias against lambda | [fig2_x.png](alpha/results/fig2_x.png), [fig2_y.png]" in md
    assert "| regenerated; claims: 1 contradicted |" in md
    assert "| Table 9 | App. | other backbone | – | not regenerated |" in md
    assert "- **alpha Table 9**: (other backbone) the backbone is not available offline" in md
    assert "- **alpha, contradicted**: A lowers bias (§4.1, Fig. 2; paper −61.5%, ours 0.422 [0.311, 0.533])" in md
    assert "<img src='alpha/results/fig2_x.png'" in page and "0.8765" in page  # CSV preview
    assert "class='contradicted'" in page
    # no number is typed: each one in the Markdown is an input value (as printed), a count or a section number
    inputs = {"0.422", "0.311", "0.533", "-0.0731", "-0.139", "-0.0092", "0.0058", "-0.0214", "0.0377", "-61.5",
              "4.1", "4.2", "5", "2", "3", "9", "1", "0", "95",
              "0.9", "0.876", "0.75", "0.5", "0.05"}  # Table 3's paper and our values, the tolerance of its yaml
    computed = {"-0.0235", "-0.25", "0.137"}  # ours − paper per row, and the median |difference|
    assert "**Table 3, score** ([table3.csv](alpha/results/table3.csv)): 1 of 2 within ±0.05 of the paper; median " \
           "|difference| 0.137." in md  # row u has no paper value: not compared
    assert "| s | 0.9 | 0.876 | -0.0235 |" in md and "| u |" not in md
    assert "</a>): 1 of 2 within ±0.05 of the paper" in page
    numbers = set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", md.replace("−", "-")))
    assert numbers <= inputs | computed, numbers - inputs - computed
    # and a changed output changes the report
    assert "0.977 [0.311" in render.build(_fixture(tmp_path / "b", our_value=0.9766), ["alpha"], PARAMS, PAPER_SCALE)[0]


def test_each_figure_once_linked_to_its_notebook_and_identical_outputs_said_so(tmp_path):
    reports = _fixture(tmp_path)
    values = yaml.safe_load((reports / "paper_values/alpha.yaml").read_text(encoding="utf-8"))
    values["artefacts"].append({"id": "Figure 5", "ref": "§5", "shows": "the same figure again",
                                "ours": ["alpha/results/fig2_x.png"]})
    (reports / "paper_values/alpha.yaml").write_text(yaml.safe_dump(values, allow_unicode=True), encoding="utf-8")
    claims = pd.read_csv(reports / "alpha/results/claims.csv")
    claims.loc[2, ["our_value", "ci_low", "ci_high"]] = 0.0
    claims.to_csv(reports / "alpha/results/claims.csv", index=False)
    made_by = {"alpha/results": "alpha/03_analysis.ipynb", "alpha/results/table3.csv": "alpha/02_tables.ipynb"}
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE, made_by)
    assert page.count("<img src='alpha/results/fig2_x.png'") == 1 and len(re.findall(r"!\[[^\]]*\]\(alpha/results/fig2_x.png\)", md)) == 1
    assert "shown above, under <a href='#alpha-Figure-2'>" in page and "id='alpha-Figure-2'" in page
    # the longest output path wins: the table's own stage, the folder's for the figures and the claims
    assert "alpha/results/table3.csv</a> · made by <a href='alpha/02_tables.ipynb'>" in page
    assert "fig2_y.png</a> · made by <a href='alpha/03_analysis.ipynb'>" in page
    assert "made by [alpha/03_analysis.ipynb](alpha/03_analysis.ipynb)" in md
    assert "no change (identical outputs): 0 [0, 0]" in page and "no change (identical outputs)" in md
    assert page.count("<svg class='ci'") == 3 and "<div class='scroll'>" in page
    assert "paper −61.5" in page or "paper -61.5" in page  # the paper's value is marked where it is a number


def test_competence_table_and_the_glance_list_come_first(tmp_path):
    """A paper with a competence.csv shows it at the top of its section; the top of the report groups each paper's
    claims (hold / ruled out / contradicted / need more data, with the units they need / untestable)."""
    reports = _fixture(tmp_path)
    claims = pd.read_csv(reports / "alpha/results/claims.csv")
    claims["verdict"] = ["ruled_out", "reproduced_smaller", "underpowered"]
    claims["kind"] = "claim"
    claims["n"] = 30
    claims["n_needed"] = [float("nan"), float("nan"), 120]
    claims["interval"] = "Student t over 30 units"
    claims.to_csv(reports / "alpha/results/claims.csv", index=False)
    pd.DataFrame([{"check": "base beats BM25", "measure": "MRR@10: base − BM25", "ours": 0.11, "ci_low": 0.02,
                   "ci_high": 0.2, "floor": 0.0, "passed": True}]).to_csv(reports / "alpha/results/competence.csv",
                                                                          index=False)
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    assert "- **alpha**: hold: 1; ruled out: 1 (A lowers bias); need more data: 1 (D is flat (needs n ≈ 120, we " \
           "have 30))" in md
    assert md.index("### Competence of the baselines") < md.index("### Tables and figures")
    assert "| base beats BM25 | MRR@10: base − BM25 | 0.11 | [0.02, 0.2] | 0 | passed |" in md
    assert "<h3>Competence of the baselines</h3>" in page and "class='ruled_out'" in page


def test_a_missing_output_or_bad_artefact_file_fails_naming_it(tmp_path):
    reports = _fixture(tmp_path)
    (reports / "alpha/results/table3.csv").unlink()
    with pytest.raises(FileNotFoundError, match=r"table3\.csv: listed for alpha Table 3 in paper_values/alpha\.yaml"):
        render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    with pytest.raises(FileNotFoundError, match=r"beta\.yaml: no artefact file"):
        render.build(reports, ["beta"], PARAMS, PAPER_SCALE)
    (reports / "paper_values/alpha.yaml").write_text("paper: alpha\ntitle: t\ntext: x\nartefacts: [{id: 1}]\n")
    with pytest.raises(ValueError, match=r"(?s)alpha\.yaml: .*artefacts\.0\.ref"):
        render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    reports = _fixture(tmp_path / "c")
    pd.DataFrame({"setting": ["s"], "score": [0.5]}).to_csv(reports / "alpha/results/table3.csv", index=False)
    with pytest.raises(ValueError, match=r"table3\.csv: no column \['paper_score'\] for the comparison 'score'"):
        render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    (reports / "alpha/results/claims.csv").write_text("claim,verdict\nx,reproduced\n")
    (reports / "paper_values/alpha.yaml").write_text("paper: alpha\ntitle: t\ntext: x\nartefacts: []\n")
    with pytest.raises(ValueError, match=r"claims\.csv: missing columns"):
        render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)


def test_scale_is_paper_scale_only_when_every_setting_matches():
    assert report.scale({"alpha": {"train": {"epochs": 10, "lr": 1}, "seeds": [0, 1]}}, PAPER_SCALE,
                        "alpha")["label"] == "paper scale"
    s = report.scale(PARAMS, PAPER_SCALE, "alpha")
    assert s["label"] == "CPU default" and s["differ"] == ["alpha.train.epochs"] and s["paper_scale_keys"] == 2


def test_the_repository_report_references_only_existing_files():
    """The committed outputs of every paper in report.papers: each artefact file exists (a glob matches at least
    one), and every link and image of both pages resolves inside reports/."""
    p = config.load_params(REPO / "params.yaml", sections=["report"])
    raw = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    scale = yaml.safe_load((REPO / "configs/paper-scale.yaml").read_text(encoding="utf-8"))
    md, page = render.build(REPO / "reports", p.report.papers, raw, scale)
    links = re.findall(r"\]\(([^)#]+)\)", md) + re.findall(r"(?:src|href)='([^'#]+)'", page)
    assert len(links) > 40
    missing = [x for x in links if not (REPO / "reports" / x).is_file()]
    assert not missing, missing
    for paper in p.report.papers:
        assert f"## {paper}" in md and f"<h2 id='{paper}'>" in page


def test_typed_paper_values_are_matched_to_filtered_rows_and_judged_by_sign(tmp_path):
    reports = _fixture(tmp_path)
    pd.DataFrame({"cutoff": [10, 10, 20], "ranker": ["a|x", "b", "a|x"], "pct": [-4.0, 3.0, 9.0]}).to_csv(
        reports / "alpha/results/changes.csv", index=False)
    spec = yaml.safe_load((reports / "paper_values/alpha.yaml").read_text(encoding="utf-8"))
    spec["artefacts"].append({"id": "Table 5", "ref": "§6", "shows": "changes", "ours": ["alpha/results/changes.csv"],
                              "compare": [{"what": "% change", "file": "alpha/results/changes.csv",
                                           "where": {"cutoff": "10"}, "key": ["ranker"], "ours": "pct",
                                           "rule": "same_sign", "ref": "Table 5",
                                           "values": [{"key": ["a|x"], "value": -7.5}, {"key": ["b"], "value": -1.5}]}]})
    (reports / "paper_values/alpha.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    assert "the paper's values from Table 5): 1 of 2 with the paper's sign" in md
    assert "the paper&#x27;s values from Table 5): 1 of 2 with the paper" in page
    assert "| a\\|x | -7.5 | -4 | 3.5 |" in md and "| b | -1.5 | 3 | 4.5 |" in md  # cut-off 20's row is filtered out
    spec["artefacts"][-1]["compare"][0]["values"].append({"key": ["zzz"], "value": 1.0})
    (reports / "paper_values/alpha.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    md = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)[0]  # a setting the run lacks is named, not fatal
    assert "1 of 2 with the paper's sign (point estimates; the claims test the intervals); 1 of the paper's rows " \
           "are not in this run (zzz)" in md
    spec["artefacts"][-1]["compare"][0].pop("ref")
    (reports / "paper_values/alpha.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match="typed values need the ref"):
        render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)


def test_the_medium_gpu_profiles_claims_sit_under_the_papers_own_with_the_verdicts_that_changed(tmp_path):
    """Without a GPU run the report says no paper has claims at that scale; with reports/gpu/<paper>/claims.csv it
    shows their counts under the paper's claims, and each claim whose verdict differs between the two scales, with
    both values, read from the two tables."""
    reports = _fixture(tmp_path)
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    assert "No paper has claims at the medium GPU profile" in md and "No paper has claims" in page
    assert "At the medium GPU profile" not in md
    gpu = pd.read_csv(reports / "alpha/results/claims.csv")
    gpu.loc[2, ["our_value", "ci_low", "ci_high", "verdict"]] = [0.0312, 0.0107, 0.0518, "contradicted"]
    gpu.loc[3] = gpu.loc[1]
    gpu.loc[3, "claim"] = "E holds only at scale"
    (reports / "gpu/alpha").mkdir(parents=True)
    gpu.drop(index=1).to_csv(reports / "gpu/alpha/claims.csv", index=False)
    md, page = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)
    assert "At the medium GPU profile (configs/gpu.yaml;" in md and ": alpha, each under its own claims" in md
    assert "[gpu/alpha/claims.csv](gpu/alpha/claims.csv). Claims: 1 reproduced, 2 contradicted. 1 of the 2 claims " \
           "judged at both scales change verdict; 1 only at the CPU default, 1 only at the GPU profile:" in md
    assert "| D is flat | 0.0058 [-0.0214, 0.0377] | underpowered | 0.0312 [0.0107, 0.0518] | contradicted |" in md
    # a check that stops holding at scale (the method no longer does what the claims about it presuppose) is listed
    base = pd.read_csv(reports / "alpha/results/claims.csv")
    check = base.loc[[0]].assign(claim="the penalty acts", kind="check", verdict="reproduced")
    pd.concat([base, check]).to_csv(reports / "alpha/results/claims.csv", index=False)
    pd.concat([gpu.drop(index=1), check.assign(verdict="underpowered")]).to_csv(reports / "gpu/alpha/claims.csv",
                                                                                  index=False)
    md = render.build(reports, ["alpha"], PARAMS, PAPER_SCALE)[0]
    assert "1 of the 2 claims judged at both scales change verdict; 1 only at the CPU default, 1 only at the GPU " \
           "profile; so do 1 of the 1 checks:" in md
    assert "| the penalty acts (check) | " in md and "| reproduced | " in md.split("the penalty acts (check)")[1]
    assert md.index("### Claims") < md.index("### At the medium GPU profile")
    assert "A lowers bias | " not in md.split("### At the medium GPU profile")[1]  # same verdict: not listed
    assert "<h3>At the medium GPU profile</h3><p><a href='gpu/alpha/claims.csv'>" in page and "<td>0.0312 [0.0107" in page


def test_claims_across_scales_pair_by_text_and_refuse_a_repeated_claim():
    def t(rows):
        return pd.DataFrame([{"claim": c, "paper_section": "§1", "verdict": v, "our_value": x, "ci_low": x - 1,
                              "ci_high": x + 1, "kind": k} for c, v, x, k in rows])

    base = t([("a", "reproduced", 1.0, "claim"), ("b", "underpowered", 2.0, "claim"), ("chk", "reproduced", 0, "check")])
    other = t([("c", "ruled_out", 3.0, "claim"), ("b", "contradicted", 4.0, "claim"), ("a", "reproduced", 5.0, "claim")])
    out = report.across_scales(base, other)
    assert out["claim"].tolist() == ["a", "b", "chk", "c"]  # base's order, then the other's own
    assert out["kind"].tolist() == ["claim", "claim", "check", "claim"]
    assert out["changed"].tolist() == [False, True, False, False]
    assert out.loc[1, ["our_value_base", "our_value_other"]].tolist() == [2.0, 4.0]
    assert pd.isna(out.loc[3, "verdict_base"]) and out.loc[3, "paper_section"] == "§1"
    with_check = pd.concat([other, t([("chk", "underpowered", 0.5, "check"), ("note", "n/a", 0, "info")])])
    out = report.across_scales(base, with_check)  # a check is paired like a claim; other kinds are left out
    assert out["claim"].tolist() == ["a", "b", "chk", "c"] and out["changed"].tolist() == [False, True, True, False]
    with pytest.raises(ValueError, match=r"the other claims table holds \['a'\] more than once"):
        report.across_scales(base, pd.concat([other, other.tail(1)]))
