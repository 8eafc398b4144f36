"""The web view's Board tab in a real headless Chromium, with timings (and README's screenshot).

    python bench/board_ui_check.py                                   # checks + medians
    python bench/board_ui_check.py --screenshot docs/web-board.png --runs 10

Starts a real `memcli serve` (hash embedder) on a fresh home with one configured job, fills a board with
realistic cards of three agents (some moved along with reasons, some with a job run), signs in through a
one-time code as `memcli ui` does, and times

- board render: click on the Board tab → every card on screen (GET /api/board + render);
- open a card: click → its detail with linked memories and latest run (GET /api/board/tasks/{id});
- move round trip: click Move → the card in its new column and the move's memory id shown (POST …/move, which
  also writes the move's memory, then the board again).

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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import _web_checks as wc  # noqa: E402
from _memcli_server import MEMCLI, hash_env, start_server  # noqa: E402

CONFIG = """
[jobs.test]
command = ["sh", "-c", "echo running the tests for $MEMCLI_TASK_ID; echo '42 passed in 3.1s'"]
timeout = 60

[jobs.lint]
command = ["sh", "-c", "echo 'ruff: 1 error (E501 line too long)' >&2; exit 1"]
"""
# (title, assignee, labels, column it ends in, description)
CARDS: list[tuple[str, str, list[str], str, str]] = [
    ("Fix the upload test on files over 2 GiB", "codex", ["bug", "ci"], "review",
     "tests/test_upload.py::test_big_file fails: the size is read into an int32."),
    ("Rotate the Stripe webhook secret", "openclaw", ["security"], "doing", "Vault path secret/billing/stripe."),
    ("Render invoices over 500 lines in pages", "codex", ["bug", "billing"], "doing",
     "render_invoice times out after 30 s (BILL-412)."),
    ("Move staging to EKS 1.30", "claude-code", ["infra"], "todo", "Through Argo CD, never kubectl apply."),
    ("Quarantine review for flaky cart.spec.ts", "openclaw", ["testing"], "todo", ""),
    ("Design tokens: remove hex literals", "codex", ["frontend"], "backlog", "packages/ui/tokens.json"),
    ("Alert on p99 invoice latency > 800 ms", "claude-code", ["observability"], "backlog", ""),
    ("Document the board in the README", "claude-code", ["docs"], "done", ""),
    ("checkout_v2 to 50%", "codex", ["feature-flag"], "backlog", "LaunchDarkly flag checkout_v2."),
]
ORDER = ["backlog", "todo", "doing", "review", "done"]


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return f"median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   (n={len(xs)})"


def seed(api: Any, ns: str) -> dict[str, str]:
    """The cards, each walked forward column by column to where it ends (so the moves' memories exist)."""
    ids: dict[str, str] = {}
    for title, agent, labels, column, desc in CARDS:
        r = api.post("/api/board/tasks", json={"title": title, "assignee": agent, "labels": labels,
                                               "description": desc or None, "namespace": ns, "agent": agent})
        r.raise_for_status()
        tid = r.json()["task_id"]
        ids[title] = tid
        for step in ORDER[1: ORDER.index(column) + 1]:
            api.post(f"/api/board/tasks/{tid}/move", json={"to_status": step, "agent": agent, "namespace": ns,
                                                           "reason": f"ready for {step}"}).raise_for_status()
    for title, job in ((CARDS[0][0], "test"), (CARDS[2][0], "lint")):
        api.post(f"/api/board/tasks/{ids[title]}/jobs/{job}", json={"namespace": ns}).raise_for_status()
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="repetitions of each timing (default 10)")
    ap.add_argument("--screenshot", type=Path, help="save a screenshot of the page here (e.g. docs/web-board.png)")
    args = ap.parse_args()
    exe = wc.chromium_path()
    if exe is None:
        print("no Chromium: apt-get install -y chromium (or set PLAYWRIGHT_CHROMIUM)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="memcli-board-check-"))
    env = hash_env(tmp)
    (tmp / "home").mkdir(parents=True)
    (tmp / "home" / "config.toml").write_text(CONFIG)
    srv = start_server(MEMCLI, env, tmp / "home")
    ok = True
    try:
        with srv.client(timeout=60) as api, sync_playwright() as p:
            ns = api.get("/api/stats/scopes").json()["default_namespace"]
            ids = seed(api, ns)
            time.sleep(1.0)  # the two job runs finish
            browser = wc.launch(p, exe)
            page = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1).new_page()
            wc.login(page, srv.url, wc.mint_code(api))
            page.click("#tab-board")
            page.wait_for_function("n => document.querySelectorAll('.board-card').length === n", arg=len(CARDS))
            first = ids[CARDS[0][0]]
            page.click(f".board-card[data-id='{first}']")
            page.wait_for_selector("#c-run-info pre.log")
            shown = page.text_content("#c-run-info") or ""
            ok &= "42 passed" in shown and "test: succeeded" in shown
            print(f"  {'ok ' if ok else 'FAIL'}  the board shows {len(CARDS)} cards; a card shows its run's log")
            if args.screenshot:
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.screenshot))
                print(f"screenshot: {args.screenshot}")

            renders, opens, moves = [], [], []
            for _ in range(args.runs):
                page.click("#tab-memories")
                t0 = time.perf_counter()
                page.click("#tab-board")
                page.wait_for_function("n => !document.getElementById('board-view').hidden && "
                                       "document.querySelectorAll('.board-card').length === n", arg=len(CARDS))
                renders.append(time.perf_counter() - t0)
            # moves: one card back and forth between todo and doing (a forward move, then a rework move)
            card = ids[CARDS[3][0]]
            for i in range(args.runs):
                t0 = time.perf_counter()
                page.click(f".board-card[data-id='{card}']")
                page.wait_for_function("id => document.getElementById('c-id').textContent === id && "
                                       "!document.getElementById('card-detail').hidden", arg=card)
                opens.append(time.perf_counter() - t0)
                target = "doing" if i % 2 == 0 else "todo"
                page.select_option("#c-to", target)
                page.fill("#c-reason", f"bench move {i}")
                t0 = time.perf_counter()
                page.click("#c-move")
                page.wait_for_selector(f"#c-msg.ok:text('→ {target}') button[data-memory]")
                page.wait_for_selector(f".board-col[data-status='{target}'] .board-card[data-id='{card}']")
                moves.append(time.perf_counter() - t0)
                page.click("#c-close")
            browser.close()
            print(f"\nboard render (tab click → all cards on screen): {_ms(renders)}")
            print(f"open a card (click → detail shown):             {_ms(opens)}")
            print(f"move round trip (Move → card in its column):    {_ms(moves)}")
    finally:
        srv.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
