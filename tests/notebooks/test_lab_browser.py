"""The project's JupyterLab in a real browser, as a researcher uses it (issue 15).

Starts `ltrlib lab`'s server on 127.0.0.1 with a token, over a copy of the project's
notebooks (so autosave can only touch the copy), with the session at ``tiny`` and the
models of the session's tiny batch run. Debian's Chromium is driven with Playwright for
Python, launched on the system binary: nothing is downloaded. The test

* sees ``reports/`` in the root folder, opens ``notebooks/`` and then
  ``04_linear_merge.py`` by double-click, as a notebook, on the ``ltrlib`` kernel, with no
  "Select Kernel" dialog, and not marked modified;
* runs every cell, drags the α slider and picks another split in the dropdown, and checks
  that the figure and the table changed;
* replaces the run's models by models of other data (their sidecars say scale ``small``)
  and checks that rerunning refuses them with the command that trains the right ones;
* checks that the session left the notebook file byte-identical.

Screenshots go to the test's temporary folder (printed with ``-s``).
"""

import json
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from ltrlib import config, lab

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
RUN_ID = "browser"
NOTEBOOK = "04_linear_merge.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sync_playwright():
    if CHROMIUM is None:
        pytest.skip("Chromium not found (make test installs it as root: apt-get install chromium)")
    api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing: pip install -e '.[dev]'")
    return api.sync_playwright


@pytest.fixture(scope="module")
def lab_server(tiny_run, tiny_seed, tmp_path_factory, sync_playwright):
    """A project lab over a copy of the notebooks, at the tiny run's seed; yields (url, token,
    root, seed)."""
    root = tmp_path_factory.mktemp("lab_root")
    shutil.copytree(config.NOTEBOOKS_DIR, root / "notebooks")
    shutil.copy(config.PROJ_ROOT / "jupytext.toml", root / "jupytext.toml")
    run = root / "reports" / RUN_ID
    shutil.copytree(tiny_run / "models", run / "models")
    shutil.copy(tiny_run / "provenance.json", run / "provenance.json")

    lab.install()
    jupyter = tmp_path_factory.mktemp("jupyter")  # the user's ~/.jupyter stays out of it
    seed = tiny_seed
    env = lab.environment(scale="tiny", seed=seed, run_id=RUN_ID)
    env.update(LTRLIB_ROOT=str(root), LTRLIB_REPORTS_DIR=str(root / "reports"),
               LTRLIB_CACHE_DIR=str(root / "data" / "cache"),
               JUPYTER_CONFIG_DIR=str(jupyter / "config"), JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(jupyter / "workspaces"))
    port, token = _free_port(), secrets.token_hex(16)
    log = (jupyter / "server.log").open("w")
    proc = subprocess.Popen(lab.command(root=root, port=port, token=token, open_browser=False),
                            env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{(jupyter / 'server.log').read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on {url} within 90 s")
                time.sleep(0.5)
        yield url, token, root, seed
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def _all_cells_done(page):
    # A running or queued cell shows "[*]:" in its prompt.
    page.wait_for_function(
        "() => !Array.from(document.querySelectorAll('.jp-InputPrompt')).some(e => e.textContent.includes('*'))",
        timeout=240_000)


def _models_of_other_data(run):
    """Make the stored models look trained at another scale: what a session at ``tiny``
    meets after someone trained ``small`` models under the same run id."""
    for side in (run / "models").glob("*/*.json"):
        record = json.loads(side.read_text())
        record["info"]["provenance"] = {**record["info"]["provenance"], "scale": "small",
                                        "fingerprint": "0123456789abcdef"}
        side.write_text(json.dumps(record))


def test_notebook_04_in_jupyterlab(lab_server, sync_playwright, tmp_path):
    url, token, root, seed = lab_server
    notebook_file = root / "notebooks" / NOTEBOOK
    original = notebook_file.read_bytes()
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab?reset&token={token}")
            page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
            # Rooted at the project: the reports are one click away.
            assert page.locator('.jp-DirListing-item[title^="Name: reports"]').count() == 1
            page.locator('.jp-DirListing-item[title^="Name: notebooks"]').dblclick()
            page.locator(f'.jp-DirListing-item[title^="Name: {NOTEBOOK}"]').dblclick()

            # Opened as a notebook, on the project's kernel, without asking for one.
            page.wait_for_selector(".jp-NotebookPanel", timeout=30_000)
            page.wait_for_selector("text=Python (ltrlib) | Idle", timeout=60_000)
            assert page.locator(".jp-Dialog").count() == 0
            # Opened and untouched, it is not modified (closing it asks nothing).
            assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0
            page.screenshot(path=tmp_path / "1_opened.png")

            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            slider = page.locator(".widget-slider").first
            slider.wait_for(timeout=240_000)
            _all_cells_done(page)
            assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                                ":has-text('Error')").count() == 0
            slider.scroll_into_view_if_needed()
            explorer = slider.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
            readout = slider.locator(".widget-readout")

            def figure():
                return explorer.locator("img").first.get_attribute("src")

            def table():
                return explorer.locator("table").first.inner_text()

            figure0, table0, alpha0 = figure(), table(), readout.inner_text()
            page.screenshot(path=tmp_path / "2_explorer.png")

            # Drag the α handle to the left, as a user does.
            handle = slider.locator(".noUi-handle").bounding_box()
            y = handle["y"] + handle["height"] / 2
            page.mouse.move(handle["x"] + handle["width"] / 2, y)
            page.mouse.down()
            page.mouse.move(handle["x"] - 40, y, steps=5)
            page.mouse.up()
            _wait_until(lambda: figure() != figure0, 60, "the figure to redraw after the slider moved")
            assert readout.inner_text() != alpha0
            # The drag passes through intermediate α values, each redrawn in turn, and the
            # table is a second output of each redraw: wait until it shows where the handle
            # came to rest, not merely that it changed.
            _wait_until(lambda: f"alpha = {readout.inner_text()}" in table(), 60,
                        "the table to show the slider's final alpha")
            assert table() != table0
            page.screenshot(path=tmp_path / "3_slider_moved.png")

            # Another split and client: a new curve, and the slider jumps to its chosen α.
            figure1, table1 = figure(), table()
            pair = explorer.locator("select").first
            options = pair.locator("option").all_inner_texts()
            assert len(options) == 6  # 3 splits x 2 clients
            pair.select_option(index=2)
            _wait_until(lambda: figure() != figure1, 60, "the figure to redraw for another split")
            _wait_until(lambda: table() != table1, 30, "the table of the other split")
            page.screenshot(path=tmp_path / "4_other_split.png")

            # Models of other data under this run id are refused, with the way out.
            _models_of_other_data(root / "reports" / RUN_ID)
            page.get_by_role("menuitem", name="Kernel", exact=True).click()
            page.get_by_text("Restart Kernel and Run All Cells…", exact=True).click()
            page.locator(".jp-Dialog button:has-text('Restart')").click()
            error = page.locator(".jp-OutputArea-output:has-text('ProvenanceError')").first
            error.wait_for(timeout=120_000)

            def in_view():
                box = error.bounding_box()
                return box is not None and 0 <= box["y"] < page.viewport_size["height"]

            # Run All stopped there, and the error scrolled itself into view; the message
            # comes alone, without library frames before it.
            _wait_until(in_view, 10, "the error to scroll into view")
            message = error.inner_text()
            assert message.startswith("ProvenanceError: model")
            assert f"was trained on synthetic, scale small, seed {seed}" in message
            assert f"ltrlib run --only 03 --dataset synthetic --scale tiny --seed {seed} --run-id {RUN_ID} --force" \
                in " ".join(message.split())
            error.scroll_into_view_if_needed()
            page.screenshot(path=tmp_path / "5_refused.png")
        finally:
            browser.close()
    print(f"JupyterLab browser test: {time.monotonic() - started:.0f} s; screenshots in {tmp_path}")
    # Running, autosaving and restarting never rewrote the notebook file.
    assert notebook_file.read_bytes() == original


def _images_loaded(frame) -> tuple[int, int]:
    """(images that loaded, images) in a page or frame."""
    return tuple(frame.evaluate(
        "() => { const im = Array.from(document.images);"
        " return [im.filter(i => i.complete && i.naturalWidth > 0).length, im.length]; }"))


def test_the_report_reads_inside_jupyterlab(lab_server, sync_playwright, tiny_run, tmp_path):
    """The run's report opened from JupyterLab's file browser, as a researcher on a remote
    server reads it: index.html in JupyterLab's HTML viewer, and index.md with a notebook's
    page in its Markdown preview. Every figure loads in both, and a table link in the HTML
    viewer shows the table."""
    url, token, root, _ = lab_server
    shutil.copytree(tiny_run, root / "reports" / "report", ignore=shutil.ignore_patterns("models"))
    n_figures = len(list((tiny_run / "figures").glob("*/*.png")))
    ledger = tiny_run / "fidelity_section.html"  # the ledger's pictures, embedded in the page too
    n_pictures = n_figures + (ledger.read_text().count("<img ") if ledger.exists() else 0)
    notebook = "03_client_models"
    page_figures = len(list((tiny_run / "figures" / notebook).glob("*.png")))
    assert n_figures > 10 and page_figures > 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/reports/report?reset&token={token}")
            page.wait_for_selector('.jp-DirListing-item[title^="Name: index.html"]', timeout=60_000)
            page.locator('.jp-DirListing-item[title^="Name: index.html"]').dblclick()

            # The HTML viewer shows the page in a sandboxed frame: every figure is there.
            page.wait_for_selector(".jp-HTMLViewer iframe", timeout=60_000)
            title = f"Report {tiny_run.name}"  # the page names the run it was written for

            def report_frame():
                # The viewer loads the page from a blob: URL into its sandboxed frame.
                for f in page.frames:
                    try:
                        if f.url.startswith("blob:") and f.evaluate("() => document.title") == title:
                            return f
                    except Exception:  # noqa: BLE001 - a frame detached while we asked
                        continue
                return None

            _wait_until(lambda: report_frame() is not None, 120, "the report page in the HTML viewer")
            frame = report_frame()
            _wait_until(lambda: _images_loaded(frame)[1] == n_pictures, 60, "the report's figures")
            assert _images_loaded(frame) == (n_pictures, n_pictures)
            frame.locator(f'details[id="{notebook}"] > summary').click()  # not a table's fold inside
            frame.locator(f'details[id="{notebook}"] img').first.scroll_into_view_if_needed()
            page.screenshot(path=tmp_path / "report_1_html_viewer.png")

            # A table link shows the table in the viewer (issue 64, item 3): a link to another
            # file is refused there (403, "Blocking request from unknown origin"), a link into
            # the page reloads it from the server at the table's rows, with their fold open.
            link = frame.locator(f'details[id="{notebook}"] a:text-is("table")').first
            rows_id = link.get_attribute("href")[1:]
            with page.expect_event("framenavigated", lambda f: f.url.endswith(f"#{rows_id}"),
                                   timeout=60_000) as navigated:
                link.click()
            shown = navigated.value
            assert "/files/reports/report/index.html?_xsrf=" in shown.url
            visible = ("(id) => { const d = document.getElementById(id); const r = d && d.getBoundingClientRect();"
                       " return !!d && d.querySelectorAll('tr').length > 1 && r.height > 0"
                       " && r.top >= 0 && r.top < innerHeight; }")

            def table_shown():
                # evaluate, not wait_for_function: the sandbox runs no scripts, so no timers.
                page.wait_for_timeout(250)
                return shown.evaluate(visible, rows_id)

            _wait_until(table_shown, 60, f"the table {rows_id} in the HTML viewer")
            assert "Forbidden" not in shown.evaluate("() => document.body.innerText")
            page.screenshot(path=tmp_path / "report_1b_table_link.png")

            # index.md opens rendered (the project's lab settings), and a notebook's page
            # opens from its link, with its figures.
            page.locator('.jp-DirListing-item[title^="Name: index.md"]').dblclick()
            index = page.locator(".jp-MarkdownViewer .jp-RenderedMarkdown").last
            index.locator(f'a:text-is("{notebook}")').wait_for(timeout=30_000)
            page.screenshot(path=tmp_path / "report_2_markdown_index.png")
            index.locator(f'a:text-is("{notebook}")').click()
            rendered = page.locator(f".jp-MarkdownViewer .jp-RenderedMarkdown:has(h1:text-is('{notebook} (completed)'))")
            rendered.wait_for(timeout=30_000)
            loaded = ("(n) => Array.from(document.querySelectorAll('.jp-MarkdownViewer:not(.lm-mod-hidden) "
                      ".jp-RenderedMarkdown img')).filter(i => i.complete && i.naturalWidth > 0).length >= n")
            page.wait_for_function(loaded, arg=page_figures, timeout=30_000)
            rendered.locator("img").first.scroll_into_view_if_needed()
            page.screenshot(path=tmp_path / "report_3_notebook_page.png")
        finally:
            browser.close()
    print(f"report screenshots in {tmp_path}")
