"""The committed report (``reports/index.html``) in a real browser: headless Chromium through Selenium.

At 1,280 px the page must not scroll sideways (wide tables scroll inside their box), every link must resolve (a
file beside the page, or an anchor on it), every image must load, and the summary table must be visible without
scrolling. Needs Debian's ``chromium`` and ``chromium-driver`` (``scripts/system_packages.sh`` installs them; CI runs
it); where they are missing the test skips and says so. ``BIASLAB_SCREENSHOTS=DIR`` also saves the top of the page
there (``docs/img/report-top.png`` was made that way).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

PAGE = REPO / "reports" / "index.html"
WIDTH, HEIGHT = 1280, 900


def _driver():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("headless Chromium is not installed (Debian: chromium chromium-driver; scripts/system_packages.sh)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[dev])")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=opts)


@pytest.fixture(scope="module")
def browser():
    if not PAGE.is_file():
        pytest.skip(f"{PAGE} is not built (dvc repro report)")
    drv = _driver()
    try:
        drv.set_window_size(WIDTH, HEIGHT)
        drv.get(PAGE.as_uri())
        yield drv
    finally:
        drv.quit()


def test_no_horizontal_overflow_at_1280_px(browser):
    inner, scroll = browser.execute_script(
        "return [window.innerWidth, document.documentElement.scrollWidth]")
    assert inner <= WIDTH and scroll <= inner, f"the page scrolls sideways: {scroll} px content in {inner} px"
    wide = browser.execute_script("""
        return [...document.querySelectorAll('body *')].filter(el => {
            const r = el.getBoundingClientRect();
            return r.right > window.innerWidth + 1 && !el.closest('.scroll');
        }).map(el => el.tagName + ' ' + (el.id || el.className || el.textContent.slice(0, 40))).slice(0, 5)""")
    assert not wide, f"elements wider than the window outside a scrolling box: {wide}"


def test_every_link_and_image_resolves(browser):
    links = browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")
    ids = set(browser.execute_script("return [...document.querySelectorAll('[id]')].map(e => e.id)"))
    broken = []
    for href in links:
        url = urlparse(href)
        if url.scheme != "file":
            broken.append(href)  # the report links only files beside it and anchors on itself
            continue
        if url.fragment and Path(unquote(url.path)) == PAGE:
            if unquote(url.fragment) not in ids:
                broken.append(href)
        elif not Path(unquote(url.path)).is_file():
            broken.append(href)
    assert not broken, f"{len(broken)} of {len(links)} links do not resolve: {broken[:5]}"
    images = browser.execute_script(
        "return [...document.images].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])")
    assert images and all(ok for _, ok in images), [src for src, ok in images if not ok]
    assert len({src for src, _ in images}) == len(images), "a figure is embedded twice"


def test_every_table_and_figure_links_the_notebook_that_made_it(browser):
    missing = browser.execute_script("""
        const out = [];
        for (const fig of document.querySelectorAll('figure')) {
            if (!fig.querySelector("figcaption a[href$='.ipynb']")) out.push(fig.querySelector('img').getAttribute('src'));
        }
        for (const box of document.querySelectorAll('.scroll')) {
            const before = box.previousElementSibling;
            if (box.closest('#summary') || box.querySelector('#summary') || !before) continue;
            if (!before.querySelector("a[href$='.ipynb']") && !box.querySelector("a[href$='.ipynb']"))
                out.push(before.textContent.slice(0, 60));
        }
        return out""")
    assert not missing, f"tables / figures without a link to their notebook: {missing[:5]}"


def test_the_summary_is_visible_without_scrolling(browser):
    bottom = browser.execute_script("return document.getElementById('summary').getBoundingClientRect().bottom")
    assert bottom <= HEIGHT, f"the summary table ends at {bottom} px, below the first screen ({HEIGHT} px)"
    folder = os.environ.get("BIASLAB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / "report-top.png"))
