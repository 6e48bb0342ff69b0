"""The run's report page in a real browser (issue 64): the session's tiny batch run
(`tiny_run`), its index.html opened in Debian's Chromium through Playwright, as
test_lab_browser.py drives it (the system binary; nothing is downloaded).

* the fidelity ledger's pictures load;
* a contents link opens its section and scrolls to it;
* a table link shows a readable HTML table (not a download), and the table's own page reads;
* with every section open, each section's first figure sits near its heading, and the page
  is at most half as tall as with every table's rows unfolded too.

Screenshots go to the test's temporary folder.
"""

import shutil

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def check_report_page(run_dir, shots, launch) -> dict:
    """Open ``run_dir``'s index.html in a browser from ``launch()`` and check it; return the
    page heights measured (sections open, and everything unfolded)."""
    index = (run_dir / "index.html").resolve().as_uri()
    browser = launch()
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(index)
        ledger = page.locator('details#ledger img')
        assert ledger.count() >= 2  # the verdict chart and a forest per paper with comparisons
        # A contents link opens its section and brings it into view.
        name = page.locator("details.section:not(#ledger)").nth(3).get_attribute("id")
        page.locator(f'a[href="#{name}"]').click()
        section = page.locator(f'details[id="{name}"]')
        assert section.evaluate("d => d.open")
        top = section.evaluate("d => d.getBoundingClientRect().top")
        assert -2 <= top < 200, f"section {name} opened {top:.0f} px down"
        page.screenshot(path=shots / "contents_link.png")
        page.locator("a[href='#ledger']").click()
        page.wait_for_function("() => Array.from(document.querySelectorAll('details#ledger img'))"
                               ".every(i => i.complete && i.naturalWidth > 0)")
        page.screenshot(path=shots / "ledger.png")
        heights = {"sections": page.evaluate(
            "() => { document.querySelectorAll('details.section').forEach(d => d.open = true);"
            " return document.body.scrollHeight; }")}
        # The figures lead: a section's first figure is within a screen of its heading.
        far = page.evaluate(
            "() => Array.from(document.querySelectorAll('details.section:not(#ledger)')).filter(d => d.querySelector("
            "'figure img')).map(d => [d.id, d.querySelector('figure img').getBoundingClientRect().top"
            " - d.getBoundingClientRect().top]).filter(([, dy]) => dy > 1000)")
        assert not far, f"first figure more than a screen below its section's heading: {far}"
        heights["everything"] = page.evaluate(
            "() => { document.querySelectorAll('details').forEach(d => d.open = true);"
            " return document.body.scrollHeight; }")
        # A table link shows the table's rows, readable, where a CSV link would download: a
        # link into the page, which opens the table's fold (and works in JupyterLab too).
        page.goto(index)
        link = page.locator('details.section:not(#ledger) a:text-is("table")').first
        rows_id = link.get_attribute("href")[1:]
        csv = page.locator(f'a[href="#{rows_id}"] ~ a[download]').first.get_attribute("href")
        page.locator(f'details.section:has(a[href="#{rows_id}"]) > summary').click()
        link.click()
        rows = page.locator(f'[id="{rows_id}"]')
        assert rows.locator("tr").count() > 1 and rows.locator("tr").nth(1).is_visible()
        top = rows.evaluate("d => d.getBoundingClientRect().top")
        assert 0 <= top < 200, f"table {rows_id} shown {top:.0f} px down"
        page.screenshot(path=shots / "table_link.png")
        # Every row is on the table's own page too, beside its CSV.
        page.goto((run_dir / csv).with_suffix(".html").resolve().as_uri())
        assert page.locator("table tr").count() > 1
        page.screenshot(path=shots / "table_page.png")
    finally:
        browser.close()
    return heights


def test_the_report_page_in_chromium(tiny_run, tmp_path):
    if CHROMIUM is None:
        pytest.skip("Chromium not found (make test installs it as root: apt-get install chromium)")
    api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing: pip install -e '.[dev]'")
    with api.sync_playwright() as p:
        heights = check_report_page(tiny_run, tmp_path,
                                    lambda: p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"]))
    assert heights["sections"] * 2 <= heights["everything"], heights
    print(f"report page heights {heights}; screenshots in {tmp_path}")
