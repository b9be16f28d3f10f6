"""The HTML report in a real browser: a report with failures (a wrong submission graded by the
real grader) opened in headless Chromium loads with no console message, makes no network
request (its Content-Security-Policy would block and log one) and shows its heatmaps and
curves. Skipped when Chromium is not installed; CI installs it (.ci/run)."""

from __future__ import annotations

import re

import chromium
import pytest
from test_failure_hints import ROLLOUT_KINDS
from test_report_visuals import MANHATTAN

from grader import catalog
from grader.engine.runner import grade
from grader.report.submission_html import write_report

pytestmark = pytest.mark.skipif(chromium.binary() is None,
                                reason="chromium is not installed (apt-get install chromium; "
                                       "CI installs it)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    sub = root / "submission"
    sub.mkdir()
    (sub / "grid_local_mask.py").write_text(MANHATTAN)
    (sub / "attention_rollout.py").write_text(ROLLOUT_KINDS)
    files = {"grid_local_mask": sub / "grid_local_mask.py",
             "attention_rollout": sub / "attention_rollout.py",
             "conv_via_attention": catalog.get("conv_via_attention").solution}
    result = grade(files, submission="browser-check")
    assert result.score < result.max_score
    return write_report(result, root / "report")


def test_report_loads_without_console_errors_or_network(report):
    page = chromium.load(report)
    assert page.returncode == 0
    assert page.console == []
    assert "<title>browser-check" in page.dom and page.dom.rstrip().endswith("</html>")


def test_heatmaps_and_curves_are_in_the_rendered_page(report):
    dom = chromium.load(report).dom
    heatmaps = re.findall(r'<svg class="figure heatmap"[^>]*>(.*?)</svg>', dom, re.S)
    assert len(heatmaps) >= 10
    assert all("<path" in h and 'class="worst"' in h for h in heatmaps)
    assert "where yours differs" in dom and "|difference|" in dom
    assert dom.count('<svg class="figure curve"') == 1
    assert dom.count('<svg class="figure line-diff"') == 0


def test_a_network_request_would_be_caught(tmp_path, report):
    """The check above would see a request: the same page with an external image logs the
    blocked load as a console message."""
    bad = tmp_path / "bad.html"
    bad.write_text(report.read_text().replace(
        "</main>", '<img src="http://127.0.0.1:9/x.png" alt=""></main>', 1))
    console = chromium.load(bad).console
    assert any("Content Security Policy" in m and "127.0.0.1" in m for m in console), console


def test_screenshot_of_the_report(tmp_path, report):
    png = chromium.screenshot(report, tmp_path / "report.png", 1100, 1400)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
