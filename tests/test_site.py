"""The results site (cod.report.site): the report as its front page, every claim once, relative links that
resolve, and pages that work in a real browser (Debian's chromium, driven by selenium; installed
with apt-get when missing)."""

import os
import shutil
import subprocess
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pandas as pd
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from cod.claims.registry import load_registry
from cod.report import site

PROFILE = "default"
SECOND = site.claims_file(site.headline_profile(), PROFILE)  # the headline profile's claims page


class Links(HTMLParser):
    """The claim rows, link targets, element ids and filter options of a page."""

    def __init__(self):
        super().__init__()
        self.rows, self.targets, self.ids, self.options, self._select = [], [], set(), {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.ids |= {attrs["id"]} if attrs.get("id") else set()
        if tag == "tr" and attrs.get("id", "").startswith("claim-"):
            self.rows.append(attrs["id"].removeprefix("claim-"))
        self.targets += [attrs[key] for key in ("href", "src") if key in attrs]
        if tag == "select":
            self._select = self.options.setdefault(attrs["id"], [])
        if tag == "option" and attrs["value"]:
            self._select.append(attrs["value"])


@cache
def parse(path: Path) -> Links:
    parsed = Links()
    parsed.feed(path.read_text())
    return parsed


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """The built site's front page: the report."""
    return site.build(tmp_path_factory.mktemp("site") / "site", PROFILE)


@pytest.fixture(scope="module")
def claims_page(index) -> Path:
    return index.parent / "claims.html"


@pytest.fixture(scope="module")
def page(claims_page) -> Links:
    return parse(claims_page)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return site.claims(PROFILE)


def test_every_claim_appears_once(page, table):
    assert sorted(page.rows) == sorted(table["id"])


def assert_resolves_in_site(page: Path, root: Path) -> None:
    """Every link and image of `page` is relative and names a file of the site under `root`, and an
    element of it where the link has a fragment."""
    targets = parse(page).targets
    assert targets, page
    for target in targets:
        assert not urlparse(target).scheme and not target.startswith("/"), target
        url = urlparse(urljoin(page.as_uri(), target))
        found = Path(unquote(url.path))
        assert found.is_file() and found.resolve().is_relative_to(root.resolve()), target
        assert not url.fragment or unquote(url.fragment) in parse(found).ids, target


@pytest.mark.parametrize("name", ["index.html", "claims.html", SECOND])
def test_every_link_of_the_report_and_the_claims_pages_resolves_in_the_site(index, name):
    assert_resolves_in_site(index.parent / name, index.parent)


def test_the_report_leads_to_the_claims_and_every_notebook_link_is_a_site_page(index):
    targets = parse(index).targets
    assert {"claims.html", SECOND} <= set(targets)
    assert not [t for t in targets if ".ipynb" in t]
    assert any(t.startswith(f"{SECOND}#claim-") for t in targets)


def test_the_report_links_notebooks_and_claims_in_the_site_and_shows_other_files_as_text():
    pages = {"default": {"a5_norm": site.Pages(folder="default/a5_norm", notebook="default/a5_norm/notebook.html")}}
    tables = {"default": pd.DataFrame({"id": ["a5-gap:L=24"]})}
    markdown = ("# Report\n\n| effect |\n|---|\n"
                "| [ratio 0.9 [0.8, 1]](../notebooks/executed/default/a5_norm.ipynb) "
                "(`a5-gap:L=24`, stage `a5_norm`) |\n\n"
                "[ratio 1](../notebooks/executed/headline/a5_norm.ipynb) (`a5-gap:L=24`, stage `headline_a5_norm`); "
                "[the rule](../cod/claims/verdicts.py), [paper A](https://arxiv.org/abs/2502.05795), [below](#departures).\n\n"
                "## Departures\n")
    page = site.report_page(markdown, tables, pages, {"default": "claims.html"})
    assert ('<a href="default/a5_norm/notebook.html">ratio 0.9 [0.8, 1]</a> (<a href="claims.html#claim-a5-gap:L=24">'
            "<code>a5-gap:L=24</code></a>, stage <code>a5_norm</code>)") in page
    # a notebook of a profile the site lacks, and a file of the repository: their text
    assert "ratio 1 (<code>a5-gap:L=24</code>, stage <code>headline_a5_norm</code>); the rule, " in page
    assert '<a href="https://arxiv.org/abs/2502.05795">paper A</a>' in page
    assert '<a href="#departures">below</a>' in page and '<h2 id="departures">Departures</h2>' in page


def test_a_build_needs_the_report(tmp_path):
    with pytest.raises(FileNotFoundError, match="cod.report"):
        site.build(tmp_path / "site", PROFILE, report=tmp_path / "report.md")
    assert not (tmp_path / "site").exists()


def test_the_filters_list_every_verdict_paper_and_notebook(page, table):
    assert page.options["filter-verdict"] == site.verdicts_present(table)
    assert set(page.options["filter-verdict"]) == set(table["verdict"])
    assert set(page.options["filter-paper"]) == {"A", "B"}
    assert set(page.options["filter-notebook"]) == set(table["notebook"])


def test_the_headline_claims_are_registered_paper_claims_the_profile_judged(table):
    registry = load_registry()
    assert all(not registry[id_].ours for id_ in site.HEADLINE)
    assert set(site.HEADLINE) <= set(table["id"])


def test_a_headline_claim_takes_the_second_profile_verdict_of_its_id_or_stem(table):
    second = pd.DataFrame([{**table[table["id"] == "a4-lns-caps-variance"].iloc[0], "verdict": "reproduced"},
                           {**table[table["id"] == "b6-usefulness-higher:large"].iloc[0],
                            "id": "b6-usefulness-higher:wide", "verdict": "not reproduced"}])
    rows = site.headline_table(table, second, (PROFILE, "headline"), {}).split("<tr>")[2:]
    assert len(rows) == len(site.HEADLINE)
    found = {id_: row.split("</td>")[3] for id_, row in zip(site.HEADLINE, rows)}
    assert "v-reproduced" in found["a4-lns-caps-variance"]
    assert "v-not-reproduced" in found["b6-usefulness-higher:large"]
    assert all("not yet run" in cell for id_, cell in found.items() if not id_.startswith(("a4-", "b6-")))


@pytest.mark.parametrize("item, shown", [
    ("Fig. 4a", ["fig4a_variance.png"]),
    ("Fig. 4b-d", ["fig4bcd_weight_sparsity.png"]),
    ("Fig. 4", ["fig4a_variance.png", "fig4bcd_weight_sparsity.png"]),  # the whole figure: every part
    ("Fig. 3 (d)", ["fig3cd_layer_removal.png"]),
    ("Figs. 14-17", ["fig14_18_eval_lengths.png"]),
    ("Table 2", ["table2_scores.png"]),
    ("Table 6", []),
    ("Lemma 3.2", []),
])
def test_a_claim_links_the_figures_named_after_its_paper_item(item, shown):
    names = ["fig4a_variance.png", "fig4bcd_weight_sparsity.png", "fig3ab_angular_distance.png",
             "fig3cd_layer_removal.png", "fig14_18_eval_lengths.png", "table2_scores.png", "loss_curves.png"]
    assert site.figures_of(item, names) == shown


def test_a_build_never_empties_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        site.build(tmp_path, PROFILE)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def browser_paths() -> tuple[str, str] | None:
    """Debian's chromium and chromedriver, installed with apt-get (as root) when either is missing."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")) and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"]
        if subprocess.run(install, env=env, capture_output=True).returncode:  # a stale package list: update once
            subprocess.run(["apt-get", "update"], env=env, capture_output=True)
            subprocess.run(install, env=env, capture_output=True)
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    return (chromium, driver) if chromium and driver else None


@pytest.fixture(scope="module")
def browser():
    paths = browser_paths()
    if paths is None:
        pytest.skip("no chromium and chromedriver, and apt-get could not install them (it needs root and Debian's registry)")
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    yield driver
    driver.quit()


def visible_rows(driver, table_id: str) -> int:
    return driver.execute_script(
        f"return [...document.querySelectorAll('#{table_id} tbody tr')].filter(r => r.offsetParent !== null).length")


def test_the_claims_page_renders_and_filters_in_a_browser(browser, claims_page, table):
    browser.get(claims_page.as_uri())
    assert visible_rows(browser, "headline") == len(site.HEADLINE)
    assert visible_rows(browser, "claims") == len(table)
    Select(browser.find_element(By.ID, "filter-paper")).select_by_value("B")
    papers_b = int((table["paper"] == "B").sum())
    assert visible_rows(browser, "claims") == papers_b < len(table)
    assert browser.find_element(By.ID, "count").text.startswith(f"{papers_b} of {len(table)} claims shown")
    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("reproduced")
    both = int(((table["paper"] == "B") & (table["verdict"] == "reproduced")).sum())
    assert visible_rows(browser, "claims") == both


def test_a_claims_figure_and_notebook_open_in_a_browser(browser, claims_page):
    browser.get(claims_page.as_uri())
    row = browser.find_element(By.ID, "claim-a4-lns-caps-variance")
    figure = row.find_element(By.CSS_SELECTOR, "a.figure").get_attribute("href")
    notebook = row.find_element(By.CSS_SELECTOR, "a.notebook").get_attribute("href")
    for link in (figure, notebook):
        assert Path(unquote(urlparse(link).path)).is_file(), link
    browser.get(figure)
    assert browser.execute_script("return document.images[0].naturalWidth") > 0
    browser.get(notebook)  # a large page: on a loaded machine its cells may render after the load event
    assert WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".jp-Cell"))
    assert "a4_variance_dynamics" in browser.page_source


def test_a_number_of_the_report_opens_its_notebook_and_its_claim_in_a_browser(browser, index):
    browser.get(index.as_uri())
    effects = [a for a in browser.find_elements(By.CSS_SELECTOR, "td > a[href$='/notebook.html']")
               if any(c.isdigit() for c in a.text)]
    assert effects, "no number of the report links its notebook"
    effect, claim = effects[0], effects[0].find_element(By.XPATH, "following-sibling::a[1]")
    notebook = Path(unquote(urlparse(effect.get_attribute("href")).path))
    row, claim_id = claim.get_attribute("href"), claim.text  # read before the click leaves the page
    assert notebook.name == "notebook.html" and notebook.parent.parent.parent == index.parent
    assert row.endswith(f"#claim-{claim_id}")
    effect.click()  # a large page: on a loaded machine its cells may render after the load event
    assert WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".jp-Cell"))
    assert Path(unquote(urlparse(browser.current_url).path)) == notebook
    assert notebook.parent.name in browser.page_source
    browser.get(row)
    assert browser.find_element(By.ID, f"claim-{claim_id}").is_displayed()
