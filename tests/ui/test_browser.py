"""The decision explorer end to end in headless Chromium: click a pod and read its scores, sort by a
plugin, filter pending pods, step the affinity graph through time, open the report; against a
simulation report and against a running scheduler's /debug/decisions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmonic.testing.harness import Harness
from harmonic.ui.sources import LiveSource, ReportSource


def _open(page: Any, url: str) -> None:
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")


def _column(page: Any, header: str) -> list[int]:
    """The numbers in the score table's column titled ``header``, top to bottom."""
    headers = page.locator("#score-table thead th").all_inner_texts()
    i = [h.strip() for h in headers].index(header)
    return [int(t) for t in page.locator(f"#score-table tbody tr td:nth-child({i + 1})").all_inner_texts()]


@pytest.fixture
def live_page(page: Any, live_scheduler: tuple[Harness, str], explorer: Callable[..., str]) -> Any:
    """The explorer open on the live scheduler's decisions."""
    _open(page, explorer(LiveSource(live_scheduler[1])))
    return page


def test_click_a_live_pod_and_see_its_scores(live_page: Any):
    page = live_page
    assert page.locator("#decision-list li").count() == 2
    page.fill("#pod-search", "web")
    assert page.locator("#decision-list li").count() == 1
    page.click("#decision-list li >> text=default/web")
    page.wait_for_selector("#score-table")
    assert page.inner_text("#decision-result") == "Scheduled"
    assert page.inner_text("#decision-node") == "b"
    # Worked out by hand in tests/scheduler/test_decisions.py: a 62 + 3 x 0, b 75 + 3 x 100. The verdict
    # comes first; weighted scores by default, TaintToleration (300 apart) before NodeResourcesFit (13).
    assert (
        page.inner_text("#decision-verdict")
        == "b won by 313 over a: TaintToleration +300, NodeResourcesFit +13"
    )
    headers = [h.strip() for h in page.locator("#score-table thead th").all_inner_texts()]
    assert headers == ["Node", "Total", "TaintToleration", "NodeResourcesFit"]
    rows = {
        r.get_attribute("data-node"): r.locator("td").all_inner_texts()
        for r in page.locator("#score-table tbody tr").all()
    }
    assert rows == {"b": ["b", "375", "300", "75"], "a": ["a", "62", "0", "62"]}
    page.select_option("#score-mode", "raw")
    rows = {
        r.get_attribute("data-node"): r.locator("td").all_inner_texts()
        for r in page.locator("#score-table tbody tr").all()
    }
    assert rows == {"b": ["b", "375", "0", "75"], "a": ["a", "62", "1", "62"]}
    assert page.get_attribute("#score-table tbody tr:first-child", "class") == "chosen"
    assert page.inner_text("#decision-tiebreak") == "the only node with the best total (b)"
    verdicts = {
        r.get_attribute("data-node"): r.locator("td").all_inner_texts()[1:3]
        for r in page.locator("#filter-table tbody tr").all()
    }
    assert verdicts == {
        "small": ["UnschedulableAndUnresolvable", "NodeResourcesFit"],
        "tainted": ["UnschedulableAndUnresolvable", "TaintToleration"],
        "a": ["Success", ""],
        "b": ["Success", ""],
    }


def test_sort_scores_by_a_plugin(live_page: Any):
    page = live_page
    page.click("#decision-list li >> text=default/web")
    page.wait_for_selector("#score-table")
    assert _column(page, "Total") == [375, 62]  # best first
    page.click("#score-table th >> text=NodeResourcesFit")
    first = _column(page, "NodeResourcesFit")
    page.focus("#score-table th >> text=NodeResourcesFit")
    page.keyboard.press("Enter")  # headers sort from the keyboard too
    second = _column(page, "NodeResourcesFit")
    assert sorted([first, second]) == [[62, 75], [75, 62]]


def test_pending_live_pod_grouped_by_reason(live_page: Any):
    page = live_page
    page.click("button.tab[data-view=pending]")
    page.wait_for_selector("details.group")
    reasons = page.locator("details.group").evaluate_all("els => els.map(e => e.dataset.reason)")
    assert reasons == ["Insufficient cpu", "node(s) had untolerated taint(s)"]
    cpu = page.locator('details.group[data-reason="Insufficient cpu"] .rejection').all_inner_texts()
    # In the order the nodes were evaluated (small first).
    assert cpu == [
        "NodeResourcesFit: Insufficient cpu — 3 nodes: small, a, b",
        "TaintToleration: node(s) had untolerated taint(s) — 1 node: tainted",
    ]
    assert page.inner_text("#pending-count") == "1 pending pod"


def test_report_search_click_and_pending_filter(page: Any, report_explorer: str):
    _open(page, report_explorer)
    assert "report:" in page.inner_text("#source")
    page.fill("#pod-search", "default/huge")
    assert page.locator("#decision-list li").count() == 2  # one per profile
    page.locator("#decision-list li").first.click()
    page.wait_for_selector("#filter-table")
    assert page.inner_text("#decision-result") == "Unschedulable"
    assert page.inner_text("#decision-message").startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert page.locator("#filter-table tbody tr").count() == 3

    page.click("button.tab[data-view=pending]")
    page.wait_for_selector("details.group")
    assert page.inner_text("#pending-count") == "2 pending pods"
    page.fill("#pending-filter", "bin-packing")
    assert page.locator(".pending-pod").count() == 1
    assert page.inner_text("#pending-count") == "1 pending pod"
    page.fill("#pending-filter", "no such pod")
    assert page.locator(".pending-pod").count() == 0
    assert page.inner_text("#pending-groups") == "No pending pod."
    page.fill("#pending-filter", "huge")
    assert page.is_hidden("#view-decisions")
    page.locator(".pending-pod a").first.click()
    page.wait_for_selector("#decision-result")
    assert page.is_visible("#view-decisions") and page.is_hidden("#view-pending")


def test_report_scheduled_pod_scores(page: Any, report_explorer: str):
    _open(page, report_explorer)
    page.select_option("#profile-select", "default-scheduler")
    page.wait_for_function("document.querySelectorAll('#decision-list li').length > 0")
    page.fill("#pod-search", "default/web")
    page.locator("#decision-list li").first.click()
    page.wait_for_selector("#score-table")
    headers = [h.strip() for h in page.locator("#score-table thead th").all_inner_texts()]
    plugins = headers[2:]
    assert "NodeResourcesFit" in plugins and "TaintToleration" in plugins
    totals = _column(page, "Total")
    sums = [sum(v) for v in zip(*(_column(page, h) for h in plugins), strict=True)]
    assert totals == sums  # weighted scores are shown by default, and add up to the total
    assert page.inner_text("#decision-verdict").startswith(page.inner_text("#decision-node"))
    chosen = page.locator("#score-table tr.chosen td").first.inner_text()
    assert chosen == page.inner_text("#decision-node")


def test_affinity_graph_over_time(page: Any, report_explorer: str, report_dir: Path):
    _open(page, report_explorer)
    page.click("button.tab[data-view=graph]")
    page.wait_for_selector("#graph[data-nodes]")
    assert page.is_visible("#graph") and page.is_hidden("#view-decisions")
    services = 12  # Online Boutique, one replica each: every workload on one node
    assert int(page.get_attribute("#graph", "data-nodes")) == services
    assert int(page.get_attribute("#graph", "data-edges")) > 10
    assert "sample" in page.inner_text("#graph-time-label")
    page.eval_on_selector("#graph-time", "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    page.wait_for_function("document.querySelector('#graph-time-label').textContent.startsWith('t = 0s')")
    canvas = page.locator("#graph canvas").count()
    assert canvas > 0
    assert page.locator("#graph-profile option").count() == 2


def test_metrics_view_shows_the_report(page: Any, report_explorer: str):
    _open(page, report_explorer)
    page.click("button.tab[data-view=metrics]")
    frame = page.frame_locator("#report-frame")
    frame.locator(".js-plotly-plot").first.wait_for()
    assert "default-scheduler" in frame.locator("body").inner_text()


def test_token_is_required_and_the_printed_url_logs_in(
    page: Any, report_dir: Path, explorer: Callable[..., str]
):
    url = explorer(ReportSource(report_dir), token="s3cret")
    r = page.goto(url + "/")
    assert r.status == 401
    page.goto(url + "/?token=s3cret")
    page.wait_for_selector("body[data-ready=true]")
    assert page.url == url + "/"
    assert page.locator("#decision-list li").count() > 0


def test_first_screen_shows_the_verdict_and_pins_node_and_total(page: Any, report_explorer: str):
    """At a laptop's size the verdict is in view without scrolling, and the Node and Total columns stay
    put while the plugin columns scroll sideways."""
    page.set_viewport_size({"width": 1280, "height": 720})
    _open(page, report_explorer)
    page.select_option("#profile-select", "default-scheduler")
    page.wait_for_function("document.querySelectorAll('#decision-list li').length > 0")
    page.fill("#pod-search", "default/web")
    page.focus("#decision-list li")
    page.keyboard.press("Enter")  # the list answers the keyboard
    page.wait_for_selector("#score-table")
    verdict = page.locator("#decision-verdict").bounding_box()
    assert verdict is not None and verdict["y"] + verdict["height"] <= 720
    assert " won by " in page.inner_text("#decision-verdict") or "tied with" in page.inner_text(
        "#decision-verdict"
    )
    # Make the table overflow its pane, scroll it, and check the pinned cells did not move.
    page.eval_on_selector("#score-table", "t => { t.style.minWidth = '4000px'; }")
    before = [
        page.locator(f"#score-table tbody tr:first-child td:nth-child({i})").bounding_box() for i in (1, 2, 3)
    ]
    page.eval_on_selector(".table-wrap", "w => { w.scrollLeft = 1000; }")
    after = [
        page.locator(f"#score-table tbody tr:first-child td:nth-child({i})").bounding_box() for i in (1, 2, 3)
    ]
    assert [b["x"] for b in after[:2]] == [b["x"] for b in before[:2]]  # type: ignore[index]
    assert after[2]["x"] < before[2]["x"]  # type: ignore[index]
