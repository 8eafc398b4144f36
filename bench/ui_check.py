"""The web view's end-to-end checks in a real headless Chromium, with timings (and README's screenshot).

    python bench/ui_check.py                              # checks + medians of page load and search
    python bench/ui_check.py --screenshot docs/web-view.png --runs 10

Starts a real `memcli serve` (hash embedder unless --embedder local) on a fresh home, writes realistic
memories from three agents (claude-code, codex, openclaw) about three projects over three weeks, signs in
through a one-time code as `memcli ui` does, and runs the same checks as tests/test_web_ui.py: the code
works once, the sidebar counts, search finds a memory (with its explanation), an edit saves, a stale edit
shows the conflict, forget removes, XSS content renders as text, the distill panel shows the server's plan
(merges with their texts, conflicts), undo previews its changes and keeps later writes, a 360 px phone screen
never scrolls sideways. Then it times

- page load: a fresh browser context opening the one-time link → sign-in exchange → the first complete
  render (sidebar, list, chart);
- search round trip: submit in the search box → the expected memory on screen (REST search + render).

Needs Chromium (`apt-get install -y chromium`, or PLAYWRIGHT_CHROMIUM) and `pip install playwright`.
Figures on this shared 2-core machine are noisy: medians of --runs repetitions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import _web_checks as wc  # noqa: E402
from _memcli_server import MEMCLI, hash_env, start_server  # noqa: E402

EVERY = {"all_namespaces": "true"}  # the owner reads an id of any namespace


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return f"median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   (n={len(xs)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="repetitions of each timing (default 10)")
    ap.add_argument("--copies", type=int, default=6, help="each fact is written this many times (default 6: "
                    f"{6 * len(wc.FACTS) + 1} memories)")
    ap.add_argument("--embedder", default="hash", help="hash (default, fast) or local (the bundled e5)")
    ap.add_argument("--screenshot", type=Path, help="save a screenshot of the page here (e.g. docs/web-view.png)")
    args = ap.parse_args()

    exe = wc.chromium_path()
    if exe is None:
        print("no Chromium: apt-get install -y chromium (or set PLAYWRIGHT_CHROMIUM)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="memcli-ui-check-"))
    env = hash_env(tmp)
    env["MEMCLI_EMBEDDER"] = args.embedder
    srv = start_server(MEMCLI, env, tmp / "home")
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        results.append((name, ok, detail))
        print(f"  {'ok ' if ok else 'FAIL'}  {name}{'  ' + detail if detail else ''}")

    try:
        with srv.client(timeout=60) as api, sync_playwright() as p:
            t0 = time.perf_counter()
            seeded = wc.seed(api, "default", copies=args.copies)
            print(f"memcli serve pid {srv.proc.pid} on {srv.url}; {seeded['total']} memories written in "
                  f"{time.perf_counter() - t0:.1f}s ({args.embedder} embedder); Chromium {exe}")
            browser = wc.launch(p, exe)
            ids = seeded["ids"]

            # -- the checks
            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            code = wc.mint_code(api)
            wc.login(page, srv.url, code)
            check("sign in with a one-time code; the code leaves the address bar", "code=" not in page.url)
            other = browser.new_context()
            op = other.new_page()
            op.goto(f"{srv.url}/?code={code}")
            op.wait_for_selector("#signin:not([hidden])")
            check("a used code is refused", "already used" in (op.text_content("#signin-reason") or ""))
            other.close()
            counts = wc.sidebar_counts(page)
            check("sidebar counts", counts[""] == seeded["total"]
                  and all(counts[s] == n for s, n in seeded["per_scope"].items()), str(counts))
            page.click("#more")
            page.wait_for_function("n => document.querySelectorAll('#list .mem').length === n", arg=seeded["total"])
            check("'Load more' pages through the list", page.is_hidden("#more"))
            first = page.locator("#list .mem").first
            check("XSS content renders as text", first.locator(".content").text_content() == wc.XSS
                  and first.locator("img, script").count() == 0 and page.evaluate("window.__xss") is None)
            target = ids[wc.FACTS[7][2]]
            wc.search(page, "E4021 ingress", target)
            check("search finds a memory", page.locator(f"#list .mem[data-id='{target}'] details.explain").count() == 1)
            page.click("#clear-search")
            page.wait_for_selector("#list-title:text('Newest memories')")
            edited = ids[wc.FACTS[3][2]]
            wc.search(page, wc.FACTS[3][2][:60], edited)  # with 50 a page, bring it on screen first
            msg = wc.edit(page, edited, "The web app builds with Vite 6 on Node 22 LTS.")
            check("edit saves", msg.startswith("Saved")
                  and api.get(f"/api/memories/{edited}", params=EVERY).json()["version"] == 2, msg)
            wc.search(page, wc.FACTS[4][2][:60], ids[wc.FACTS[4][2]])
            stale = wc.stale_edit(page, api, ids[wc.FACTS[4][2]], "checkout_v2 is at 50%.", "checkout_v2 is at 100%.")
            check("a stale edit shows the conflict", stale["current"] == "checkout_v2 is at 50%."
                  and stale["after_reload"] == "checkout_v2 is at 50%.", stale["conflict_text"])
            gone = ids[wc.FACTS[8][2]]
            wc.search(page, wc.FACTS[8][2][:60], gone)
            wc.forget(page, gone)
            check("forget removes it", api.get(f"/api/memories/{gone}", params=EVERY).status_code == 404)
            dist = wc.seed_distill(api, "default")
            page.click("#clear-search")  # back to the newest memories, where the new ones are
            page.wait_for_selector(f"#list .mem[data-id='{dist['xss'][1]}']")
            out = wc.show_plan(page)
            merged_texts = page.eval_on_selector_all("#distill-out li.merge-group .pm-text", "els => els.length")
            check("distill panel shows the plan: each merge with its texts and why",
                  "[object" not in out and "Merge (" in out and merged_texts >= 4
                  and page.locator("#distill-out .merge-group .pm-why").count() >= 2, out[:120])
            conflict = page.text_content("#distill-out li.conflict-item") or ""
            check("a contradiction is listed as a conflict, newest first, never merged",
                  conflict.index(wc.CONFLICT[1]) < conflict.index(wc.CONFLICT[0]) and "30 minutes ↔ 30 seconds" in conflict)
            page.click("#distill-apply")
            page.click("#distill-confirm-yes")
            page.wait_for_selector("#distill-out .msg.ok")
            later = api.post("/api/memories", json={"content": "written after the run", "namespace": "elsewhere"})
            page.click("#distill-undo-btn")
            page.wait_for_selector("#distill-undo-confirm:not([hidden])")
            preview = page.locator("#distill-undo-list li.undo-change").count()
            page.click("#distill-undo-yes")
            page.wait_for_selector("#distill-out .msg.ok:text('Restored')")
            check("undo shows its changes first, then keeps a later write",
                  preview >= 2 and api.get(f"/api/memories/{later.json()['memory_id']}", params=EVERY).status_code == 200,
                  f"{preview} changes previewed")
            check("no script errors on the page", not errors, "; ".join(errors))
            phone = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
            pp = phone.new_page()
            wc.login(pp, srv.url, wc.mint_code(api))
            widths = [wc.page_width(pp)]
            wc.search(pp, "E4021 ingress", ids[wc.FACTS[7][2]])
            widths.append(wc.page_width(pp))
            wc.show_plan(pp)
            widths.append(wc.page_width(pp))
            check("usable at 360 px: the page never scrolls sideways", max(widths) <= 360, f"widths {widths}")
            phone.close()

            if args.screenshot:
                shot = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1)
                sp = shot.new_page()
                wc.login(sp, srv.url, wc.mint_code(api))
                wc.search(sp, "which database does billing use? PostgreSQL", ids[wc.FACTS[0][2]])
                wc.open_memory(sp, ids[wc.FACTS[0][2]])
                sp.click(f"#list .mem[data-id='{ids[wc.FACTS[0][2]]}'] details.explain summary")
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                sp.screenshot(path=str(args.screenshot))
                shot.close()
                print(f"screenshot: {args.screenshot}")

            # -- timings
            loads, searches = [], []
            for i in range(args.runs):
                c = browser.new_context(viewport={"width": 1400, "height": 900})
                pg = c.new_page()
                loads.append(wc.login(pg, srv.url, wc.mint_code(api)))
                c.close()
            # facts the checks above left alone; a different query each time (the same one twice would find
            # its results already on screen), taken from the start, the end or the middle of the fact
            pool = [f[2] for k, f in enumerate(wc.FACTS) if k not in (3, 4, 8)]
            for i in range(args.runs):
                text = pool[i % len(pool)]
                words = text.split()
                part = (i // len(pool)) % 3
                query = " ".join(words[:8] if part == 0 else words[-8:] if part == 1 else words[4:12])
                searches.append(wc.search(page, query, ids[text]))
            browser.close()
            print(f"\npage load (one-time link → first complete render): {_ms(loads)}")
            print(f"search round trip (submit → result on screen):     {_ms(searches)}")
    finally:
        srv.stop()
    failed = [n for n, ok, _ in results if not ok]
    print(f"\n{len(results) - len(failed)}/{len(results)} checks passed" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
