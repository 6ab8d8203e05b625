"""The built documentation in a real browser: Debian's headless chromium opens the front page and
an example page, takes a screenshot of each (docs/_build/screenshots/), and the example's
figures are checked to have loaded in the browser (every <img> complete with a natural width)
and to be non-blank images.

Skipped when chromium is not installed, unless ``COLLOC_REQUIRE_BROWSER=1`` (.ci/run sets it
after installing chromium).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.xdist_group("docs")

#: The example page whose figures are checked (a notebook with several figures).
EXAMPLE = "examples/pendulum.html"

#: Added before </body> of a copy of the page: once everything has loaded, the state of each
#: image as the browser sees it is written into the DOM, which --dump-dom then prints.
PROBE = """<script>
window.addEventListener("load", function () {
  var seen = Array.prototype.map.call(document.images, function (img) {
    return {src: img.getAttribute("src"), complete: img.complete, width: img.naturalWidth, height: img.naturalHeight};
  });
  document.body.setAttribute("data-images", JSON.stringify(seen));
});
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("COLLOC_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed and COLLOC_REQUIRE_BROWSER=1")
        pytest.skip("chromium is not installed")
    return found


def browse(url: str, *args: str) -> subprocess.CompletedProcess:
    """Headless chromium on ``url`` (as root it needs --no-sandbox; no GPU on CI)."""
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", "--virtual-time-budget=10000", *args, url]
    return subprocess.run(command, check=False, capture_output=True, text=True)


def screenshot(page: Path, out: Path) -> np.ndarray:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    proc = browse(page.as_uri(), f"--screenshot={out}", "--window-size=1280,1600")
    assert out.exists(), proc.stderr[-2000:]
    return np.asarray(Image.open(out).convert("L"), dtype=float)


def test_the_front_page_in_a_browser(built_docs):
    assert built_docs.returncode == 0, built_docs.failure()
    pixels = screenshot(built_docs.html / "index.html", built_docs.html.parent / "screenshots" / "front_page.png")
    assert pixels.shape == (1600, 1280)
    assert pixels.std() > 10, "the front page's screenshot is blank"
    dom = browse((built_docs.html / "index.html").as_uri(), "--dump-dom").stdout
    assert "<h1>colloc" in dom and "Getting started" in dom


def test_an_example_page_and_its_figures_in_a_browser(built_docs):
    assert built_docs.returncode == 0, built_docs.failure()
    page = built_docs.html / EXAMPLE
    pixels = screenshot(page, built_docs.html.parent / "screenshots" / "example_pendulum.png")
    assert pixels.std() > 10, "the example's screenshot is blank"

    probe = page.with_name("_browser_probe.html")  # beside the page: its relative links hold
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        dom = browse(probe.as_uri(), "--dump-dom").stdout
    finally:
        probe.unlink()
    found = re.search(r'<body[^>]*data-images="([^"]*)"', dom)
    assert found, "the page did not finish loading in the browser"
    images = [img for img in json.loads(unescape(found.group(1))) if "_images/" in (img["src"] or "")]
    assert len(images) >= 2, f"the example shows {len(images)} figures"
    for img in images:
        assert img["complete"] and img["width"] > 100 and img["height"] > 100, f"not loaded: {img}"
        data = np.asarray(Image.open(page.parent / img["src"]).convert("L"), dtype=float)
        assert data.shape == (img["height"], img["width"])
        assert data.std() > 5, f"{img['src']} is blank"
