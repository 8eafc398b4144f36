"""The web view's Board tab, end to end in a real headless Chromium (Playwright) against a real `memcli serve`
(hash embedder, a configured job): seeded cards in their columns, create, move (its memory shows up in the
memory list), a stale move's conflict, a forbidden move's error, a job run, card text kept as text.

Skips (with the reason) when no Chromium is installed, like tests/test_web_ui.py whose helpers it reuses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _web_checks as wc
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

pytestmark = pytest.mark.slow

CONFIG = """
[jobs.check]
command = ["sh", "-c", "echo checking $MEMCLI_TASK_ID; exit 0"]
timeout = 30
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("webboard")
    home = tmp / "home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    srv = start_server(MEMCLI, hash_env(tmp), home)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def api(server: ServerProc) -> Iterator[httpx.Client]:
    with server.client(timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def seeded(api: httpx.Client) -> dict[str, Any]:
    """A namespace with a memory and three cards: T-1 in doing (linked to the memory), T-2 in todo, T-3 (the
    XSS card) in backlog."""
    ns = "wb-" + uuid.uuid4().hex[:8]
    mem = api.post("/api/memories", json={"content": "The upload test fails on files over 2 GiB (int32 size).",
                                          "agent": "codex", "namespace": ns}).json()["memory_id"]

    def card(title: str, **kw: Any) -> str:
        r = api.post("/api/board/tasks", json={"title": title, "namespace": ns, **kw})
        assert r.status_code == 201, r.text
        return r.json()["task_id"]

    ids = {"upload": card("Fix the upload test", status="doing", assignee="codex", labels=["bug", "ci"],
                          description="Fails on big files.", memory_ids=[mem]),
           "docs": card("Write the board docs", status="todo", assignee="claude-code"),
           "xss": card(wc.XSS, description=wc.XSS, labels=["security"])}
    return {"ns": ns, "ids": ids, "memory": mem}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with wc.browser_or_skip() as b:
        yield b


@pytest.fixture(scope="module")
def page(browser: Any, server: ServerProc, api: httpx.Client, seeded: dict[str, Any]) -> Iterator[Any]:
    """One signed-in page on the Board tab of the seeded namespace."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
    open_board(pg)
    yield pg
    ctx.close()


def open_board(pg: Any) -> None:
    pg.click("#tab-board")
    pg.wait_for_selector("#board-view:not([hidden]) .board-card")


def open_card(pg: Any, task_id: str) -> None:
    pg.click(f".board-card[data-id='{task_id}']")
    pg.wait_for_function("id => !document.getElementById('card-detail').hidden && "
                         "document.getElementById('c-id').textContent === id", arg=task_id)


def move(pg: Any, to: str, reason: str = "") -> str:
    """Move the open card from the detail panel; returns the message shown."""
    pg.select_option("#c-to", to)
    pg.fill("#c-reason", reason)
    pg.evaluate("document.getElementById('c-msg').className = 'msg'")
    pg.click("#c-move")
    pg.wait_for_selector("#c-msg.ok, #c-msg.error")
    return pg.text_content("#c-msg") or ""


def column_of(pg: Any, task_id: str) -> str:
    return pg.get_attribute(f".board-col:has(.board-card[data-id='{task_id}'])", "data-status")


def test_board_script_sets_text_only(server: ServerProc) -> None:
    js = httpx.get(f"{server.url}/static/board.js").text
    assert "boardRefresh" in js
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in js


def test_board_shows_the_seeded_cards_in_their_columns(page: Any, seeded: dict[str, Any]) -> None:
    ids = seeded["ids"]
    cols = page.eval_on_selector_all(".board-col", "els => els.map(e => e.dataset.status)")
    assert cols == ["backlog", "todo", "doing", "review", "done"]
    assert [column_of(page, ids[k]) for k in ("upload", "docs", "xss")] == ["doing", "todo", "backlog"]
    up = page.locator(f".board-card[data-id='{ids['upload']}']")
    assert up.locator(".bc-title").text_content() == "Fix the upload test"
    assert "codex" in up.text_content() and "bug" in up.text_content() and "ci" in up.text_content()
    # the detail: description, linked memory (opens in the memory panel), no run yet
    open_card(page, ids["upload"])
    assert page.text_content("#c-desc") == "Fails on big files."
    chips = page.eval_on_selector_all("#c-chips .chip", "els => els.map(e => e.textContent)")
    assert chips == ["codex", "bug", "ci"]
    assert "The upload test fails on files over 2 GiB" in page.text_content("#c-mems")
    assert page.text_content("#c-run-info") == "none"
    page.click(f"#c-mems li[data-id='{seeded['memory']}'] button")
    page.wait_for_function("id => !document.getElementById('detail').hidden && "
                           "document.getElementById('d-id').title === id", arg=seeded["memory"])


def test_card_text_is_escaped(page: Any, seeded: dict[str, Any]) -> None:
    xss = seeded["ids"]["xss"]
    assert page.locator(f".board-card[data-id='{xss}'] .bc-title").text_content() == wc.XSS
    open_card(page, xss)
    assert page.text_content("#c-title") == wc.XSS and page.text_content("#c-desc") == wc.XSS
    assert page.locator("#board-view img, #board-view script, #card-detail img").count() == 0
    assert page.evaluate("window.__xss") is None and page.errors == []


def test_create_a_card(page: Any, api: httpx.Client, seeded: dict[str, Any]) -> None:
    page.click("#board-new")
    page.fill("#nc-title", "Add <b>retries</b> to the uploader")
    page.fill("#nc-desc", "Three tries with backoff.")
    page.fill("#nc-assignee", "openclaw")
    page.fill("#nc-labels", "feature, uploader")
    page.click("#nc-create")
    page.wait_for_selector("#board-msg.ok")
    task_id = page.text_content("#board-msg").removeprefix("Created ").rstrip(".")
    stored = api.get(f"/api/board/tasks/{task_id}", params={"namespace": seeded["ns"]}).json()
    assert (stored["title"], stored["description"], stored["assignee"], stored["labels"], stored["status"]) == (
        "Add <b>retries</b> to the uploader", "Three tries with backoff.", "openclaw", ["feature", "uploader"],
        "backlog")
    assert column_of(page, task_id) == "backlog" and page.text_content("#c-id") == task_id  # shown and opened
    # no title: the server's error, on the form
    page.click("#board-new")
    page.fill("#nc-title", "   ")
    page.click("#nc-create")
    page.wait_for_selector("#nc-msg.error")
    assert "title" in page.text_content("#nc-msg")


def test_move_records_a_memory_shown_in_the_memory_list(page: Any, api: httpx.Client, seeded: dict[str, Any]) -> None:
    task_id = seeded["ids"]["upload"]
    open_card(page, task_id)
    msg = move(page, "review", "tests pass on 3 GiB files")
    assert msg.startswith(f"Moved {task_id} doing → review"), msg
    assert api.get(f"/api/board/tasks/{task_id}", params={"namespace": seeded["ns"]}).json()["status"] == "review"
    assert column_of(page, task_id) == "review" and page.text_content("#c-status").startswith("review")
    memory_id = page.get_attribute("#c-msg button[data-memory]", "data-memory")
    # the panel keeps the card's memories: the linked one, and the move's own (tagged with the card's id)
    assert "The upload test fails on files over 2 GiB" in page.text_content(f"#c-mems li[data-id='{seeded['memory']}']")
    assert "doing → review: tests pass on 3 GiB files" in page.text_content(f"#c-mems li[data-id='{memory_id}']")
    assert page.text_content("#c-mem-count") == "2" == str(page.locator("#c-mems li[data-id]").count())
    page.click("#tab-memories")
    item = page.wait_for_selector(f"#list .mem[data-id='{memory_id}']")
    assert f'moved {task_id} "Fix the upload test" doing → review: tests pass on 3 GiB files' in item.text_content()
    wc.search(page, "upload test review", memory_id)
    open_board(page)


def test_stale_move_shows_the_conflict_and_reloads_the_card(page: Any, api: httpx.Client,
                                                            seeded: dict[str, Any]) -> None:
    task_id, ns = seeded["ids"]["docs"], seeded["ns"]
    open_card(page, task_id)  # todo, version 1
    r = api.post(f"/api/board/tasks/{task_id}/move", json={"to_status": "doing", "agent": "gemini", "namespace": ns})
    assert r.status_code == 200, r.text
    msg = move(page, "doing", "starting")
    assert msg == "Not moved: version conflict."
    page.wait_for_selector("#c-conflict:not([hidden])")
    text = page.text_content("#c-conflict-text")
    assert "You opened version 1 (in todo); it is now version 2, in doing" in text, text
    assert page.text_content("#c-status") == "doing · v2"  # the card as stored now
    stored = api.get(f"/api/board/tasks/{task_id}", params={"namespace": ns}).json()
    assert (stored["status"], stored["version"]) == ("doing", 2)  # nothing moved twice
    page.wait_for_function("id => document.querySelector(`.board-col[data-status='doing'] "
                           ".board-card[data-id='${id}']`)", arg=task_id)


def test_forbidden_move_shows_the_transition_error(page: Any, api: httpx.Client, seeded: dict[str, Any]) -> None:
    task_id = seeded["ids"]["xss"]
    open_card(page, task_id)  # backlog: done is three columns ahead
    msg = move(page, "done", "skip it")
    assert msg.startswith("Not moved: cannot move from backlog to done") and "one column at a time" in msg, msg
    assert page.is_hidden("#c-conflict")
    assert api.get(f"/api/board/tasks/{task_id}", params={"namespace": seeded["ns"]}).json()["status"] == "backlog"


def test_run_a_configured_job_and_see_its_result(page: Any, seeded: dict[str, Any]) -> None:
    task_id = seeded["ids"]["docs"]
    open_card(page, task_id)
    assert page.eval_on_selector_all("#c-job option", "els => els.map(e => e.value)") == ["check"]
    page.click("#c-run")
    page.wait_for_selector("#c-msg.ok:text('Started job check')")
    page.wait_for_selector("#c-run-info .job-succeeded", timeout=20_000)
    assert f"checking {task_id}" in page.text_content("#c-run-info pre.log")
    page.wait_for_selector(f".board-card[data-id='{task_id}'] .job-succeeded")
    assert page.errors == []


def test_board_on_a_phone(browser: Any, server: ServerProc, api: httpx.Client, seeded: dict[str, Any]) -> None:
    """At 360×740 the board never scrolls the page sideways: its columns scroll in their own box (the last one
    reachable), and a card's panel (move, memories) fits the screen."""
    ctx = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    try:
        pg = ctx.new_page()
        wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
        open_board(pg)
        assert wc.page_width(pg) <= 360
        cols = pg.locator("#board-cols")
        assert cols.evaluate("e => e.scrollWidth > e.clientWidth")  # five columns: they scroll in the box
        cols.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        last = pg.locator(".board-col[data-status='done']")
        box, frame = last.bounding_box(), cols.bounding_box()
        assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1  # the last column scrolled into view
        open_card(pg, seeded["ids"]["upload"])
        assert wc.page_width(pg) <= 360
        assert not wc.off_screen(pg, ["#c-to", "#c-reason", "#c-move", "#c-close", "#board-new", "#tab-memories"])
        assert "The upload test fails on files over 2 GiB" in pg.text_content("#c-mems")
    finally:
        ctx.close()
