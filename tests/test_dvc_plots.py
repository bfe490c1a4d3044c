"""DVC's views of the pipeline: `dvc plots show` writes a page that renders without network (vega
inline from vl-convert-python, cod.report.plots_page), checked in headless chromium; `dvc metrics show`
and `dvc dag` have forms narrow enough for a terminal, as the README gives them."""

import configparser
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from conftest import documentation
from cod.report import plots_page
from test_site import browser_paths

ROOT = Path(__file__).resolve().parents[1]
README = documentation()  # README.md and the docs pages it leads to
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")
DRAWN = ".vega-embed .chart-wrapper > .marks"  # the canvas or svg vega draws a plot into


def dvc(*args: str) -> str:
    done = subprocess.run([str(Path(sys.executable).with_name("dvc")), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_dvc_config_names_the_offline_template():
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    assert (ROOT / ".dvc" / config["plots"]["html_template"]).resolve() == plots_page.PAGE.resolve()


def test_a_bundle_that_would_break_the_page_is_refused():
    with pytest.raises(ValueError, match="contains </script"):
        plots_page.page("let s = '</script>';", "test")
    assert "{plot_divs}" in plots_page.page("window.vegaEmbed = 1;", "test")


@pytest.mark.slow
def test_the_plots_page_renders_offline_in_chromium(tmp_path):
    """Every plot of the page is drawn by vega (its `.marks` canvas or svg), and the page fetched nothing over
    the network."""
    paths = browser_paths()
    if paths is None:
        pytest.skip("no chromium and chromedriver, and apt-get could not install them (root and Debian's registry)")
    template = plots_page.write(tmp_path / "page.html")
    dvc("plots", "show", "--html-template", str(template), "-o", str(tmp_path / "plots"))
    page = tmp_path / "plots" / "index.html"
    html = page.read_text()
    assert not re.search(r"<script[^>]+src=", html), "a script loaded from elsewhere"
    plots = html.count("vegaEmbed('#")
    assert plots > 20  # an experiment's training loss each
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    try:
        driver.get(page.as_uri())
        drawn = 0
        for _ in range(120):
            drawn = driver.execute_script(f"return document.querySelectorAll('{DRAWN}').length")
            if drawn >= plots:
                break
            time.sleep(0.25)
        assert drawn == plots, f"{drawn} of {plots} plots drawn"
        assert driver.execute_script(f"return document.querySelector('{DRAWN}').getBoundingClientRect().width") > 100
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [name for name in fetched if not name.startswith(("file:", "data:", "blob:"))], fetched
    finally:
        driver.quit()


def readme_commands(program: str) -> list[str]:
    """The README's shell lines that run `program` (comments dropped)."""
    lines = [line.split("#")[0].strip() for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)
             for line in block.splitlines()]
    return [line for line in lines if line.startswith(program)]


@pytest.mark.slow
def test_the_readmes_metrics_and_graph_commands_print_narrow_lines():
    """`dvc metrics show` prints a row per file, a column per metric: thousands of characters a line.
    The README's forms print a value (or an edge) a line."""
    commands = readme_commands(".venv/bin/dvc metrics show") + readme_commands(".venv/bin/dvc dag")
    assert len(commands) == 2
    for command in commands:
        bin_dir = str(Path(sys.executable).parent)
        done = subprocess.run(command.replace(".venv/bin/", f"{bin_dir}/"), shell=True, cwd=ROOT, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
        assert done.returncode == 0, done.stderr[-2000:]
        lines = done.stdout.splitlines()
        assert len(lines) > 50 and max(map(len, lines)) <= 120, (command, max(map(len, lines)))
    metrics = json.loads(dvc("metrics", "show", "--json"))
    assert metrics[""]["data"]["figures/default/curves/finals.json"]["data"]
