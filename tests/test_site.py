"""The results site (cod.site): every claim once, relative links that resolve, and pages that work
in a real browser (Debian's chromium, driven by selenium; installed with apt-get when missing)."""

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from cod import site
from cod.registry import load_registry

PROFILE = "default"


class Links(HTMLParser):
    """The claim rows, link targets and filter options of a page."""

    def __init__(self):
        super().__init__()
        self.rows, self.targets, self.options, self._select = [], [], {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and attrs.get("id", "").startswith("claim-"):
            self.rows.append(attrs["id"].removeprefix("claim-"))
        self.targets += [attrs[key] for key in ("href", "src") if key in attrs]
        if tag == "select":
            self._select = self.options.setdefault(attrs["id"], [])
        if tag == "option" and attrs["value"]:
            self._select.append(attrs["value"])


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return site.build(tmp_path_factory.mktemp("site") / "site", PROFILE)


@pytest.fixture(scope="module")
def page(index) -> Links:
    parsed = Links()
    parsed.feed(index.read_text())
    return parsed


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return site.claims(PROFILE)


def test_every_claim_appears_once(page, table):
    assert sorted(page.rows) == sorted(table["id"])


def test_links_are_relative_and_resolve(index, page):
    assert page.targets
    for target in page.targets:
        assert not urlparse(target).scheme and not target.startswith("/"), target
        path = target.split("#")[0]
        assert not path or (index.parent / unquote(path)).is_file(), target


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


def test_the_page_renders_and_filters_in_a_browser(browser, index, table):
    browser.get(index.as_uri())
    assert visible_rows(browser, "headline") == len(site.HEADLINE)
    assert visible_rows(browser, "claims") == len(table)
    Select(browser.find_element(By.ID, "filter-paper")).select_by_value("B")
    papers_b = int((table["paper"] == "B").sum())
    assert visible_rows(browser, "claims") == papers_b < len(table)
    assert browser.find_element(By.ID, "count").text.startswith(f"{papers_b} of {len(table)} claims shown")
    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("reproduced")
    both = int(((table["paper"] == "B") & (table["verdict"] == "reproduced")).sum())
    assert visible_rows(browser, "claims") == both


def test_a_claims_figure_and_notebook_open_in_a_browser(browser, index):
    browser.get(index.as_uri())
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
