"""The calculator page in a real headless browser: Debian's Chromium driven by Playwright (never `playwright install`:
the system's browser, offline). Load it, change the model and the length, see the verdict and both charts follow the
API's answers, copy the launch command, and open the address bar's link to get the same answer back; at 360 px wide
nothing scrolls sideways."""

from __future__ import annotations

import shutil
from urllib.parse import parse_qs, urlparse

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)", allow_module_level=True)
pytest.importorskip("starlette", reason="kvplan[serve] is not installed")
pytest.importorskip("uvicorn", reason="kvplan[serve] is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (the test extra)")

import kvplan  # noqa: E402
import serving  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with serving.running() as port, sync_api.sync_playwright() as playwright:
        profile = tmp_path_factory.mktemp("chromium-profile")
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True, viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=f"http://127.0.0.1:{port}")
        yield context, f"http://127.0.0.1:{port}/"
        context.close()


def _settled(page, previous: str | None = None) -> str:
    """Wait for an answer (and its curve) other than `previous`; the verdict's text."""
    page.wait_for_function("""prev => {
        const v = document.getElementById('verdict');
        return !v.classList.contains('pending') && v.textContent !== prev
               && document.getElementById('curve').dataset.state === 'drawn';
    }""", arg=previous, timeout=60_000)
    return page.inner_text("#verdict")


def _figure(page, name: str) -> str:
    return page.locator("#figures div", has_text=name).locator("dd").inner_text()


def test_the_page_answers_as_the_api_and_follows_the_inputs(site):
    context, url = site
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url)
    verdict = _settled(page)
    want = kvplan.estimate("llama-3.1-8b", seq="32K", batch=8, gpu="h100-sxm-80gb", gpus=1, engine="vllm")
    assert want.fits and verdict.startswith("Fits: 8 × 32,768 tokens")
    assert _figure(page, "Most sequences at this length") == f"{want.max_batch:,}"
    assert page.locator("#waterfall rect").count() == 6
    weights_bar = page.locator("#waterfall rect").nth(2).get_attribute("width")
    curve_8b = page.locator("#curve polyline").get_attribute("points")
    assert "--max-model-len 32768" in page.input_value("#launch")

    # another model: the verdict, the figures and both charts follow
    page.fill("#model", "llama-3.1-70b")
    verdict = _settled(page, verdict)
    want = kvplan.estimate("llama-3.1-70b", seq="32K", batch=8, gpu="h100-sxm-80gb", gpus=1, engine="vllm")
    assert want.fits is False and verdict.startswith("Does not")
    assert page.locator("#waterfall rect").nth(2).get_attribute("width") != weights_bar
    assert page.locator("#curve polyline").get_attribute("points") != curve_8b
    assert page.locator("#fixes li").count() >= 1

    # two GPUs and another length
    page.fill("#gpus", "4")
    page.fill("#seq", "8K")
    verdict = _settled(page, verdict)
    want = kvplan.estimate("llama-3.1-70b", seq="8K", batch=8, gpu="h100-sxm-80gb", gpus=4, engine="vllm")
    assert verdict.startswith("Fits: 8 × 8,192 tokens on 4") == bool(want.fits)
    assert _figure(page, "Most sequences at this length") == f"{want.max_batch:,}"
    query = parse_qs(urlparse(page.url).query)
    assert query["model"] == ["llama-3.1-70b"] and query["seq"] == ["8K"] and query["gpus"] == ["4"]
    launch = page.input_value("#launch")
    assert launch.startswith("vllm serve meta-llama/") and "--max-model-len 8192" in launch
    assert "--tensor-parallel-size 4" in launch

    # copy the command
    page.click("#copy")
    page.wait_for_function("() => document.getElementById('copied').textContent.length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == launch

    # the link reproduces the answer
    again = context.new_page()
    again.goto(page.url)
    assert _settled(again) == verdict
    assert again.input_value("#model") == "llama-3.1-70b" and again.input_value("#seq") == "8K"
    assert again.input_value("#launch") == launch
    assert errors == []


def test_errors_are_shown_where_the_api_puts_them(site):
    context, url = site
    page = context.new_page()
    page.goto(url + "?seq=lots")
    page.wait_for_selector("#error:not([hidden])", timeout=60_000)
    assert page.inner_text("#error").startswith("--seq — ")
    assert page.inner_text("#verdict") == "Cannot answer: check the inputs"


def test_a_phone_wide_page_does_not_scroll_sideways(site):
    context, url = site
    page = context.new_page()
    page.set_viewport_size({"width": 360, "height": 800})
    page.goto(url)
    _settled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    # every field has a label a screen reader reads
    unlabelled = page.evaluate("""[...document.querySelectorAll('input, select, textarea')]
        .filter(f => !f.labels || f.labels.length === 0).map(f => f.id)""")
    assert unlabelled == []
