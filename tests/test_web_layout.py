"""The web view's layout in a real headless Chromium (Playwright) against a real `memcli serve` (hash embedder):

- on a phone (390×844) what a person opens comes into view: the search results below the chart, a memory's
  editor below the list, a board card's panel below the board;
- on a desktop (1100 px and wider) the board's five columns stand side by side, the last one (done) whole;
- Chinese text has fonts to render with: the stylesheet names the CJK faces of each system and, where one is
  installed (Debian: fonts-noto-cjk), a Chinese glyph is drawn by it, not as the box of a missing glyph.

Skips (with the reason) when no Chromium is installed, like tests/test_web_ui.py whose helpers it reuses.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _web_checks as wc
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}
COLUMNS = ["backlog", "todo", "doing", "review", "done"]
CJK_FACES = ("Noto Sans CJK SC", "Noto Sans CJK TC", "PingFang SC", "Microsoft YaHei", "Hiragino Sans GB")
CHINESE = "部署前先运行数据库迁移，否则账单服务会报错。"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("weblayout")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "home")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def api(server: ServerProc) -> Iterator[httpx.Client]:
    with server.client(timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def seeded(api: httpx.Client) -> dict[str, Any]:
    """A namespace with the web checks' memories (37), a Chinese one, and a card in each of the five columns."""
    ns = "wl-" + uuid.uuid4().hex[:8]
    out = wc.seed(api, ns)
    r = api.post("/api/memories", json={"content": CHINESE, "agent": "codex", "namespace": ns})
    r.raise_for_status()
    out["chinese"] = r.json()["memory_id"]
    cards = {}
    for status in COLUMNS:
        r = api.post("/api/board/tasks", json={"title": f"A card waiting in {status}", "namespace": ns,
                                               "status": status, "assignee": "codex", "labels": ["layout"]})
        assert r.status_code == 201, r.text
        cards[status] = r.json()["task_id"]
    out.update(ns=ns, cards=cards)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with wc.browser_or_skip() as b:
        yield b


@pytest.fixture
def phone(browser: Any, server: ServerProc, api: httpx.Client, seeded: dict[str, Any]) -> Iterator[Any]:
    ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
    yield pg
    ctx.close()


def in_view(pg: Any, selector: str) -> dict[str, float]:
    """The box of ``selector`` in viewport coordinates, with the viewport's height."""
    return pg.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                         "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, "
                                         "h: window.innerHeight, w: window.innerWidth, scrollY: window.scrollY}; }")


def wholly_in_view(pg: Any, selector: str) -> None:
    box = in_view(pg, selector)
    assert 0 <= box["top"] and box["bottom"] <= box["h"] + 0.5, f"{selector} is off screen: {box}"
    assert 0 <= box["left"] and box["right"] <= box["w"] + 0.5, f"{selector} is off screen: {box}"


def wait_scrolled_to(pg: Any, selector: str) -> None:
    """Wait until the head of ``selector`` is on screen (the page scrolls once it has rendered)."""
    pg.wait_for_function("s => { const r = document.querySelector(s).getBoundingClientRect(); "
                         "return r.top >= 0 && r.top < window.innerHeight - 40; }", arg=selector, timeout=5000)


def tap(pg: Any, selector: str) -> None:
    """Scroll to ``selector`` and tap it, as a person does: where the page goes next is the page's doing."""
    pg.locator(selector).first.scroll_into_view_if_needed()
    pg.locator(selector).first.tap()


# ---------------------------------------------------------------------------------------------- the phone
def test_phone_search_results_come_into_view(phone: Any, seeded: dict[str, Any]) -> None:
    target = seeded["ids"][wc.FACTS[7][2]]
    phone.evaluate("window.scrollTo(0, 0)")
    wc.search(phone, "E4021 ingress", target)
    wait_scrolled_to(phone, "#list-title")
    wholly_in_view(phone, "#list-title")
    wholly_in_view(phone, "#list .mem:first-child .content")
    assert phone.errors == []


def test_phone_opening_a_memory_shows_its_editor(phone: Any, seeded: dict[str, Any]) -> None:
    # a memory far down the list: without scrolling, its editor (below the whole list) is two screens away
    target = phone.eval_on_selector_all("#list .mem", "els => els[els.length - 1].dataset.id")
    tap(phone, f"#list .mem[data-id='{target}'] .content")
    phone.wait_for_function("id => document.getElementById('d-id').title === id", arg=target)
    wait_scrolled_to(phone, "#detail")
    for sel in ("#detail .detail-head", "#d-content"):
        wholly_in_view(phone, sel)
    # a panel already on screen stays put: opening the next memory from it does not jump
    before = in_view(phone, "#detail")["scrollY"]
    phone.evaluate("openMemory(state.items[0].memory_id, state.items[0].namespace)")
    phone.wait_for_function("id => document.getElementById('d-id').title === id", arg=phone.evaluate(
        "state.items[0].memory_id"))
    assert in_view(phone, "#detail")["scrollY"] == before
    assert phone.errors == []


def test_phone_opening_a_card_shows_its_panel(phone: Any, seeded: dict[str, Any]) -> None:
    phone.click("#tab-board")
    phone.wait_for_selector("#board-view:not([hidden]) .board-card")
    task = seeded["cards"]["doing"]
    tap(phone, f".board-card[data-id='{task}']")
    phone.wait_for_function("id => document.getElementById('c-id').textContent === id", arg=task)
    wait_scrolled_to(phone, "#card-detail")
    for sel in ("#card-detail .detail-head", "#c-title"):
        wholly_in_view(phone, sel)
    assert wc.page_width(phone) <= PHONE["width"]
    assert phone.errors == []


# ---------------------------------------------------------------------------------------------- the desktop
def test_desktop_editor_stays_beside_a_list_scrolled_down(browser: Any, server: ServerProc, api: httpx.Client,
                                                          seeded: dict[str, Any]) -> None:
    """At 1400×900 a memory far down the list opens in the side panel where the person is: the panel is on
    screen and the row clicked stays on screen too (no jump to the top of the page)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        pg = ctx.new_page()
        wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
        target = pg.eval_on_selector_all("#list .mem", "els => els[els.length - 1].dataset.id")
        row = f"#list .mem[data-id='{target}']"
        pg.locator(row).scroll_into_view_if_needed()
        pg.click(f"{row} .content")
        pg.wait_for_function("id => document.getElementById('d-id').title === id", arg=target)
        assert pg.evaluate("window.scrollY") > 900  # far down the page
        for sel in ("#detail .detail-head", "#d-content", "#d-save", row):
            wholly_in_view(pg, sel)
    finally:
        ctx.close()


@pytest.mark.parametrize("width", [1100, 1280, 1440, 1920])
def test_desktop_board_shows_five_columns_side_by_side(browser: Any, server: ServerProc, api: httpx.Client,
                                                       seeded: dict[str, Any], width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        pg = ctx.new_page()
        wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
        pg.click("#tab-board")
        pg.wait_for_selector("#board-view:not([hidden]) .board-card")
        boxes = [pg.locator(f".board-col[data-status='{s}']").bounding_box() for s in COLUMNS]
        frame = pg.locator("#board-cols").bounding_box()
        # one row, left to right, each wide enough for a card's title
        assert len({round(b["y"]) for b in boxes}) == 1, boxes
        assert all(a["x"] + a["width"] <= b["x"] for a, b in zip(boxes, boxes[1:])), boxes
        assert all(b["width"] >= 140 for b in boxes), boxes
        # done is whole, inside the board's box and the window, with no sideways scroll to reach it
        done = boxes[-1]
        assert done["x"] + done["width"] <= frame["x"] + frame["width"] + 0.5, (done, frame)
        assert done["x"] + done["width"] <= width, (done, width)
        assert pg.locator("#board-cols").evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        assert pg.locator(f".board-card[data-id='{seeded['cards']['done']}']").is_visible()
        assert wc.page_width(pg) <= width
        # a card opened: its panel beside the board where there is room for both, else below it, and in view
        pg.click(f".board-card[data-id='{seeded['cards']['done']}']")
        pg.wait_for_function("id => document.getElementById('c-id').textContent === id", arg=seeded["cards"]["done"])
        panel = pg.locator("#card-detail").bounding_box()
        if width >= 1440:
            assert panel["x"] >= frame["x"] + frame["width"], (panel, frame)
        else:
            assert panel["y"] >= frame["y"] + frame["height"], (panel, frame)
        wait_scrolled_to(pg, "#card-detail")
        # the memory tab keeps its three columns (the side panel beside the list) from 1101 px on
        pg.click("#tab-memories")
        pg.wait_for_selector("#memory-view:not([hidden])")
        side, center = pg.locator(".side").bounding_box(), pg.locator(".center").bounding_box()
        if width > 1100:
            assert side["x"] >= center["x"] + center["width"], (side, center)
    finally:
        ctx.close()


# ---------------------------------------------------------------------------------------------- Chinese text
def test_stylesheet_names_cjk_fonts(anon_css: str) -> None:
    for face in CJK_FACES:
        assert f'"{face}"' in anon_css, face
    assert "font: 14px/1.45 var(--sans)" in anon_css


@pytest.fixture(scope="module")
def anon_css(server: ServerProc) -> str:
    r = httpx.get(f"{server.url}/static/app.css", timeout=30)
    r.raise_for_status()
    return r.text


def test_page_text_and_code_use_the_cjk_stack(phone: Any) -> None:
    for sel in ("body", "#list .mem .content", "#q", "code"):
        family = phone.eval_on_selector(sel, "e => getComputedStyle(e).fontFamily")
        for face in CJK_FACES:
            assert face in family, (sel, face, family)


def _cjk_font_installed() -> bool:
    fc = shutil.which("fc-list")
    if not fc:
        return False
    out = subprocess.run([fc, ":lang=zh-cn", "family"], capture_output=True, text=True, timeout=30).stdout
    return bool(out.strip())


# Each string drawn on a canvas in the font of the memory's text: two Han characters drawn by a real font differ
# from each other and from the box of a code point no font has (U+0378, unassigned)
GLYPHS_JS = """([font, chars]) => chars.map((ch) => {
  const c = document.createElement('canvas'); c.width = 64; c.height = 64;
  const x = c.getContext('2d'); x.font = font; x.fillStyle = '#000'; x.textBaseline = 'top';
  x.fillText(ch, 4, 4);
  const px = x.getImageData(0, 0, 64, 64).data;
  let ink = 0, hash = 0;
  for (let i = 3; i < px.length; i += 4) { if (px[i] > 0) ink++; hash = (hash * 31 + px[i]) | 0; }
  return {ch, width: x.measureText(ch).width, ink, hash};
})"""


def test_chinese_renders_with_a_font_not_as_boxes(phone: Any, seeded: dict[str, Any]) -> None:
    if not _cjk_font_installed():
        pytest.skip("no CJK font on this machine (apt-get install -y fonts-noto-cjk): Chinese would render as boxes")
    sel = f"#list .mem[data-id='{seeded['chinese']}'] .content"
    phone.wait_for_selector(sel)
    assert phone.text_content(sel) == CHINESE
    style = phone.eval_on_selector(sel, "e => { const s = getComputedStyle(e); "
                                        "return `${s.fontSize} ${s.fontFamily}`; }")
    han, other, missing = phone.evaluate(GLYPHS_JS, [style, ["部", "署", "\u0378"]])
    assert han["width"] > 0 and han["ink"] > 0 and other["ink"] > 0, (han, other)
    assert han["hash"] != other["hash"], "two Han characters drew the same glyph: boxes"
    assert han["hash"] != missing["hash"] and other["hash"] != missing["hash"], "a Han character drew the missing box"
    box = phone.locator(sel).bounding_box()
    assert box["width"] > 0 and box["height"] > 0
