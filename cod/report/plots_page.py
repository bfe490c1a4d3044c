"""The page template of `dvc plots show`, readable offline: vega, vega-lite and vega-embed come
inline from an installed package (vl-convert-python) instead of the CDN links of dvc-render.

    python -m cod.report.plots_page        # writes .cache/dvc_plots_page.html (`make install` runs it)

dvc-render fills an HTML template: `{plot_divs}` with a <div> per plot whose script calls
`vegaEmbed`, `{scripts}` with three <script> tags that fetch the libraries from a CDN, so that
without network the page stays blank. This template has no `{scripts}`: it carries the
libraries in one inline script, `vl_convert.javascript_bundle()` (vega-embed, vega-lite and
vega with their dependencies, as vl-convert ships them; vega-lite of the major version the
plot templates of `.dvc/plots/` declare). `.dvc/config` names the file (`plots.html_template`,
relative to `.dvc/`), so a plain `dvc plots show` writes a page that renders with no network.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cod import ROOT

PAGE = ROOT / ".cache" / "dvc_plots_page.html"  # .dvc/config: html_template = ../.cache/dvc_plots_page.html
PLOT_TEMPLATES = ROOT / ".dvc" / "plots"
PLACEHOLDERS = ("{plot_divs}", "{refresh_tag}", "{scripts}")  # what dvc-render replaces in a template
TEMPLATE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
{refresh_tag}
<title>DVC plots</title>
<!-- vega COMMENT, inline: this page needs no network -->
<script>
BUNDLE
</script>
<style>table { border-spacing: 15px; }</style>
</head>
<body>
{plot_divs}
</body>
</html>
"""


def vega_lite_major(templates: Path = PLOT_TEMPLATES) -> str:
    """The vega-lite major version the plot templates declare ('5' for .../vega-lite/v5.json); all
    must declare the same one."""
    majors = {json.loads(path.read_text())["$schema"].rsplit("/v", 1)[1].split(".")[0]
              for path in sorted(templates.glob("*.json"))}
    if len(majors) != 1:
        raise ValueError(f"the plot templates of {templates} declare vega-lite {sorted(majors)}: "
                         "one major version needed")
    return majors.pop()


def bundle(major: str) -> tuple[str, str]:
    """vl-convert's JavaScript bundle with the newest vega-lite of version `major`, and a line
    naming the versions in it."""
    import vl_convert  # lazy: a large extension module; only this command needs it

    versions = [v for v in vl_convert.get_vegalite_versions() if v.split(".")[0] == major]
    if not versions:
        raise ValueError(f"vl-convert-python {vl_convert.__version__} ships no vega-lite {major}: "
                         f"allowed: {', '.join(vl_convert.get_vegalite_versions())}")
    vega_lite = max(versions, key=lambda v: tuple(map(int, v.split("."))))
    script = vl_convert.javascript_bundle(vl_version=vega_lite)
    named = (f"{vl_convert.get_vega_version()}, vega-lite {vega_lite}, "
             f"vega-embed {vl_convert.get_vega_embed_version()} from vl-convert-python {vl_convert.__version__}")
    return script, named


def page(script: str, named: str) -> str:
    """The template around `script`; refused if the script would end its <script> element or
    holds a placeholder dvc-render would replace."""
    clashes = [text for text in ("</script", *PLACEHOLDERS) if text in script]
    if clashes:
        raise ValueError(f"the bundle contains {', '.join(clashes)}: it cannot be inlined as it is")
    return TEMPLATE.replace("COMMENT", named).replace("BUNDLE", script)


def write(path: Path = PAGE) -> Path:
    """Write the offline template to `path`; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(*bundle(vega_lite_major())), encoding="utf8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.report.plots_page", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=PAGE,
                        help=f"where the template goes (default {PAGE.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    try:
        path = write(args.out)
    except (ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"[plots page] {path}: `dvc plots show` pages render offline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
