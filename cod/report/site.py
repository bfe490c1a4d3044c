"""The results site: static HTML pages of the replication report, the committed claims, figures and
executed notebooks.

    python -m cod.report.site                             # site/ for the default profile (`make site`)
    python -m cod.report.site --out /tmp/site --profile smoke

`index.html` is the replication report, docs/report.md (`python -m cod.report`), rendered with
mistune (nbconvert's Markdown renderer). Its links are resolved against the site: a link to an
executed notebook goes to that notebook's page here, the claim id in backticks just after it to the
claim's row on its profile's claims page; a relative link to a file the site lacks is shown as its
text, so no link of the page is dead.

`claims.html` shows the papers' headline claims (`headline: true` in cod/claims/registry.yaml): the paper's value beside the
verdict of the profile and of params.yaml's `headline_profile` ("not yet run" where that profile
has no claims.json holding the claim or its stem), then every claim the profile's notebooks
judged (`cod.claims.scoreboard.collect`, the rows of figures/<profile>/claims/claims.csv), filtered
in the page by paper, notebook and verdict; `claims-<profile>.html` lists the headline profile's
claims the same way. Each profile's notebook gets a folder
`<profile>/<notebook>/`: its PNGs, a page showing them (index.html) and its executed notebook as
HTML (notebook.html: the copy `make html` left beside it while that is newer than the notebook,
else rendered by `cod.report.notebook_html.render_html`). A claim links to the PNGs named after its paper
item (fig4a_..., table2_...) or else to that page. Built from committed files only; the CSS and
JavaScript are inline, so the site opens from disk with no server or network.
"""

from __future__ import annotations

import argparse
import html
import posixpath
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable
from urllib.parse import unquote, urlparse

import mistune  # nbconvert's Markdown renderer (version 3: the renderer's link(text, url, title))
import pandas as pd

from cod import ROOT, load_yaml
from cod.paths import EXECUTED
from cod.claims.registry import headline_claims, load_registry
from cod.report.notebook_html import render_html
from cod.claims.scoreboard import COLUMNS, VERDICT_ORDER, collect, headline_pairs, no_claims, paper_value

FIGURES = ROOT / "figures"
REPORT = ROOT / "docs" / "report.md"
MARKER = ".cod-site"  # marks a folder this module built, so a rebuild may empty it
HEADLINE = tuple(headline_claims(load_registry()))  # in registry order
COLORS = {"reproduced": "#2a9d8f", "not reproduced": "#e76f51", "inconclusive": "#bdbdbd",
          "beyond reach": "#f4d58d", "holds": "#264653", "holds loosely": "#8ab17d", "fails": "#9d0208"}
_ITEM = re.compile(r"(Fig|Table)s?\.? ?(\d+)([a-z]?)(?:-(\d+|[a-z]))?(?: \(([a-z](?:, [a-z])*)\))?")
_FIGURE = re.compile(r"(fig|table)(\d+)([a-z]*)(?:_(\d+))?(?:_|$)")
# a link to an executed notebook, then the claim id in backticks beside it: "[effect](url) (`claim`"
_CLAIM_BESIDE = re.compile(r"(?P<before>\]\((?P<url>[^)\s]+\.ipynb)\) \()`(?P<claim>[^`\s]+)`")

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.ours, td.value { font-size: 12px; max-width: 28em; }
.verdict { border-radius: 3px; padding: 0 0.35em; white-space: nowrap; color: #000; }
.missing { color: #888; font-style: italic; }
.filters label { margin-right: 1em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
nav { margin-bottom: 1em; } main > p, main > ul { max-width: 60em; }
""" + "".join(f".v-{name.replace(' ', '-')} {{ background: {color};{' color: #fff;' if name in ('holds', 'fails') else ''} }}\n"
              for name, color in COLORS.items())

SCRIPT = """
const selects = [...document.querySelectorAll("select[data-filter]")];
const rows = [...document.querySelectorAll("#claims tbody tr")];
function update() {
  rows.forEach(row => { row.hidden = !selects.every(s => !s.value || row.dataset[s.dataset.filter] === s.value); });
  const shown = rows.filter(row => !row.hidden);
  const tally = {};
  shown.forEach(row => { tally[row.dataset.verdict] = (tally[row.dataset.verdict] || 0) + 1; });
  const parts = Object.entries(tally).map(([verdict, n]) => n + " " + verdict);
  document.getElementById("count").textContent =
    shown.length + " of " + rows.length + " claims shown" + (parts.length ? ": " + parts.join(", ") : "");
}
selects.forEach(s => s.addEventListener("change", update));
update();
"""


@dataclass
class Pages:
    """What the site holds of one notebook of a profile, as paths relative to the site's root."""

    folder: str
    figures: list[str] = field(default_factory=list)
    notebook: str | None = None

    @property
    def gallery(self) -> str:
        return f"{self.folder}/index.html"


def paper_order(notebook: str) -> tuple:
    """Sort key of notebook names in paper order (a1, a2, ..., a10, b1, ...; others last)."""
    match = re.match(r"([a-z])(\d+)_", notebook)
    return (0, match[1], int(match[2])) if match else (1, notebook, 0)


def claims(profile: str, figures_root: Path = FIGURES) -> pd.DataFrame:
    """Every claim the profile's notebooks judged, notebooks in paper order (no rows when none has
    a claims.json yet)."""
    try:
        table = collect(figures_root, profile)
    except FileNotFoundError:
        return pd.DataFrame(columns=list(COLUMNS))
    order = sorted(table["notebook"].unique(), key=paper_order)
    return table.sort_values("notebook", key=lambda names: names.map(order.index), kind="stable")


def headline_profile(params: Path = ROOT / "params.yaml") -> str:
    """params.yaml's `headline_profile`."""
    return load_yaml(params)["headline_profile"]


def figures_of(item: str, names: list[str]) -> list[str]:
    """The PNG names among `names` that show paper item `item` ('Fig. 4b-d' -> fig4bcd_...png,
    'Table 2' -> table2_...png; a whole figure takes each of its parts, a part the whole figure);
    none for an item without a figure of its own (a lemma, a section)."""
    match = _ITEM.match(item)
    if not match:
        return []
    kind, first, letter, end, listed = match.groups()
    numbers = set(range(int(first), int(end) + 1)) if end and end.isdigit() else {int(first)}
    letters = set(listed.split(", ")) if listed else set()
    if letter:
        letters |= {chr(c) for c in range(ord(letter), ord(end if end and end.isalpha() else letter) + 1)}
    found = []
    for name in names:
        shown = _FIGURE.match(name)
        if not shown or shown[1] != kind.lower():
            continue
        span = set(range(int(shown[2]), int(shown[4] or shown[2]) + 1))
        if numbers & span and (not letters or not shown[3] or letters & set(shown[3])):
            found.append(name)
    return found


def notebook_page(executed: Path, page: Path) -> None:
    """Write the executed notebook as HTML to `page`, reusing `make html`'s copy while it is current."""
    beside = executed.with_suffix(".html")
    if beside.is_file() and beside.stat().st_mtime >= executed.stat().st_mtime:
        shutil.copyfile(beside, page)
    else:
        render_html(executed, page)


def publish(profile: str, out: Path, figures_root: Path = FIGURES, executed_root: Path = EXECUTED,
            claims_page: str | None = None) -> dict[str, Pages]:
    """Copy every notebook's PNGs of `profile` into out/<profile>/<notebook>/ with a page showing
    them (linked back to the report and to `claims_page`, the profile's claims page where the site
    has one), and write its executed notebook there as HTML; the pages by notebook name."""
    root = Path(figures_root, profile)
    figure_dirs = {p.name: p for p in root.iterdir() if p.is_dir()} if root.is_dir() else {}
    notebooks = {p.stem: p for p in Path(executed_root, profile).glob("*.ipynb")}
    pages = {}
    for name in sorted(set(figure_dirs) | set(notebooks), key=paper_order):
        folder = out / profile / name
        folder.mkdir(parents=True)
        entry = pages[name] = Pages(folder=f"{profile}/{name}")
        for png in sorted(figure_dirs[name].glob("*.png")) if name in figure_dirs else []:
            shutil.copyfile(png, folder / png.name)
            entry.figures.append(f"{entry.folder}/{png.name}")
        if name in notebooks:
            notebook_page(notebooks[name], folder / "notebook.html")
            entry.notebook = f"{entry.folder}/notebook.html"
        (folder / "index.html").write_text(gallery(profile, name, entry, claims_page))
    return pages


def _page(title: str, body: str, script: str = "") -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n"
            + (f"<script>{script}</script>\n" if script else "") + "</body></html>\n")


def gallery(profile: str, name: str, pages: Pages, claims_page: str | None = None) -> str:
    """The page of one notebook's figures (links relative to its folder)."""
    images = "".join(f'<figure id="{html.escape(Path(p).name)}"><img src="{html.escape(Path(p).name)}" '
                     f'alt="{html.escape(Path(p).name)}"><figcaption>{html.escape(Path(p).name)}</figcaption></figure>\n'
                     for p in pages.figures) or '<p class="missing">no figures</p>'
    claims = f' · <a href="../../{html.escape(claims_page)}">all claims</a>' if claims_page else ""
    notebook = ' · <a href="notebook.html">executed notebook</a>' if pages.notebook else ""
    return _page(f"{name} ({profile})", f'<p><a href="../../index.html">report</a>{claims}{notebook}</p>\n'
                                        f"<h1>{html.escape(name)} <small>({html.escape(profile)} profile)</small></h1>\n"
                                        + images)


def verdict(value: str) -> str:
    """A verdict as a badge in its colour."""
    return f'<span class="verdict v-{html.escape(value.replace(" ", "-"))}">{html.escape(value)}</span>'


def links(row: pd.Series, pages: dict[str, Pages]) -> str:
    """The figure and notebook links of a claim row."""
    entry = pages.get(row["notebook"])
    if entry is None:
        return '<span class="missing">no pages</span>'
    shown = figures_of(str(row["item"]), [Path(p).name for p in entry.figures])
    figures = [f'<a class="figure" href="{html.escape(entry.folder)}/{html.escape(name)}">{html.escape(Path(name).stem)}</a>'
               for name in shown] or [f'<a class="figure" href="{html.escape(entry.gallery)}">figures</a>']
    notebook = [f'<a class="notebook" href="{html.escape(entry.notebook)}">notebook</a>'] if entry.notebook else []
    return "<br>".join(figures + notebook)


def _result(rows: pd.DataFrame) -> str:
    if rows.empty:
        return '<span class="missing">not yet run</span>'
    return "<br>".join(f'{verdict(r["verdict"])} <span class="ours">{html.escape(str(r["ours"]))}</span>'
                       for _, r in rows.iterrows())


def headline_table(table: pd.DataFrame, second: pd.DataFrame, profiles: tuple[str, str],
                   pages: dict[str, Pages]) -> str:
    """The headline claims: the paper's value, then the verdicts in `table` and in `second`, the
    second profile's claims, by id or else by stem ("not yet run" without one)."""
    body = []
    for id_, row, other in headline_pairs(table, second, HEADLINE):
        first = row.iloc[0] if len(row) else None
        text = "" if first is None else f'{first["paper"]} {html.escape(str(first["item"]))}: {html.escape(str(first["claim"]))}'
        body.append(f'<tr><td><a href="#claim-{html.escape(id_)}">{html.escape(id_)}</a><br>{text}</td>'
                    f'<td class="value">{html.escape(paper_value(None if first is None else first["paper_value"]))}</td>'
                    f'<td class="ours">{_result(row)}</td><td class="ours">{_result(other)}</td>'
                    f'<td>{"" if first is None else links(first, pages)}</td></tr>')
    head = "".join(f"<th>{html.escape(h)}</th>" for h in
                   ("claim", "paper's value", f"today's miniature ({profiles[0]})",
                    f"second CPU profile ({profiles[1]})", "figure, notebook"))
    return f'<table id="headline"><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(body) + "\n</tbody></table>"


def _select(key: str, label: str, values: list[str]) -> str:
    options = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)
    return (f'<label>{label} <select id="filter-{key}" data-filter="{key}">'
            f'<option value="">all</option>{options}</select></label>')


def verdicts_present(table: pd.DataFrame) -> list[str]:
    """The verdicts of `table`, in the scoreboard's order (any other after them)."""
    present = set(table["verdict"])
    return [v for v in VERDICT_ORDER if v in present] + sorted(present - set(VERDICT_ORDER))


def claims_table(table: pd.DataFrame, pages: dict[str, Pages]) -> str:
    """Every claim of the profile, with the filters and the count of the rows shown."""
    filters = (_select("paper", "paper", sorted(set(table["paper"])))
               + _select("notebook", "notebook", list(dict.fromkeys(table["notebook"])))
               + _select("verdict", "verdict", verdicts_present(table)))
    head = "".join(f"<th>{h}</th>" for h in
                   ("claim", "paper", "item", "notebook", "source", "what the paper claims", "paper's value",
                    "ours", "verdict", "figure, notebook"))
    rows = []
    for _, row in table.iterrows():
        cells = [html.escape(str(row[key])) for key in ("id", "paper", "item", "notebook", "source", "claim")]
        data = " ".join(f'data-{key}="{html.escape(str(row[key]))}"' for key in ("paper", "notebook", "verdict"))
        rows.append(f'<tr id="claim-{cells[0]}" {data}>' + "".join(f"<td>{c}</td>" for c in cells)
                    + f'<td class="value">{html.escape(paper_value(row["paper_value"]))}</td>'
                    + f'<td class="ours">{html.escape(str(row["ours"]))}</td><td>{verdict(row["verdict"])}</td>'
                    + f"<td>{links(row, pages)}</td></tr>")
    return (f'<p class="filters">{filters}</p>\n<p id="count">{len(table)} of {len(table)} claims shown</p>\n'
            f'<table id="claims"><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(rows) + "\n</tbody></table>")


def notebooks_list(profile: str, pages: dict[str, Pages]) -> str:
    """Every notebook of a profile, with links to its figures and its executed notebook."""
    items = "".join(f'<li>{html.escape(name)}: <a href="{html.escape(p.gallery)}">{len(p.figures)} figures</a>'
                    + (f' · <a href="{html.escape(p.notebook)}">notebook</a>' if p.notebook else "") + "</li>"
                    for name, p in pages.items())
    return f"<h3>{html.escape(profile)} profile</h3><ul>{items}</ul>" if items else ""


def claims_file(profile: str, main: str) -> str:
    """The name of `profile`'s claims page in a site built for the profile `main`."""
    return "claims.html" if profile == main else f"claims-{profile}.html"


def nav(files: dict[str, str]) -> str:
    """The links atop the report and the claims pages: the report, then each profile's claims page
    (`files`, the site's profile first) and the notebooks listed at the end of the first."""
    claims = " · ".join(f'<a href="{html.escape(name)}">{html.escape(p)}</a>' for p, name in files.items())
    first = html.escape(next(iter(files.values())))
    return (f'<nav><a href="index.html">replication report</a> · claims: {claims} · '
            f'<a href="{first}#notebooks">notebooks and figures</a></nav>')


def claims_page(profile: str, tables: dict[str, pd.DataFrame], pages: dict[str, dict[str, Pages]],
                files: dict[str, str], second: str | None = None) -> str:
    """Every claim `profile`'s notebooks judged, filtered in the page; with `second`, the headline
    claims first, beside `second`'s verdicts."""
    table = tables[profile]
    headline = ("<h2>Headline claims</h2>\n" + headline_table(table, tables[second], (profile, second), pages[profile])
                + "\n") if second else ""
    body = (f"{nav(files)}\n<h1>The curse of depth, reproduced: claims of the <code>{html.escape(profile)}</code> "
            "profile</h1>\n<p>Built from the committed results (<code>make site</code>). Verdicts follow one rule, "
            "<code>cod/claims/verdicts.py</code>; the papers' claims and our own readings (source <em>ours</em>) "
            "are listed together.</p>\n" + headline
            + f"<h2>Every judged claim ({len(table)})</h2>\n" + claims_table(table, pages[profile])
            + '\n<h2 id="notebooks">Notebooks and figures</h2>\n' + "".join(notebooks_list(p, pages[p]) for p in pages))
    return _page(f"cod claims ({profile})", body, SCRIPT)


def repository_path(url: str, home: str = REPORT.parent.relative_to(ROOT).as_posix()) -> PurePosixPath | None:
    """The repository file that a relative link of a page in folder `home` (the report's, docs/)
    names; None for a web link, an anchor or an absolute path."""
    if not url or urlparse(url).scheme or url.startswith(("#", "/")):
        return None
    return PurePosixPath(posixpath.normpath(posixpath.join(home, unquote(url.split("#")[0]))))


def executed_notebook(path: PurePosixPath | None) -> tuple[str, str] | None:
    """(profile, notebook) of a repository path notebooks/executed/<profile>/<notebook>.ipynb."""
    executed = PurePosixPath(EXECUTED.relative_to(ROOT).as_posix())
    if path is None or path.suffix != ".ipynb" or path.parent.parent != executed:
        return None
    return path.parent.name, path.stem


def site_copy(path: PurePosixPath, pages: dict[str, dict[str, Pages]]) -> str | None:
    """The site's copy of a repository file: an executed notebook's page, or a figure of a notebook;
    None for a file the site does not hold."""
    if notebook := executed_notebook(path):
        entry = pages.get(notebook[0], {}).get(notebook[1])
        return entry.notebook if entry else None
    if path.parent.parent.parent == PurePosixPath(FIGURES.relative_to(ROOT).as_posix()):
        entry = pages.get(path.parent.parent.name, {}).get(path.parent.name)
        if entry and f"{entry.folder}/{path.name}" in entry.figures:
            return f"{entry.folder}/{path.name}"
    return None


def link_claims(markdown: str, tables: dict[str, pd.DataFrame], files: dict[str, str]) -> str:
    """`markdown` with each claim id in backticks just after a link to an executed notebook made a
    link to the claim's row on the claims page of that notebook's profile, where the site has it."""
    def link(match: re.Match) -> str:
        notebook = executed_notebook(repository_path(match["url"]))
        profile = notebook[0] if notebook else None
        if profile not in files or match["claim"] not in set(tables[profile]["id"]):
            return match[0]
        return f'{match["before"]}[`{match["claim"]}`](<{files[profile]}#claim-{match["claim"]}>)'
    return _CLAIM_BESIDE.sub(link, markdown)


def plain(markup: str) -> str:
    """The text of an HTML fragment, tags dropped and entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading (its HTML here): lower case, punctuation dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", plain(heading).strip().lower()).replace(" ", "-")


class ReportHTML(mistune.HTMLRenderer):
    """Markdown as HTML for the site: each link and image goes where `resolve` sends its URL, and
    one it sends nowhere (None) is shown as its text; headings get GitHub's anchors, and the
    level-2 ones are kept in `sections` as (anchor, text)."""

    def __init__(self, resolve: Callable[[str], str | None]):
        super().__init__(escape=False)
        self.resolve = resolve
        self.sections: list[tuple[str, str]] = []
        self._anchors: Counter[str] = Counter()

    def link(self, text: str, url: str, title: str | None = None) -> str:
        target = self.resolve(url)  # written here: mistune would take the ":" of a claim id for a protocol
        titled = f' title="{html.escape(title)}"' if title else ""
        return text if target is None else f'<a href="{html.escape(target)}"{titled}>{text}</a>'

    def image(self, text: str, url: str, title: str | None = None) -> str:
        target = self.resolve(url)
        return text if target is None else f'<img src="{html.escape(target)}" alt="{html.escape(plain(text))}">'

    def heading(self, text: str, level: int, **attrs) -> str:
        base = anchor(text)
        name = base if not self._anchors[base] else f"{base}-{self._anchors[base]}"
        self._anchors[base] += 1
        if level == 2:
            self.sections.append((name, plain(text)))
        return f'<h{level} id="{html.escape(name)}">{text}</h{level}>\n'


def report_page(markdown: str, tables: dict[str, pd.DataFrame], pages: dict[str, dict[str, Pages]],
                files: dict[str, str]) -> str:
    """The replication report (docs/report.md's text) as the site's front page: under the links to
    the claims pages, its sections listed, then the report with its links resolved against the site
    (web links and anchors kept, repository files the site lacks shown as text)."""
    def resolve(url: str) -> str | None:
        if urlparse(url).scheme or url.startswith("#") or url.split("#")[0] in files.values():
            return url  # a web link, a heading of the report, or a claim's row (link_claims)
        path = repository_path(url)
        return site_copy(path, pages) if path else None

    renderer = ReportHTML(resolve)
    body = mistune.create_markdown(renderer=renderer, plugins=["table"])(link_claims(markdown, tables, files))
    sections = " · ".join(f'<a href="#{html.escape(name)}">{html.escape(text)}</a>'
                          for name, text in renderer.sections)
    return _page("cod: replication report", f"{nav(files)}\n<p>Sections: {sections}</p>\n<main>\n{body}</main>")


def _fresh(out: Path) -> None:
    """Empty `out` for a build: refuse a non-empty folder that no build of this module made."""
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise FileExistsError(f"{out} is not empty and holds no site built by cod.report.site: choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("built by python -m cod.report.site; the next build empties this folder\n")


def build(out: Path, profile: str = "default", second: str | None = None, figures_root: Path = FIGURES,
          executed_root: Path = EXECUTED, report: Path = REPORT) -> Path:
    """Build the site into `out` for `profile`, beside `second` (params.yaml's headline profile by
    default): the report, each profile's claims page (one for each that has claims) and its
    notebooks' pages; returns the path of index.html, the report."""
    second = second or headline_profile()
    tables = {p: claims(p, figures_root) for p in dict.fromkeys((profile, second))}
    if tables[profile].empty:
        raise no_claims(figures_root, profile)
    if not report.is_file():
        raise FileNotFoundError(f"no {report}: run python -m cod.report first")
    _fresh(out)
    files = {p: claims_file(p, profile) for p, table in tables.items() if not table.empty}
    pages = {p: publish(p, out, figures_root, executed_root, files.get(p)) for p in tables}
    for p, name in files.items():
        (out / name).write_text(claims_page(p, tables, pages, files, second if p == profile else None))
    page = out / "index.html"
    page.write_text(report_page(report.read_text(), tables, pages, files))
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.report.site", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="where the site goes (default: site/)")
    parser.add_argument("--profile", default="default", help="whose claims the site shows (default: default)")
    args = parser.parse_args(argv)
    try:
        page = build(args.out, args.profile)
    except (FileExistsError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"[site] {page}: open it in a browser", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
