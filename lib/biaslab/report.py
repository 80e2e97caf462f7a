"""The reproduction report: one page per repository (``reports/index.html`` and ``reports/README.md``) built only
from the stages' outputs and the papers' artefact files.

For every paper (in ``report.papers`` order): the scale it ran at (params.yaml against ``configs/paper-scale.yaml``),
the verdict counts and the full claims table (``reports/<paper>/results/claims.csv``: the paper's value, ours with
its interval, the verdict computed by the paper's analysis stage), and each of the paper's tables and figures
(``reports/paper_values/<paper>.yaml``) beside the files that regenerate it, with the verdicts of the claims that
belong to it and, where a stage output carries the paper's printed numbers beside ours, a row-by-row comparison
with a computed verdict ("k of n within ±x of the paper", or "not comparable" and why). One closing section lists, for all papers, what is not regenerated and why, and every contradicted
claim. Nothing here types a result: every number comes from a claims table, and the artefact files hold only names,
references and reasons.

Figures are linked relatively (the HTML opens from disk, in JupyterLab and on a code host; no copy of the PNGs).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import claims as cl

PREVIEW_ROWS = 12  # rows of a CSV output shown under its artefact (the file has the rest)


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


@dataclass
class PaperReport:
    values: PaperValues
    claims: pd.DataFrame
    scale: dict
    compared: dict[str, list[Compared]]  # artefact id -> its comparisons

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
        out.append(PaperReport(values, cl.read(claims_path), scale(params, paper_scale, paper), compared))
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


def _num(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.3g}"


def _ours(r) -> str:
    return f"{_num(r.our_value)} [{_num(r.ci_low)}, {_num(r.ci_high)}]"


def _change(r) -> str:
    """A bias change with its interval and adjusted p-value when it has them (bias cards' ``moved.csv``; older files
    have none)."""
    lo, hi = getattr(r, "ci_low", None), getattr(r, "ci_high", None)
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return _num(r.bias_change)
    text, q = f"{_num(r.bias_change)} [{_num(lo)}, {_num(hi)}]", getattr(r, "q_value", None)
    return text if q is None or not math.isfinite(q) else f"{text}, q {_num(q)}"


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def _scale_text(s: Mapping) -> str:
    if s["label"] == "paper scale":
        return "paper scale (every setting of configs/paper-scale.yaml)"
    return (f"CPU default ({len(s['differ'])} of {s['paper_scale_keys']} paper-scale settings differ: "
            f"{', '.join(s['differ'][:6])}{' …' if len(s['differ']) > 6 else ''})")


def _status(rep: PaperReport, art: Artefact) -> str:
    sub = rep.artefact_claims(art)
    parts = []
    if art.ours:
        parts.append("regenerated" if not art.not_reproduced else "partly regenerated")
    else:
        parts.append("not regenerated")
    if len(sub):
        parts.append("claims: " + _counts_text(cl.summary(sub)))
    for c in rep.compared.get(art.id, []):
        parts.append(f"{c.spec.what} ({Path(c.file).name}): {c.verdict}")
    return "; ".join(parts)


def gaps(reps: Sequence[PaperReport]) -> list[tuple[str, str]]:
    """(heading, text) of everything not reproduced: artefacts without a (full) regeneration and why, then every
    contradicted claim with both values."""
    out = [(f"{rep.values.paper} {art.id}", f"({art.shows}) {art.not_reproduced}")
           for rep in reps for art in rep.values.artefacts if art.not_reproduced]
    out += [(f"{rep.values.paper}, contradicted", f"{r.claim} ({r.paper_section}; paper {r.paper_value}, ours "
             f"{_ours(r)})")
            for rep in reps for r in rep.claims[rep.claims["verdict"] == "contradicted"].itertuples(index=False)]
    return out


CARDS = "cards"  # the cards stage's folder under reports/
CARDS_INTRO = ("Every checkpoint the pipeline trains and the base encoder, each measure taken by the function of the "
               "paper that owns it (stage `cards`, `biaslab.cards`). Below, per bias measure, the checkpoints that "
               "lowered it most against their reference (negative change = less biased), with the paired bootstrap "
               "interval over queries or questions and the randomisation test's p-value adjusted over every change "
               "tested (q) where the measure has them; changes inside BBQ's arithmetic noise band, with an interval "
               "that includes 0 or not significant after the adjustment are not listed.")


def _cell(x) -> str:
    """Text for a Markdown table cell: a pipe would end the cell (fairrank's ranker names hold one)."""
    return str(x).replace("|", "\\|")


def _moved(reports: Path) -> pd.DataFrame | None:
    path = Path(reports) / CARDS / "moved.csv"
    return pd.read_csv(path) if path.is_file() else None


def cards_markdown(moved: pd.DataFrame | None) -> list[str]:
    """The cross-paper bias cards section (``moved``: ``reports/cards/moved.csv``), or a line saying they are not
    built."""
    lines = ["", "## Bias cards across papers", ""]
    if moved is None:
        return [*lines, "Not built yet: `dvc repro cards`."]
    lines += [CARDS_INTRO, "", f"All cards: [cards.csv]({CARDS}/cards.csv); every change: "
              f"[bias_change.csv]({CARDS}/bias_change.csv).", "", f"![bias change per checkpoint and measure]"
              f"({CARDS}/heatmap.png)", "", "| measure | checkpoint | from | value | reference | change |",
              "|---|---|---|---|---|---|"]
    for r in moved.itertuples(index=False):
        lines.append(f"| {r.measure} | {_cell(r.checkpoint)} | {r.paper} | {_num(r.value)} | "
                     f"{_num(r.reference_value)} ({_cell(r.reference)}) | "
                     f"{_change(r)} |")
    return lines


def cards_html(moved: pd.DataFrame | None) -> str:
    e = html.escape
    if moved is None:
        return "<h2 id='cards'>Bias cards across papers</h2><p>Not built yet: <code>dvc repro cards</code>.</p>"
    rows = "".join(f"<tr><td>{e(str(r.measure))}</td><td>{e(str(r.checkpoint))}</td><td>{e(str(r.paper))}</td>"
                   f"<td>{_num(r.value)}</td><td>{_num(r.reference_value)} ({e(str(r.reference))})</td>"
                   f"<td>{_change(r)}</td></tr>" for r in moved.itertuples(index=False))
    return (f"<h2 id='cards'>Bias cards across papers</h2><p>{e(CARDS_INTRO)}</p>"
            f"<p><a href='{CARDS}/cards.csv'>cards.csv</a>, <a href='{CARDS}/bias_change.csv'>bias_change.csv</a></p>"
            f"<figure><img src='{CARDS}/heatmap.png' alt='bias cards heatmap'><figcaption>{CARDS}/heatmap.png"
            "</figcaption></figure><table><tr><th>measure</th><th>checkpoint</th><th>from</th><th>value</th>"
            f"<th>reference</th><th>change</th></tr>{rows}</table>")


def markdown(reps: Sequence[PaperReport], moved: pd.DataFrame | None) -> str:
    """``reports/README.md``: renders on a code host; links relative to reports/."""
    lines = ["# Reproduction report", "",
             "Built by the `report` stage from the stages' outputs (each paper's `results/claims.csv`) and the papers' "
             "artefact lists (`paper_values/<paper>.yaml`). Verdicts are computed by each paper's analysis from "
             "bootstrap intervals; see the repository README for the method.", "",
             "| paper | scale | reproduced | contradicted | inconclusive |", "|---|---|---|---|---|"]
    for rep in reps:
        c = rep.counts
        lines.append(f"| [{rep.values.paper}](#{rep.values.paper}) {rep.values.title} | {rep.scale['label']} | "
                     f"{c['reproduced']} | {c['contradicted']} | {c['inconclusive']} |")
    for rep in reps:
        v = rep.values
        lines += ["", f"## {v.paper}", "", f"**{v.title}** — run at {_scale_text(rep.scale)}. Claims: "
                  f"{_counts_text(rep.counts)}.", "", "### Tables and figures", "",
                  "| paper | section | shows | ours | status |", "|---|---|---|---|---|"]
        for art in v.artefacts:
            ours = ", ".join(f"[{Path(p).name}]({p})" for p in art.ours) or "–"
            lines.append(f"| {art.id} | {art.ref} | {art.shows} | {ours} | {_status(rep, art)} |")
        for art in v.artefacts:
            for p in art.ours:
                if p.endswith(".png"):
                    lines += ["", f"![{v.paper} {art.id}: {art.shows}]({p})"]
        numbers = [(art, c) for art in v.artefacts for c in rep.compared.get(art.id, [])]
        if numbers:
            lines += ["", "### The paper's numbers beside ours"]
        for art, c in numbers:
            src = f"; the paper's values from {c.spec.ref}" if c.spec.values else ""
            lines += ["", f"**{art.id}, {c.spec.what}** ([{Path(c.file).name}]({c.file}){src}): {c.verdict}.", "",
                      "| " + " | ".join([*c.spec.key, "paper", "ours", "difference"]) + " |",
                      "|" + "---|" * (len(c.spec.key) + 3)]
            for r in c.table.itertuples(index=False):
                keys = [_cell(r[i]) for i in range(len(c.spec.key))]
                lines.append("| " + " | ".join([*keys, _num(r.paper), _num(r.ours), _num(r.difference)]) + " |")
        lines += ["", "### Claims", "", "| claim | section | paper | ours [95 % CI] | verdict |", "|---|---|---|---|---|"]
        for r in rep.claims.itertuples(index=False):
            lines.append(f"| {r.claim} | {r.paper_section} | {r.paper_value} | {_ours(r)} | **{r.verdict}** |")
    lines += cards_markdown(moved)
    lines += ["", "## What is not reproduced, and why", ""]
    lines += [f"- **{head}**: {text}" for head, text in gaps(reps)]
    for rep in reps:
        n = rep.counts["inconclusive"]
        if n:
            lines.append(f"- **{rep.values.paper}**: {n} claims inconclusive (their intervals cover the paper's "
                         "direction and its opposite, or a guard rule applies; the `rule` column of claims.csv says "
                         "which)")
    return "\n".join(lines) + "\n"


def _preview(path: Path) -> str:
    df = pd.read_csv(path)
    more = len(df) - PREVIEW_ROWS
    table = df.head(PREVIEW_ROWS).to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0,
                                          classes="preview")
    return table + (f"<p class='more'>… {more} more rows in the file</p>" if more > 0 else "")


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f3f3f3}.reproduced{color:#176317;font-weight:600}.contradicted{color:#a11;font-weight:600}
.inconclusive{color:#8a6d00;font-weight:600}img{max-width:100%;border:1px solid #eee}.preview{font-size:11px}
.more{font-size:11px;color:#666}figure{margin:1em 0}figcaption{font-size:13px;color:#444}"""


def html_page(reps: Sequence[PaperReport], reports: Path, moved: pd.DataFrame | None) -> str:
    """``reports/index.html``: the same content with CSV previews, figures linked relatively."""
    e = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Reproduction report</title>",
           f"<style>{CSS}</style></head><body><h1>Reproduction report</h1>",
           "<p>Built by the <code>report</code> stage from each paper's <code>results/claims.csv</code> and "
           "<code>paper_values/&lt;paper&gt;.yaml</code>. Verdicts are computed by the analysis stages.</p>",
           "<table><tr><th>paper</th><th>scale</th><th>reproduced</th><th>contradicted</th><th>inconclusive</th></tr>"]
    for rep in reps:
        c = rep.counts
        out.append(f"<tr><td><a href='#{e(rep.values.paper)}'>{e(rep.values.paper)}</a> {e(rep.values.title)}</td>"
                   f"<td>{e(rep.scale['label'])}</td><td>{c['reproduced']}</td><td>{c['contradicted']}</td>"
                   f"<td>{c['inconclusive']}</td></tr>")
    out.append("</table>")
    for rep in reps:
        v = rep.values
        out += [f"<h2 id='{e(v.paper)}'>{e(v.paper)}: {e(v.title)}</h2>",
                f"<p>Run at {e(_scale_text(rep.scale))}. Claims: {e(_counts_text(rep.counts))}.</p>",
                "<h3>Tables and figures</h3>"]
        for art in v.artefacts:
            out.append(f"<h4>{e(art.id)} ({e(art.ref)}): {e(art.shows)} — {e(_status(rep, art))}</h4>")
            if art.not_reproduced:
                out.append(f"<p><em>{e(art.not_reproduced)}</em></p>")
            for c in rep.compared.get(art.id, []):
                rows = "".join("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in r[: len(c.spec.key)])
                               + "".join(f"<td>{e(_num(x))}</td>" for x in r[len(c.spec.key):len(c.spec.key) + 3])
                               + f"<td>{'yes' if r[-1] else 'no'}</td></tr>" for r in c.table.itertuples(index=False))
                head = "".join(f"<th>{e(k)}</th>" for k in [*c.spec.key, "paper", "ours", "difference", "within"])
                src = f"; the paper's values from {c.spec.ref}" if c.spec.values else ""
                out.append(f"<p><b>{e(c.spec.what)}</b> (<a href='{e(c.file)}'>{e(c.file)}</a>{e(src)}): "
                           f"{e(c.verdict)}</p>"
                           f"<table class='preview'><tr>{head}</tr>{rows}</table>")
            for p in art.ours:
                if p.endswith(".png"):
                    out.append(f"<figure><img src='{e(p)}' alt='{e(art.id)}'><figcaption>{e(p)}</figcaption></figure>")
                elif p.endswith(".csv"):
                    out.append(f"<p><a href='{e(p)}'>{e(p)}</a></p>{_preview(reports / p)}")
                else:
                    out.append(f"<p><a href='{e(p)}'>{e(p)}</a></p>")
        out.append("<h3>Claims</h3><table><tr><th>claim</th><th>section</th><th>paper</th><th>ours [95 % CI]</th>"
                   "<th>verdict</th><th>rule</th></tr>")
        for r in rep.claims.itertuples(index=False):
            out.append(f"<tr><td>{e(str(r.claim))}</td><td>{e(str(r.paper_section))}</td><td>{e(str(r.paper_value))}"
                       f"</td><td>{e(_ours(r))}</td><td class='{e(r.verdict)}'>{e(r.verdict)}</td>"
                       f"<td>{e(str(r.rule))}</td></tr>")
        out.append("</table>")
    out.append(cards_html(moved))
    out.append("<h2>What is not reproduced, and why</h2><ul>")
    out += [f"<li><b>{e(head)}</b>: {e(text)}</li>" for head, text in gaps(reps)]
    out.append("</ul></body></html>")
    return "\n".join(out) + "\n"


def build(reports: Path, papers: Sequence[str], params: Mapping, paper_scale: Mapping) -> tuple[str, str]:
    """(README.md text, index.html text) for ``papers`` from the outputs under ``reports``."""
    reps = collect(Path(reports), papers, params, paper_scale)
    moved = _moved(Path(reports))  # the bias cards' summary, read once for both pages
    return markdown(reps, moved), html_page(reps, Path(reports), moved)
