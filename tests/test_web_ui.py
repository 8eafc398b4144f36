"""The web view (`memcli serve` at `/`, `memcli ui`): sign-in by one-time code, static files, the sidebar and
chart endpoints over HTTP; and end to end in a real headless Chromium driven by Playwright against a real
`memcli serve` subprocess (hash embedder): sign in, search, edit, a stale edit's conflict, forget, XSS, counts.

The browser tests skip (with the reason) when no Chromium is installed: `apt-get install -y chromium`, or
point PLAYWRIGHT_CHROMIUM at one. bench/ui_check.py runs the same checks and prints timings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import _web_checks as wc
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, hash_env, start_server

pytestmark = pytest.mark.slow

EVERY = {"all_namespaces": "true"}  # the owner reads an id of any namespace




@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("web")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "home")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def api(server: ServerProc) -> Iterator[httpx.Client]:
    with server.client(timeout=30) as c:
        yield c


@pytest.fixture
def anon(server: ServerProc) -> Iterator[httpx.Client]:
    """A client without the token: what a browser (or anyone on this machine) has."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def _login(anon: httpx.Client, code: str) -> httpx.Response:
    return anon.post("/api/ui/login", json={"code": code}, headers={"X-Memcli-UI": "1"})


# ---------------------------------------------------------------------------------------------- HTTP only
def test_page_and_static_files_are_served_without_the_token(anon: httpx.Client) -> None:
    r = anon.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in r.text
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["referrer-policy"] == "no-referrer" and r.headers["cache-control"] == "no-store"
    for name, ctype in (("app.js", "text/javascript"), ("app.css", "text/css"), ("favicon.svg", "image/svg+xml")):
        f = anon.get(f"/static/{name}")
        assert f.status_code == 200 and f.headers["content-type"].startswith(ctype) and f.content
    for script in ("app.js", "distill.js"):
        assert f'<script src="/static/{script}"' in r.text
        js = anon.get(f"/static/{script}").text
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in js  # memory text is only ever set as text
    assert anon.get("/static/nope.js").status_code == 404
    assert anon.get("/static/..%2Fapp.py").status_code in (401, 404)
    # the data is not public: every API route still needs the token or a session
    for path in ("/api/memories", "/api/stats/scopes", "/api/stats/daily"):
        assert anon.get(path).status_code == 401


def test_login_code_is_single_use_and_gives_an_httponly_session(server: ServerProc, api: httpx.Client,
                                                                anon: httpx.Client) -> None:
    assert anon.post("/api/ui/codes", json={}).status_code == 401  # minting needs the token
    code = wc.mint_code(api)
    r = _login(anon, code)
    assert r.status_code == 200, r.text
    assert server.token not in r.text and server.token not in r.headers.get("set-cookie", "")
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and cookie.startswith("memcli_ui_")
    # the session works with the page's marker header ...
    ok = anon.get("/api/stats/scopes", headers={"X-Memcli-UI": "1"})
    assert ok.status_code == 200 and ok.json()["namespaces"]
    # ... but not without it, nor from another site (a page on another port of 127.0.0.1 sends the cookie too)
    assert anon.get("/api/stats/scopes").status_code == 401
    assert anon.get("/api/stats/scopes", headers={"X-Memcli-UI": "1", "Sec-Fetch-Site": "cross-site"}).status_code == 401
    # nor for the MCP endpoint or the hooks: a browser session is for the page's API calls
    assert anon.post("/mcp", json={}, headers={"X-Memcli-UI": "1"}).status_code == 401
    assert anon.post("/hooks/SessionStart", json={}, headers={"X-Memcli-UI": "1"}).status_code == 401
    # a session cannot mint more codes; the code cannot be used twice
    assert anon.post("/api/ui/codes", json={}, headers={"X-Memcli-UI": "1"}).status_code == 403
    again = _login(httpx.Client(base_url=server.url), code)
    assert again.status_code == 401 and again.json()["code"] == "invalid_code" and "memcli ui" in again.json()["error"]
    # sign out ends the session
    assert anon.post("/api/ui/logout", json={}, headers={"X-Memcli-UI": "1"}).status_code == 200
    assert anon.get("/api/stats/scopes", headers={"X-Memcli-UI": "1"}).status_code == 401


def test_bad_login_requests_get_clear_4xx(anon: httpx.Client) -> None:
    assert _login(anon, "not-a-real-code-at-all").status_code == 401
    assert anon.post("/api/ui/login", json={"code": "x" * 32}).status_code == 403  # not from the page
    r = anon.post("/api/ui/login", json={"nope": 1}, headers={"X-Memcli-UI": "1"})
    assert r.status_code == 422 and "code" in r.json()["error"]
    r = anon.post("/api/ui/login", content=b"{broken", headers={"X-Memcli-UI": "1"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_json"


def test_login_codes_expire_and_outstanding_ones_are_bounded() -> None:
    from memcli.web.sessions import MAX_CODES, UiAuth

    ui = UiAuth("0123456789abcdef", code_ttl=0.05, session_ttl=0.05)
    code, _ = ui.mint_code()
    time.sleep(0.1)
    assert ui.login(code) is None  # expired
    ui = UiAuth("0123456789abcdef", session_ttl=0.05)
    codes = [ui.mint_code()[0] for _ in range(MAX_CODES + 5)]
    assert ui.login(codes[0]) is None and ui.login(codes[-1]) is not None  # the oldest were dropped
    session, _ = ui.login(codes[-2])
    headers = {"cookie": f"other=1; {ui.cookie_name}={session}", "x-memcli-ui": "1"}
    assert ui.authorized(headers)
    time.sleep(0.1)
    assert not ui.authorized(headers)  # the session expired


def test_scope_counts_and_daily_chart_endpoints(api: httpx.Client) -> None:
    ns = "c-" + uuid.uuid4().hex[:8]
    now = int(time.time() * 1000)
    items = [{"content": f"fact {i} of {agent}", "agent": agent, "namespace": ns, "created_at": now - d * wc.DAY_MS}
             for i, (agent, d) in enumerate([("codex", 0), ("codex", 1), ("openclaw", 1), ("openclaw", 40)])]
    items.append({"content": "a team fact", "scope": "global", "namespace": ns})
    api.post("/api/memories/batch", json=items).raise_for_status()
    counts = api.get("/api/stats/scopes").json()
    mine = next(n for n in counts["namespaces"] if n["namespace"] == ns)
    assert mine == {"namespace": ns, "total": 5, "scopes": {"agent:codex": 2, "agent:openclaw": 2, "global": 1}}
    assert counts["namespaces"][0]["namespace"] == counts["default_namespace"]  # the default one first
    daily = api.get("/api/stats/daily", params={"days": 7, "namespace": ns}).json()
    assert len(daily["days"]) == 7 and daily["total"] == 4  # the 40-day-old one is outside the window
    by_scope = {s["scope"]: s["counts"] for s in daily["series"]}
    assert by_scope["agent:codex"][-2:] == [1, 1] and by_scope["agent:openclaw"][-2:] == [1, 0]
    for bad in ({"days": 0}, {"days": "x"}, {"tz_offset": 100000}):
        r = api.get("/api/stats/daily", params=bad)
        assert r.status_code == 422, r.text


def test_memcli_ui_prints_a_working_one_time_link(server: ServerProc, anon: httpx.Client, tmp_path: Path) -> None:
    env = {**hash_env(tmp_path), "MEMCLI_HOME": str(server.home)}
    p = subprocess.run([MEMCLI, "ui", "--no-browser", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["port"] == server.port and out["url"].startswith(f"http://127.0.0.1:{server.port}/?code=")
    assert server.token not in p.stdout + p.stderr
    code = out["url"].split("code=", 1)[1]
    assert _login(anon, code).status_code == 200
    # human output: the link on stdout
    p = subprocess.run([MEMCLI, "ui", "--no-browser"], env={**env, "MEMCLI_JSON": "0"}, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().startswith(f"http://127.0.0.1:{server.port}/?code=")


def test_memcli_ui_starts_the_homes_server_when_none_runs(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    port = free_port()
    # --home (not MEMCLI_HOME): the server it starts must open that home too
    env = {**hash_env(tmp_path), "MEMCLI_PORT": str(port), "MEMCLI_HOOK_IDLE_TIMEOUT": "60"}
    p = subprocess.run([MEMCLI, "--home", str(home), "ui", "--no-browser", "--json"], env=env, capture_output=True,
                       text=True, timeout=90)
    info = json.loads((home / "server.json").read_text()) if (home / "server.json").exists() else None
    try:
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert info and out["port"] == info["port"] == port
        r = httpx.post(f"http://127.0.0.1:{port}/api/ui/login", json={"code": out["url"].split("code=")[1]},
                       headers={"X-Memcli-UI": "1"})
        assert r.status_code == 200
        health = httpx.get(f"http://127.0.0.1:{port}/health", headers={"X-Memcli-UI": "1"}, cookies=r.cookies).json()
        assert health["home"] == str(home)
    finally:
        if info:
            try:
                os.kill(info["pid"], signal.SIGTERM)  # the server this test's `memcli ui` started
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with wc.browser_or_skip() as b:
        yield b


@pytest.fixture(scope="module")
def seeded(api: httpx.Client) -> dict:
    ns = "ui-" + uuid.uuid4().hex[:8]
    return {"ns": ns, **wc.seed(api, ns)}


@pytest.fixture(scope="module")
def page(browser: object, server: ServerProc, api: httpx.Client, seeded: dict) -> Iterator[object]:
    """One signed-in page for the module's browser checks, on the seeded namespace."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
    pg.errors = errors
    yield pg
    ctx.close()


def test_browser_signs_in_with_the_code_and_removes_it_from_the_address(page: object, browser: object,
                                                                         server: ServerProc, api: httpx.Client) -> None:
    assert "code=" not in page.url  # type: ignore[attr-defined]
    assert page.is_visible("#app") and not page.is_visible("#signin")  # type: ignore[attr-defined]
    # the same code again (a copied link, the browser history): refused, and the page says what to do
    code = wc.mint_code(api)
    ctx = browser.new_context()  # type: ignore[attr-defined]
    try:
        first = ctx.new_page()
        wc.login(first, server.url, code)
        ctx2 = browser.new_context()  # type: ignore[attr-defined]
        second = ctx2.new_page()
        second.goto(f"{server.url}/?code={code}")
        second.wait_for_selector("#signin:not([hidden])")
        assert "already used" in second.text_content("#signin-reason")
        assert not second.is_visible("#app") and "code=" not in second.url
        ctx2.close()
        # no code, no session: the sign-in explanation, no data
        ctx3 = browser.new_context()  # type: ignore[attr-defined]
        third = ctx3.new_page()
        third.goto(server.url + "/")
        third.wait_for_selector("#signin:not([hidden])")
        assert "memcli ui" in third.text_content("#signin")
        ctx3.close()
    finally:
        ctx.close()


def test_browser_sidebar_counts_and_chart(page: object, seeded: dict) -> None:
    counts = wc.sidebar_counts(page)
    assert counts[""] == seeded["total"] == wc.namespace_count(page, seeded["ns"])
    for scope, n in seeded["per_scope"].items():
        assert counts[scope] == n
    legend = page.text_content("#legend")  # type: ignore[attr-defined]
    for agent in wc.AGENTS:
        assert f"agent:{agent}" in legend
    assert page.locator("#chart svg rect").count() >= 3  # type: ignore[attr-defined]
    # the list: newest first, with age, scope, tags and project
    first = page.locator("#list .mem").first  # type: ignore[attr-defined]
    assert first.get_attribute("data-id") == seeded["xss_id"]
    meta = first.locator(".meta-row").text_content()
    assert "ago" in meta and "agent:codex" in meta and "security" in meta and "web-app" in meta


def test_browser_xss_content_renders_as_text(page: object, seeded: dict) -> None:
    item = page.locator(f"#list .mem[data-id='{seeded['xss_id']}']")  # type: ignore[attr-defined]
    assert item.locator(".content").text_content() == wc.XSS
    assert item.locator("img, script").count() == 0
    wc.open_memory(page, seeded["xss_id"])
    assert page.input_value("#d-content") == wc.XSS  # type: ignore[attr-defined]
    assert page.evaluate("window.__xss") is None  # type: ignore[attr-defined]
    assert page.errors == []  # type: ignore[attr-defined]


def test_browser_search_finds_a_memory_with_its_explanation(page: object, seeded: dict) -> None:
    target = seeded["ids"][wc.FACTS[7][2]]  # the E4021 runbook
    wc.search(page, "E4021 ingress", target)
    assert "Search results" in page.text_content("#list-title")  # type: ignore[attr-defined]
    hit = page.locator(f"#list .mem[data-id='{target}']")  # type: ignore[attr-defined]
    hit.locator("details.explain summary").click()
    # in plain words, beside the raw numbers
    assert hit.locator(".why-plain").text_content().startswith("Matched the words E4021, ingress")
    raw = dict(hit.locator("details.explain tr").evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))"))
    assert raw["matched_words"] == "E4021, ingress" and float(raw["bm25"]) > 0 and "similarity" in raw
    page.click("#clear-search")  # type: ignore[attr-defined]
    page.wait_for_selector("#list-title:text('Newest memories')")  # type: ignore[attr-defined]


def test_browser_edit_saves(page: object, api: httpx.Client, seeded: dict) -> None:
    target = seeded["ids"][wc.FACTS[3][2]]
    new = "The web app builds with Vite 6 on Node 22 LTS."
    msg = wc.edit(page, target, new)
    assert msg.startswith("Saved (version 2")
    stored = api.get(f"/api/memories/{target}", params=EVERY).json()
    assert stored["content"] == new and stored["version"] == 2
    assert page.locator(f"#list .mem[data-id='{target}'] .content").text_content() == new  # type: ignore[attr-defined]


def test_browser_stale_edit_shows_the_conflict(page: object, api: httpx.Client, seeded: dict) -> None:
    target = seeded["ids"][wc.FACTS[4][2]]
    theirs, mine = "checkout_v2 is now at 50%.", "checkout_v2 is now at 100%."
    shown = wc.stale_edit(page, api, target, theirs, mine)
    assert "You edited version 1" in shown["conflict_text"] and "now version 2" in shown["conflict_text"]
    assert shown["current"] == theirs and shown["form_kept"] == mine
    assert shown["after_reload"] == theirs
    assert api.get(f"/api/memories/{target}", params=EVERY).json()["content"] == theirs  # nothing was overwritten
    # once more, and this time keep mine: saved over the version now stored, not blindly
    api.patch(f"/api/memories/{target}", json={"content": "checkout_v2 is now at 75%."},
              params={"namespace": seeded["ns"]}).raise_for_status()
    page.fill("#d-content", mine)  # type: ignore[attr-defined]
    page.click("#d-save")  # type: ignore[attr-defined]
    page.wait_for_selector("#d-conflict:not([hidden])")  # type: ignore[attr-defined]
    page.click("#d-overwrite")  # type: ignore[attr-defined]
    page.wait_for_selector("#d-msg.ok")  # type: ignore[attr-defined]
    stored = api.get(f"/api/memories/{target}", params=EVERY).json()
    assert stored["content"] == mine and stored["version"] == 4


def test_browser_forget_removes_it(page: object, api: httpx.Client, seeded: dict) -> None:
    target = seeded["ids"][wc.FACTS[8][2]]
    before = wc.sidebar_counts(page)[""]
    wc.forget(page, target)
    assert api.get(f"/api/memories/{target}", params=EVERY).status_code == 404
    page.wait_for_function("n => document.querySelector(\".scope-item[data-scope='']  .count\").textContent == n",  # type: ignore[attr-defined]
                           arg=str(before - 1))


def _memory(api: httpx.Client, memory_id: str) -> dict:
    r = api.get(f"/api/memories/{memory_id}", params=EVERY)
    assert r.status_code == 200, r.text
    return r.json()


def test_browser_distill_plan_lists_merges_and_conflicts_with_their_texts(page: object, api: httpx.Client) -> None:
    """The plan shows, for each merge, the kept memory and every merged one with their texts and why they are
    the same fact; a contradiction is a conflict (both texts, newest first, their authors, the differing
    values), never merged; and recall still returns both sides of it."""
    ns = "dp-" + uuid.uuid4().hex[:8]
    ids = wc.seed_distill(api, ns)
    plan = api.get("/api/distill/plan", params={"namespace": ns}).json()["plan"]
    pg = page  # type: ignore[assignment]
    wc.switch_namespace(pg, ns, ids["xss"][1])
    out = wc.show_plan(pg)
    assert "[object" not in out and "conflict: 1" in out and "merge: 2" in out, out
    assert f"Merge ({len(plan['merge'])})" in out and "Conflicts (1)" in out
    # every merge group: the kept memory's text, then each merged memory's text and why it is the same fact
    groups = {frozenset(g["merge"]) | {g["keep"]}: g for g in plan["merge"]}
    for pair in (ids["same"], ids["xss"]):
        g = groups[frozenset(pair)]
        li = pg.locator(f"#distill-out li.merge-group[data-keep='{g['keep']}']")  # type: ignore[attr-defined]
        assert li.locator(".pm").first.get_attribute("data-id") == g["keep"]
        assert li.locator(f".pm[data-id='{g['keep']}'] .pm-text").text_content() == plan["memories"][g["keep"]]["content"]
        for mid in g["merge"]:
            merged = li.locator(f".pm[data-id='{mid}']")
            assert merged.locator(".pm-text").text_content() == plan["memories"][mid]["content"]
            assert merged.locator(".pm-why").text_content() == "why: " + g["why"][mid]
            assert g["why"][mid].startswith("the same fact")
    # the conflict: newest first, with its author, the differing values and the reason
    item = pg.locator("#distill-out li.conflict-item")  # type: ignore[attr-defined]
    assert item.get_attribute("data-ids") == f"{ids['conflict_new']} {ids['conflict_old']}"
    newer, older = item.locator(".pm").nth(0), item.locator(".pm").nth(1)
    assert newer.locator(".pm-text").text_content() == wc.CONFLICT[1]
    assert older.locator(".pm-text").text_content() == wc.CONFLICT[0]
    assert "newer" in newer.text_content() and "agent:claude-code" in newer.text_content()
    assert "older" in older.text_content() and "agent:codex" in older.text_content()
    assert "30 minutes ↔ 30 seconds" in item.text_content() and plan["conflicts"][0]["reason"] in item.text_content()
    assert all(ids[k] not in {x for g in plan["merge"] for x in (g["keep"], *g["merge"])}
               for k in ("conflict_new", "conflict_old"))
    # memory text is text: the XSS memory's words are on screen, no element came from them
    assert wc.XSS in out and pg.locator("#distill-out img, #distill-out script").count() == 0  # type: ignore[attr-defined]
    assert pg.evaluate("window.__xss") is None and pg.errors == []  # type: ignore[attr-defined]
    hits = api.get("/api/search", params={"q": "request timeout of the billing API", "namespace": ns}).json()
    assert {ids["conflict_new"], ids["conflict_old"]} <= {h["memory_id"] for h in hits}


def test_browser_a_long_plan_shows_its_first_items_and_the_rest_on_request(page: object, api: httpx.Client) -> None:
    ns = "dl-" + uuid.uuid4().hex[:8]
    services = ["billing", "payments", "search", "checkout", "upload", "invoices", "ledger", "reports", "mailer",
                "gateway", "auth", "profile", "catalog", "pricing", "inventory", "shipping", "returns", "reviews",
                "loyalty", "coupons", "exports", "imports", "webhooks", "scheduler", "notifier", "archiver", "tagger",
                "indexer"]
    batch = [{"content": f"The {svc} worker retries a failed job {n} times.", "agent": agent, "namespace": ns}
             for svc in services for n, agent in ((3, "codex"), (5, "claude-code"))]
    api.post("/api/memories/batch", json=batch).raise_for_status()
    n = len(api.get("/api/distill/plan", params={"namespace": ns}).json()["plan"]["conflicts"])
    assert n > 25
    pg = page  # type: ignore[assignment]
    wc.switch_namespace(pg, ns, api.get("/api/memories", params={"namespace": ns, "limit": 1}).json()[0]["memory_id"])
    wc.show_plan(pg)
    items = "#distill-out li.conflict-item"
    assert pg.locator(items).count() == 25 and f"Conflicts ({n})" in pg.text_content("#distill-out")  # type: ignore[attr-defined]
    pg.click(f"#distill-out .plan-more:text('Show all {n}')")  # type: ignore[attr-defined]
    assert pg.locator(items).count() == n  # type: ignore[attr-defined]


def test_browser_undo_asks_first_shows_the_changes_and_keeps_later_writes(page: object, api: httpx.Client) -> None:
    """Apply in the web view; then a memory written into another namespace (and one into this one) and a tag
    edit of a merged memory; Undo shows what it will change and changes nothing until confirmed; confirmed,
    the run is reversed and every later write is still there."""
    ns = "du-" + uuid.uuid4().hex[:8]
    ids = wc.seed_distill(api, ns)
    pg = page  # type: ignore[assignment]
    wc.switch_namespace(pg, ns, ids["xss"][1])
    wc.show_plan(pg)
    pg.click("#distill-apply")  # type: ignore[attr-defined]
    pg.click("#distill-confirm-yes")  # type: ignore[attr-defined]
    pg.wait_for_selector("#distill-out .msg.ok")  # type: ignore[attr-defined]
    tag = pg.text_content("#distill-out").split("(tag ")[1].split(")")[0]  # type: ignore[attr-defined]
    pair = {i: _memory(api, i) for i in ids["same"]}
    merged = next(i for i, m in pair.items() if m["status"] == "superseded")
    keeper = next(i for i in pair if i != merged)
    assert pair[keeper]["status"] == "active" and pair[keeper]["scope"] == "global"
    # written after the run: elsewhere, here, and an edit of a memory the run touched
    other_ns = "other-" + uuid.uuid4().hex[:8]
    later = api.post("/api/memories", json={"content": "The CDN cache is purged on every release.",
                                            "agent": "codex", "namespace": other_ns}).json()["memory_id"]
    later_here = api.post("/api/memories", json={"content": "Release notes are written by the on-call engineer.",
                                                 "agent": "codex", "namespace": ns}).json()["memory_id"]
    api.patch(f"/api/memories/{merged}", json={"tags": ["checked-later"]}, params={"namespace": ns}).raise_for_status()

    pg.wait_for_function("tag => [...document.querySelectorAll('#distill-tags option')].some(o => o.value === tag)",  # type: ignore[attr-defined]
                         arg=tag)
    pg.select_option("#distill-tags", tag)  # type: ignore[attr-defined]
    pg.click("#distill-undo-btn")  # type: ignore[attr-defined]
    pg.wait_for_selector("#distill-undo-confirm:not([hidden])")  # type: ignore[attr-defined]
    summary = pg.text_content("#distill-undo-summary")  # type: ignore[attr-defined]
    assert f"Undo {tag}?" in summary and "written after it, in any namespace, stay" in summary, summary
    change = pg.locator(f"#distill-undo-list li.undo-change[data-id='{merged}']")  # type: ignore[attr-defined]
    assert change.locator("[data-field='status']").text_content() == "status: superseded → active"
    assert change.locator(".pm-text").text_content() == pair[merged]["content"]
    keep_change = pg.locator(f"#distill-undo-list li.undo-change[data-id='{keeper}']")  # type: ignore[attr-defined]
    # the best-written copy kept the fact (codex's sentence, not gemini's lower-cased one) and goes back to its scope
    assert keeper == ids["same"][0]
    assert keep_change.locator("[data-field='scope']").text_content() == "scope: global → agent:codex"
    shown = pg.eval_on_selector_all("#distill-undo-list > li", "els => els.map(e => e.dataset.id)")  # type: ignore[attr-defined]
    assert later not in shown and later_here not in shown
    assert _memory(api, merged)["status"] == "superseded"  # asking changed nothing
    # Cancel: nothing happens
    pg.click("#distill-undo-no")  # type: ignore[attr-defined]
    assert pg.is_hidden("#distill-undo-confirm") and _memory(api, merged)["status"] == "superseded"  # type: ignore[attr-defined]
    # again, and confirm
    pg.click("#distill-undo-btn")  # type: ignore[attr-defined]
    pg.wait_for_selector("#distill-undo-confirm:not([hidden])")  # type: ignore[attr-defined]
    pg.click("#distill-undo-yes")  # type: ignore[attr-defined]
    pg.wait_for_selector("#distill-out .msg.ok:text('Restored')")  # type: ignore[attr-defined]
    assert f"Restored the state before {tag}" in pg.text_content("#distill-out")  # type: ignore[attr-defined]
    # the run is reversed ...
    after = {i: _memory(api, i) for i in ids["same"]}
    assert [after[i]["status"] for i in ids["same"]] == ["active", "active"]
    assert after[keeper]["scope"] == "agent:codex" and after[merged]["superseded_by"] is None
    # ... and every later write is still there, the edited memory with its later tags
    assert _memory(api, later)["content"] == "The CDN cache is purged on every release."
    assert _memory(api, later_here)["status"] == "active"
    assert after[merged]["tags"] == ["checked-later"]
    assert pg.errors == []  # type: ignore[attr-defined]


def test_browser_usable_on_a_phone(browser: object, server: ServerProc, api: httpx.Client, seeded: dict) -> None:
    """At 360×740 the page never scrolls sideways (list, search with its explanation, a memory, the distill
    plan and its undo preview) and every control is on screen."""
    ctx = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)  # type: ignore[attr-defined]
    try:
        pg = ctx.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        wc.login(pg, server.url, wc.mint_code(api), seeded["ns"])
        widths = {"list": wc.page_width(pg)}
        target = seeded["ids"][wc.FACTS[7][2]]
        wc.search(pg, "E4021 ingress", target)
        pg.click(f"#list .mem[data-id='{target}'] details.explain summary")
        widths["search + explanation"] = wc.page_width(pg)
        wc.open_memory(pg, target)
        widths["memory"] = wc.page_width(pg)
        assert not wc.off_screen(pg, ["#q", "#search-btn", "#clear-search", "#tab-memories", "#tab-board", "#refresh",
                                      "#logout", "#d-save", "#d-forget", "#d-history-btn", "#d-close",
                                      "#distill-plan", ".ns-item", ".scope-item"])
        wc.show_plan(pg)
        widths["distill plan"] = wc.page_width(pg)
        pg.click("#tab-board")
        pg.wait_for_selector("#board-view:not([hidden])")
        widths["board"] = wc.page_width(pg)
        assert not wc.off_screen(pg, ["#board-new", "#board-reload"])
        assert all(w <= 360 for w in widths.values()), widths
        assert not errors, errors
    finally:
        ctx.close()
