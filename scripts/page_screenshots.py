"""Screenshots of the calculator page for docs/serve.md, at 1280 and 360 px wide, in Debian's Chromium (the same
browser tests/test_page.py drives).

    python scripts/page_screenshots.py      # writes docs/images/serve-1280.png and docs/images/serve-360.png
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import serving  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

QUERY = "?seq=64K&batch=16"  # Llama-3.1-8B on one H100 with vLLM: a "no", with its fixes and its curve


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with serving.running() as port, sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        for width in (1280, 360):
            page = context.new_page()
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/{QUERY}")
            page.wait_for_function("() => document.getElementById('curve').dataset.state === 'drawn'", timeout=60_000)
            target = ROOT / "docs" / "images" / f"serve-{width}.png"
            page.screenshot(path=str(target), full_page=True)
            print(f"wrote {target.relative_to(ROOT)}")
        context.close()


if __name__ == "__main__":
    main()
