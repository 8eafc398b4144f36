"""The web view's end-to-end checks in a real browser (Playwright driving Chromium), shared by
tests/test_web_ui.py (asserts) and bench/ui_check.py (the same checks, with timings and the README's
screenshot). Each check drives the page as a person would and verifies the result through the REST API.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

AGENTS = ("claude-code", "codex", "openclaw")
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
DAY_MS = 86_400_000

# Realistic memories: what three coding agents learn about three projects over three weeks.
FACTS: list[tuple[str, str, str, list[str]]] = [
    ("claude-code", "billing-service", "The billing service uses PostgreSQL 16 with logical replication to the "
     "analytics replica; never run migrations against the replica.", ["decision", "database"]),
    ("codex", "billing-service", "Invoice PDFs are rendered by the `render_invoice` worker; it times out after "
     "30 s for invoices with more than 500 lines (ticket BILL-412).", ["bug"]),
    ("openclaw", "billing-service", "Stripe webhooks are verified with STRIPE_WEBHOOK_SECRET from Vault, path "
     "secret/billing/stripe.", ["config", "security"]),
    ("claude-code", "web-app", "The web app builds with Vite 5; `pnpm build` fails on Node 18, use Node 20 LTS.",
     ["build"]),
    ("codex", "web-app", "Feature flags live in LaunchDarkly; the flag `checkout_v2` gates the new checkout "
     "flow and is 20% rolled out.", ["feature-flag"]),
    ("openclaw", "web-app", "E2E tests run with Playwright against the staging stack; flaky test "
     "`cart.spec.ts > applies coupon` is quarantined.", ["testing"]),
    ("claude-code", "infra", "Production Kubernetes runs on EKS 1.29 in eu-west-1; deploys go through Argo CD, "
     "never kubectl apply by hand.", ["decision", "deploy"]),
    ("codex", "infra", "Error E4021 from the ingress means the TLS certificate of the tenant expired; "
     "cert-manager renews it within 10 minutes.", ["runbook"]),
    ("openclaw", "infra", "Nightly backups of the billing database go to s3://acme-backups/billing with "
     "35 days of retention.", ["backup"]),
    ("claude-code", "billing-service", "Currency amounts are stored as integer cents (BIGINT); never use "
     "floats for money.", ["decision"]),
    ("codex", "web-app", "The design system's tokens are in packages/ui/tokens.json; colors must come from "
     "there, not hex literals.", ["convention"]),
    ("openclaw", "infra", "Grafana dashboard 'Billing SLO' tracks p99 invoice latency; alert threshold 800 ms.",
     ["observability"]),
]


def chromium_path() -> str | None:
    """The Chromium to drive: PLAYWRIGHT_CHROMIUM, else `chromium` on PATH (Debian's package)."""
    explicit = os.environ.get("PLAYWRIGHT_CHROMIUM")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright: Any, executable: str) -> Any:
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=executable, args=args, headless=True)


@contextmanager
def browser_or_skip() -> Iterator[Any]:
    """A headless Chromium for a test module; the module is skipped, saying why, when there is none."""
    import pytest

    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium on this machine (apt-get install -y chromium, or set PLAYWRIGHT_CHROMIUM): "
                    "the browser tests need a real browser; bench/ui_check.py runs the same checks")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install '.[test]')")
    with sync_playwright() as p:
        try:
            browser = launch(p, exe)
        except Exception as exc:  # noqa: BLE001 - a Chromium that cannot start (missing libraries…)
            pytest.skip(f"Chromium at {exe} did not start: {str(exc).splitlines()[0]}")
        try:
            yield browser
        finally:
            browser.close()


def seed(api: httpx.Client, namespace: str, *, copies: int = 3) -> dict[str, Any]:
    """Write the facts (each agent's, spread over the last three weeks) plus the XSS memory; returns
    ``{"ids": {content: id}, "per_scope": {scope: n}, "xss_id": id}``."""
    now = int(time.time() * 1000)
    batch = []
    for i in range(copies):
        for j, (agent, project, text, tags) in enumerate(FACTS):
            content = text if i == 0 else f"{text} (seen again in session {i + 1})"
            batch.append({"content": content, "agent": agent, "project": project, "tags": tags,
                          "namespace": namespace, "importance": 0.5 + 0.1 * (j % 4),
                          "created_at": now - ((i * 7 + j * 11) % 19) * DAY_MS - (j + 60) * 60_000})
    batch.append({"content": XSS, "agent": "codex", "project": "web-app", "namespace": namespace,
                  "tags": ["security"], "created_at": now - 5_000})
    r = api.post("/api/memories/batch", json=batch)
    r.raise_for_status()
    ids = {b["content"]: res["memory_id"] for b, res in zip(batch, r.json()["results"])}
    per_scope: dict[str, int] = {}
    for b in batch:
        per_scope[f"agent:{b['agent']}"] = per_scope.get(f"agent:{b['agent']}", 0) + 1
    return {"ids": ids, "per_scope": per_scope, "xss_id": ids[XSS], "total": len(batch)}


def mint_code(api: httpx.Client) -> str:
    r = api.post("/api/ui/codes", json={})
    r.raise_for_status()
    return r.json()["code"]


def ready(page: Any, timeout: float = 20_000) -> None:
    page.wait_for_selector("body[data-ready='1']", timeout=timeout)


def login(page: Any, base_url: str, code: str, namespace: str | None = None) -> float:
    """Open the one-time link; returns seconds from navigation to the first complete render."""
    t0 = time.perf_counter()
    page.goto(f"{base_url}/?code={code}")
    ready(page)
    dt = time.perf_counter() - t0
    if namespace:
        page.click(f".ns-item[data-ns='{namespace}']")
        page.wait_for_selector(f".ns-item.selected[data-ns='{namespace}']")
        page.wait_for_selector(".mem")
    return dt


def search(page: Any, query: str, expect_id: str) -> float:
    """Search from the box; returns seconds from submit to the expected result on screen."""
    page.fill("#q", query)
    t0 = time.perf_counter()
    page.click("#search-btn")
    # this search's results (an earlier list may hold the same memory)
    page.wait_for_function("([q, id]) => document.getElementById('list-title').textContent.startsWith("
                           "`Search results for “${q}”`) && document.querySelector(`#list .mem[data-id='${id}']`)",
                           arg=[query, expect_id])
    return time.perf_counter() - t0


def open_memory(page: Any, memory_id: str) -> None:
    page.click(f"#list .mem[data-id='{memory_id}'] .content")
    page.wait_for_function("id => !document.getElementById('detail').hidden && "
                           "document.getElementById('d-id').title === id", arg=memory_id)


def edit(page: Any, memory_id: str, new_content: str) -> str:
    """Open, edit and save; returns the status message shown."""
    open_memory(page, memory_id)
    page.fill("#d-content", new_content)
    page.click("#d-save")
    page.wait_for_selector("#d-msg.ok, #d-msg.error")
    return page.text_content("#d-msg") or ""


def stale_edit(page: Any, api: httpx.Client, memory_id: str, theirs: str, mine: str) -> dict[str, Any]:
    """Open a memory, let someone else change it (REST), then save an edit: the page must show the conflict."""
    open_memory(page, memory_id)
    ns = api.get(f"/api/memories/{memory_id}", params={"all_namespaces": "true"}).json()["namespace"]
    api.patch(f"/api/memories/{memory_id}", json={"content": theirs}, params={"namespace": ns}).raise_for_status()
    page.fill("#d-content", mine)
    page.click("#d-save")
    page.wait_for_selector("#d-conflict:not([hidden])")
    shown = {"conflict_text": page.text_content("#d-conflict-text") or "",
             "current": page.text_content("#d-conflict-current") or "",
             "form_kept": page.input_value("#d-content")}
    page.click("#d-reload")
    page.wait_for_selector("#d-conflict", state="hidden")
    shown["after_reload"] = page.input_value("#d-content")
    return shown


def forget(page: Any, memory_id: str) -> None:
    open_memory(page, memory_id)
    page.click("#d-forget")
    page.click("#d-confirm-yes")
    page.wait_for_selector(f"#list .mem[data-id='{memory_id}']", state="detached")


def sidebar_counts(page: Any) -> dict[str, int]:
    """Scope → count as the sidebar shows it ('' = all scopes)."""
    out = {}
    for item in page.query_selector_all(".scope-item"):
        out[item.get_attribute("data-scope") or ""] = int(item.query_selector(".count").text_content())
    return out


def namespace_count(page: Any, namespace: str) -> int:
    return int(page.text_content(f".ns-item[data-ns='{namespace}'] .count") or "-1")


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# A home's distill material: a fact two agents hold (merged), a contradiction (listed, never merged) and an XSS
# text two agents hold (merged: its text must stay text in the plan).
SAME_FACT = "The staging database is restored from the nightly snapshot at 02:00 UTC every day."
CONFLICT = ("The request timeout of the billing API is 30 seconds.", "The request timeout of the billing API is 30 minutes.")


def seed_distill(api: httpx.Client, namespace: str) -> dict[str, Any]:
    """Write the distill material into ``namespace`` (older first); returns the ids by role."""
    now = int(time.time() * 1000)
    rows = [(SAME_FACT, "codex"), (SAME_FACT.lower().rstrip("."), "gemini"), (CONFLICT[0], "codex"),
            (CONFLICT[1], "claude-code"), (XSS, "codex"), (XSS, "openclaw")]
    batch = [{"content": c, "agent": a, "namespace": namespace, "created_at": now - (len(rows) - i) * 60_000}
             for i, (c, a) in enumerate(rows)]
    r = api.post("/api/memories/batch", json=batch)
    r.raise_for_status()
    ids = [res["memory_id"] for res in r.json()["results"]]
    return {"same": ids[0:2], "conflict_old": ids[2], "conflict_new": ids[3], "xss": ids[4:6]}


def switch_namespace(page: Any, namespace: str, expect_id: str) -> None:
    """Reload the sidebar (a namespace written since the page loaded), select ``namespace`` and wait for its
    list (``expect_id`` on screen)."""
    page.click("#refresh")
    page.click(f".ns-item[data-ns='{namespace}']")
    page.wait_for_selector(f".ns-item.selected[data-ns='{namespace}']")
    page.wait_for_selector(f"#list .mem[data-id='{expect_id}']")


def show_plan(page: Any) -> str:
    """Show the distill plan of the namespace on screen; returns the panel's text."""
    page.evaluate("document.getElementById('distill-out').replaceChildren()")
    page.click("#distill-plan")
    page.wait_for_selector("#distill-out p.counts")
    return page.text_content("#distill-out") or ""


def page_width(page: Any) -> int:
    """How wide the page scrolls (a phone's screen is 360 px: anything wider scrolls sideways)."""
    return int(page.evaluate("document.scrollingElement.scrollWidth"))


def off_screen(page: Any, selectors: list[str]) -> list[str]:
    """The controls among ``selectors`` that a person cannot reach: hidden, or (once scrolled to) not wholly
    inside the viewport's width."""
    out = []
    width = page.viewport_size["width"]
    for sel in selectors:
        loc = page.locator(sel).first
        if not loc.is_visible():
            out.append(f"{sel} (not visible)")
            continue
        loc.scroll_into_view_if_needed()
        box = loc.bounding_box()
        if box is None or box["x"] < 0 or box["x"] + box["width"] > width + 0.5:
            out.append(f"{sel} at {box}")
    return out
