"""What the reproduction report shows, collected from the stages' outputs and the papers' artefact files
(:func:`collect`); :mod:`biaslab.render` turns it into the repository's one page, ``reports/README.md`` and
``reports/index.html`` (:func:`biaslab.render.build`).

For every paper (in ``report.papers`` order): the scale it ran at (params.yaml against ``configs/paper-scale.yaml``),
the verdict counts and the full claims table (``reports/<paper>/results/claims.csv``: the paper's value, ours with
its interval, the verdict computed by the paper's analysis stage), and each of the paper's tables and figures
(``reports/paper_values/<paper>.yaml``) beside the files that regenerate it, with the verdicts of the claims that
belong to it and, where a stage output carries the paper's printed numbers beside ours, a row-by-row comparison
with a computed verdict ("k of n within ±x of the paper", or "not comparable" and why); where the paper's claims
at the medium profile are committed (``reports/gpu/<paper>/claims.csv``), which verdicts change with scale. One
closing section lists, for all papers, what is not regenerated and why, and every contradicted
claim. Nothing here types a result: every number comes from a claims table, and the artefact files hold only names,
references and reasons.

Figures are linked relatively (the HTML opens from disk, in JupyterLab and on a code host; no copy of the PNGs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import claims as cl
from . import competence

# Under reports/: the medium GPU profile's claims, one folder per paper, as scripts/device_check.sh writes them
# (its GPU_RESULTS; where each was computed: its README.md); shown under each paper's own claims where present.
GPU_DIR = "gpu"

class PaperNumber(BaseModel):
    """One number the paper prints, for the row of a stage output named by ``key`` (its key columns' values)."""

    model_config = ConfigDict(extra="forbid")
    key: list[str]
    value: float


class Comparison(BaseModel):
    """The paper's numbers beside ours, row by row: ours from a stage output, the paper's from a column of that
    output (where the stage writes the printed values beside its own) or typed here, in ``values``, each with the
    ``ref`` of the table or figure that prints it."""

    model_config = ConfigDict(extra="forbid")
    what: str  # what the numbers are ("SEAT fairness per BBQ category")
    file: str  # a CSV relative to reports/, or a glob (one file per task: each is compared)
    where: dict[str, str] = {}  # keep only the rows whose column (as text) equals this value
    key: list[str]  # the columns naming a row
    ours: str  # our value's column
    paper: str | None = None  # the paper's value's column (rows where it is empty are not compared)
    values: list[PaperNumber] = []  # or the paper's values, typed from the paper
    ref: str | None = None  # where ``values`` are printed (table / figure / section)
    rule: Literal["within", "same_sign"] = "within"  # within: |ours − paper| <= tolerance; same_sign: the direction
    tolerance: float | None = Field(default=None, ge=0)  # for rule within
    relative: bool = False  # tolerance as a share of |paper| (counts, sizes)
    not_comparable: str | None = None  # why the two differ by design (other data, other model): shown, not judged

    @model_validator(mode="after")
    def _one_source(self):
        if (self.paper is None) == (not self.values):
            raise ValueError(f"comparison {self.what!r}: give the paper's numbers either as a column (paper) or as "
                             "values, not both or neither")
        if self.values and not self.ref:
            raise ValueError(f"comparison {self.what!r}: typed values need the ref that prints them")
        if self.rule == "within" and self.tolerance is None:
            raise ValueError(f"comparison {self.what!r}: rule within needs a tolerance")
        bad = [v.key for v in self.values if len(v.key) != len(self.key)]
        if bad:
            raise ValueError(f"comparison {self.what!r}: values keyed {bad} do not match key {self.key}")
        return self


class Artefact(BaseModel):
    """One table or figure of the paper."""

    model_config = ConfigDict(extra="forbid")
    id: str
    ref: str
    shows: str
    ours: list[str]  # paths or globs relative to reports/ (PNG shown, CSV previewed); a glob = one file per task
    match: list[str] = []  # substrings of claims.csv's paper_section that belong to this artefact
    not_reproduced: str | None = None  # why there is no (full) regeneration
    compare: list[Comparison] = []  # the paper's numbers beside ours, where a stage output carries both


class PaperValues(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paper: str
    title: str
    text: str  # the paper's file name among the shared papers
    artefacts: list[Artefact]


def load_paper_values(path: Path) -> PaperValues:
    """A ``reports/paper_values/<paper>.yaml``, validated (a clear error names the file and the key)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no artefact file for this paper; write one (see the others in its folder) "
                                "or drop the paper from report.papers")
    try:
        return PaperValues.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as err:
        raise ValueError(f"{path}: {err}") from None


def _flatten(d: Mapping, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out |= _flatten(v, key + ".")
        else:
            out[key] = v
    return out


def scale(params: Mapping, paper_scale: Mapping, paper: str) -> dict[str, object]:
    """How far the paper's params section is from its paper-scale configuration: the keys the paper-scale file sets
    for ``paper`` and which of them params.yaml holds at another value."""
    wanted = _flatten(paper_scale.get(paper) or {}, f"{paper}.")
    have = _flatten(params.get(paper) or {}, f"{paper}.")
    differ = sorted(k for k, v in wanted.items() if have.get(k) != v)
    label = "paper scale" if not differ else "CPU default"
    return {"label": label, "paper_scale_keys": len(wanted), "differ": differ}


@dataclass
class Compared:
    """A :class:`Comparison` evaluated on one file: the rows and the verdict computed from them."""

    spec: Comparison
    file: str
    table: pd.DataFrame  # key columns, paper, ours, difference, within
    verdict: str


def compare(reports: Path, spec: Comparison, file: str) -> Compared:
    """Read ``file`` (relative to ``reports``) and put the paper's value beside ours per row, with the difference and
    whether it is within the tolerance; the verdict counts the rows within it (or says why the numbers are not
    comparable). A missing column fails naming the file and the column."""
    df = pd.read_csv(reports / file)
    missing = [c for c in [*spec.key, spec.ours, *([spec.paper] if spec.paper else []), *spec.where]
               if c not in df.columns]
    if missing:
        raise ValueError(f"{reports / file}: no column {missing} for the comparison {spec.what!r} (columns: "
                         f"{list(df.columns)}); fix paper_values or the stage output")
    for col, val in spec.where.items():
        df = df[df[col].astype(str) == str(val)]
    absent: list = []
    if spec.paper:
        t = df[[*spec.key, spec.paper, spec.ours]].rename(columns={spec.paper: "paper", spec.ours: "ours"})
    else:
        typed = pd.DataFrame([[*v.key, v.value] for v in spec.values], columns=[*spec.key, "paper"])
        ours = df[[*spec.key, spec.ours]].rename(columns={spec.ours: "ours"}).astype({k: str for k in spec.key})
        t = typed.merge(ours, on=spec.key, how="left", validate="one_to_one")
        absent = t[t["ours"].isna()][spec.key].values.tolist()  # a setting this run did not train (or a typo)
        t = t[t["ours"].notna()]
    t = t[pd.to_numeric(t["paper"], errors="coerce").notna()].copy()
    t["paper"], t["ours"] = t["paper"].astype(float), pd.to_numeric(t["ours"], errors="coerce")
    t["difference"] = t["ours"] - t["paper"]
    if spec.rule == "same_sign":
        t["within"] = np.sign(t["ours"]) == np.sign(t["paper"])
        agree = "with the paper's sign (point estimates; the claims test the intervals)"
    else:
        bound = spec.tolerance * t["paper"].abs() if spec.relative else spec.tolerance
        t["within"] = t["difference"].abs() <= bound
        agree = "within " + (f"±{spec.tolerance:.0%} (relative)" if spec.relative else f"±{spec.tolerance:g}") + \
            " of the paper"
    if spec.not_comparable:
        verdict = f"not comparable: {spec.not_comparable}"
    elif not len(t):
        verdict = "not compared: no row carries a paper value"
    else:
        verdict = f"{int(t['within'].sum())} of {len(t)} {agree}"
        if spec.rule == "within":
            verdict += f"; median |difference| {t['difference'].abs().median():.3g}"
    if absent:
        shown = ", ".join(" / ".join(map(str, k)) for k in absent[:3])
        verdict += f"; {len(absent)} of the paper's rows are not in this run ({shown}{' …' if len(absent) > 3 else ''})"
    return Compared(spec, file, t.reset_index(drop=True), verdict)


def across_scales(base: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """The claims and checks (kinds ``claim``, ``check``: a check's verdict says whether a method did what it is
    for, which the claims about it presuppose) of two runs of one paper side by side (the CPU default's table and
    the medium GPU profile's; a committed revision's and the working tree's, :func:`claims_against`), joined on the
    row's text: ``claim``, ``kind``,
    ``paper_section``, then ``verdict``, ``our_value``, ``ci_low``, ``ci_high`` of each run (suffixes ``_base`` and
    ``_other``; empty where a row is in one table only) and ``changed``: both runs judged it and their verdicts
    differ. Rows in ``base``'s order, then those only ``other`` has. A text twice in one table cannot be paired:
    ValueError."""
    sides = []
    for name, df in (("base", base), ("other", other)):
        rows = df[df["kind"].isin(["claim", "check"])]
        twice = rows["claim"][rows["claim"].duplicated()].unique().tolist()
        if twice:
            raise ValueError(f"the {name} claims table holds {twice[:3]!r} more than once: a claim's text must name "
                             "it uniquely to be compared across runs")
        sides.append(rows[["claim", "kind", "paper_section", "verdict", "our_value", "ci_low", "ci_high"]])
    base_rows, other_rows = sides
    only_other = other_rows[~other_rows["claim"].isin(base_rows["claim"])]
    shared = ("claim", "kind", "paper_section")
    out = pd.concat([base_rows.merge(other_rows.drop(columns=["kind", "paper_section"]), on="claim", how="left",
                                     suffixes=("_base", "_other")),
                     only_other.rename(columns=lambda c: c if c in shared else f"{c}_other")],
                    ignore_index=True)
    out["changed"] = out["verdict_base"].notna() & out["verdict_other"].notna() & (
        out["verdict_base"] != out["verdict_other"])
    return out


@dataclass
class PaperReport:
    values: PaperValues
    claims: pd.DataFrame
    scale: dict
    compared: dict[str, list[Compared]]  # artefact id -> its comparisons
    competence: pd.DataFrame | None = None  # results/competence.csv, where the paper's analysis writes one
    gpu: pd.DataFrame | None = None  # the medium GPU profile's claims (GPU_DIR/<paper>/claims.csv), where committed
    scales: pd.DataFrame | None = None  # ``claims`` beside ``gpu`` (:func:`across_scales`), with ``gpu``

    @property
    def counts(self) -> dict[str, int]:
        return cl.summary(self.claims)

    def artefact_claims(self, art: Artefact) -> pd.DataFrame:
        if not art.match:
            return self.claims.iloc[0:0]
        hit = self.claims["paper_section"].astype(str).map(lambda s: any(m in s for m in art.match))
        return self.claims[hit]


def collect(reports: Path, papers: Sequence[str], params: Mapping, paper_scale: Mapping) -> list[PaperReport]:
    """Read every paper's artefact file and claims table; fail naming the first file an artefact lists that does not
    exist (a stage that did not run, or a renamed output)."""
    out = []
    for paper in papers:
        values = load_paper_values(reports / "paper_values" / f"{paper}.yaml")
        if values.paper != paper:
            raise ValueError(f"{reports / 'paper_values' / f'{paper}.yaml'}: paper is {values.paper!r}, expected "
                             f"{paper!r}")
        claims_path = reports / paper / "results" / "claims.csv"
        if not claims_path.is_file():
            raise FileNotFoundError(f"{claims_path}: missing; run the paper's analysis stage (dvc repro)")
        compared: dict[str, list[Compared]] = {}
        for art in values.artefacts:
            where = f"{paper} {art.id} in paper_values/{paper}.yaml"
            art.ours = expand(reports, art.ours, where)
            compared[art.id] = [compare(reports, c, f) for c in art.compare for f in expand(reports, [c.file], where)]
        comp_path = reports / paper / "results" / "competence.csv"
        comp = competence.read(comp_path) if comp_path.is_file() else None
        gpu_path = reports / GPU_DIR / paper / "claims.csv"
        claims, gpu = cl.read(claims_path), (cl.read(gpu_path) if gpu_path.is_file() else None)
        out.append(PaperReport(values, claims, scale(params, paper_scale, paper), compared, comp, gpu,
                               None if gpu is None else across_scales(claims, gpu)))
    return out


def expand(reports: Path, patterns: Sequence[str], where: str) -> list[str]:
    """Paths relative to ``reports``: each pattern a file or a glob; one that names no file fails."""
    out = []
    for pat in patterns:
        hits = sorted(p.relative_to(reports).as_posix() for p in reports.glob(pat) if p.is_file())
        if not hits:
            raise FileNotFoundError(f"{reports / pat}: listed for {where} but not found; run its stage or fix the "
                                    "path")
        out += hits
    return out


def claims_text(root: Path, names: Sequence[str]) -> str:
    """What ``biaslab claims`` prints: per paper of ``names`` (every paper with a claims table when empty), its
    competence table when it has one and its claims table as Markdown. A named paper without a table raises
    FileNotFoundError naming the file and the fix."""
    papers = list(names) or sorted(p.parent.parent.name for p in (root / "reports").glob("*/results/claims.csv"))
    out = []
    for paper in papers:
        path = root / "reports" / paper / "results" / "claims.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist; run the stage that writes it (dvc repro)")
        comp = path.with_name("competence.csv")
        if comp.exists():
            table = competence.read(comp)
            out.append(f"### {paper}: competence of the baselines\n\n{table.to_markdown(index=False, floatfmt='.3g')}\n")
        out.append(f"### {paper}\n\n{cl.markdown(cl.read(path))}\n")
    return "\n".join(out)


def _at_revision(root: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` (relative to ``root``) as committed at git revision ``rev``; None where that commit has no
    such file."""
    import subprocess

    proc = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def claims_against(root: Path, names: Sequence[str], rev: str) -> str:
    """What ``biaslab claims --against REV`` prints — what a change did to the verdicts: per paper of ``names``
    (every paper with a claims table when empty), its claims table as committed at git revision ``rev`` against the
    working tree's, paired by :func:`across_scales`. The verdict counts of both; each claim or check whose verdict
    or printed value (ours [CI], three significant digits) moved, the verdict changes first; the rows one side
    lacks; the competence checks whose pass / fail moved. ``rev`` not a commit of ``root``'s repository:
    ValueError; a paper with no table at ``rev`` says so in its section."""
    import io
    import subprocess

    if subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                      capture_output=True).returncode:
        raise ValueError(f"{rev!r} is not a commit of the repository at {root} (try HEAD~1, a branch, a tag or a hash "
                         "from `git log`)")
    papers = list(names) or sorted(p.parent.parent.name for p in (root / "reports").glob("*/results/claims.csv"))
    out = []
    for paper in papers:
        rel = f"reports/{paper}/results/claims.csv"
        if not (root / rel).is_file():
            raise FileNotFoundError(f"{root / rel} does not exist; run the stage that writes it (dvc repro)")
        now, text = cl.read(root / rel), _at_revision(root, rev, rel)
        if text is None:
            out.append(f"### {paper}: {rev} → working tree\n\n{rel} is not in {rev}: every row is new.\n")
            continue
        then = cl.read(io.StringIO(text))

        def counts(df):
            return ", ".join(f"{n} {v}" for v, n in cl.summary(df).items()) or "no claims"

        def shown(row, side):
            if pd.isna(row[f"verdict_{side}"]):
                return "–"
            v = row[f"our_value_{side}"], row[f"ci_low_{side}"], row[f"ci_high_{side}"]
            return f"{cl._fmt(v[0])} [{cl._fmt(v[1])}, {cl._fmt(v[2])}] {row[f'verdict_{side}']}"

        t = across_scales(then, now)
        t["before"], t["now"] = t.apply(shown, axis=1, side="base"), t.apply(shown, axis=1, side="other")
        moved = t[t["before"] != t["now"]].sort_values("changed", ascending=False, kind="stable")
        lines = [f"### {paper}: {rev} → working tree", "",
                 f"claims: {counts(then)} → {counts(now)}; {len(moved)} of {len(t)} rows moved, "
                 f"{int(t['changed'].sum())} of them in verdict"]
        if len(moved):
            lines += ["", f"| claim | kind | at {rev} | now |", "|---|---|---|---|"]
            lines += [f"| {r.claim} | {r.kind} | {r.before} | " + (f"**{r.now}**" if r.changed else r.now) + " |"
                      for r in moved.itertuples(index=False)]
        comp_rel = f"reports/{paper}/results/competence.csv"
        comp_text = _at_revision(root, rev, comp_rel)
        if (root / comp_rel).is_file() and comp_text is not None:
            c = competence.read(io.StringIO(comp_text)).merge(competence.read(root / comp_rel), on="check",
                                                              how="outer", suffixes=("_base", "_other"))
            flipped = c[c["passed_base"].astype(str) != c["passed_other"].astype(str)]
            lines += ["", f"competence: {len(flipped)} of {len(c)} checks moved between pass and fail"]
            lines += [f"- {r.check}: {r.passed_base} → {r.passed_other}" for r in flipped.itertuples(index=False)]
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)
