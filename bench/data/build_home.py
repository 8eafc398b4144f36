#!/usr/bin/env python3
"""Build bench/data/home.json: a realistic memcli home of three agents over four weeks (deterministic).

    python3 bench/data/build_home.py            # writes bench/data/home.json (standard library only)

Three agents (claude-code, codex, openclaw) of one small team ("Lumen": an API, a web shop, ops) write
memories from 2026-11-02 to 2026-11-29, each in its own scope (``agent:<name>``) with the project it worked
in. Every memory belongs to one labelled *fact*; the groups say how they relate:

- ``restatement``: one fact said 2–4 ways by the agents (case, a typo in a product name, a fragment, a
  hedge, a paraphrase, English ↔ 中文, 简 ↔ 繁, an "e.g." against a list, a count in words and digits).
  ``best`` names the best-written member (the clean full sentence: what a merge should keep);
- ``lookalike``: the same attribute of another subject (billing/ledger port 8080): must never merge;
- ``change``: a value that changed later: ``outdated`` members (often two agents: a merge would promote
  them) and the ``current`` one; the outdated value must never become ``global``;
- ``polarity``: two agents disagree (enabled/disabled, allowed/not allowed, 启用/禁用, 允许/不允许,
  開啟/關閉): a conflict to list until someone resolves it;
- everything else is a one-off fact of its own (a rename, a fixed test, a bumped package...).

Each memory carries ``names``: the product names, identifiers and paths in it (what keyword recall must still
find after a merge). Validate with bench/data/check_home.py.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("home.json")
START_MS = 1_793_602_800_000  # 2026-11-02 07:00 UTC, a Monday
DAY = 86_400_000
AGENTS = {"C": "claude-code", "X": "codex", "O": "openclaw"}
PROJECTS = ("lumen-api", "lumen-web", "lumen-ops")
PRODUCTS = ("PostgreSQL", "Grafana", "Terraform", "Sentry", "Kubernetes", "Redis", "Kafka", "ClickHouse",
            "Elasticsearch", "Vault", "ArgoCD", "Prometheus", "Node.js", "Amazon SES", "LaunchDarkly", "Loki",
            "promtail", "RabbitMQ", "Datadog", "pnpm", "GitHub Actions", "React Native", "Slack", "Helm",
            "Python", "Go", "Lumen", "Priya Natarajan", "Marco Rossi", "OAuth2", "S3", "Stripe", "Playwright",
            "PagerDuty", "Cloudflare", "RS256", "JWTs")

# (agent, day 0-27, text, variant); the first "clean" member is the best-written one
Member = tuple[str, int, str, str]
RESTATEMENTS: list[tuple[str, str, list[Member]]] = [
    ("r01", "api", [("X", 2, "The billing service stores its data in PostgreSQL 16.", "clean"),
                    ("C", 9, "the billing service stores its data in postgresql 16", "lower"),
                    ("O", 15, "billing service stores its data in PostgreSQL 16", "fragment")]),
    ("r02", "ops", [("C", 3, "Service dashboards live in Grafana under the Lumen folder.", "clean"),
                    ("O", 20, "Service dashboards live in Grafna under the Lumen folder.", "typo")]),
    ("r03", "ops", [("X", 4, "Infrastructure changes go through Terraform in the infra/terraform directory.", "clean"),
                    ("C", 18, "infrastructure changes go through Terrafrom in the infra/terraform directory", "typo")]),
    ("r04", "web", [("O", 5, "Errors from the web app are reported to Sentry project lumen-web.", "clean"),
                    ("X", 12, "errors from the web app are reported to sentry project lumen-web.", "lower")]),
    ("r05", "api", [("C", 1, "The API runs on Kubernetes in the lumen-prod namespace.", "clean"),
                    ("X", 8, "API runs on Kubernetes in the lumen-prod namespace", "fragment"),
                    ("O", 22, "The API runs on Kubernets in the lumen-prod namespace.", "typo")]),
    ("r06", "api", [("X", 6, "Session tokens are cached in Redis for 15 minutes.", "clean"),
                    ("C", 13, "FYI: session tokens are cached in Redis for 15 minutes.", "hedge"),
                    ("O", 21, "session tokens cached in Redis, 15 minutes", "fragment")]),
    ("r07", "api", [("C", 3, "Order events are published to the Kafka topic orders.v2.", "clean"),
                    ("O", 17, "order events are published to the kafka topic orders.v2", "lower")]),
    ("r08", "api", [("X", 2, "The gateway reads its settings from config/gateway.yaml.", "clean"),
                    ("C", 10, "gateway reads its settings from config/gateway.yaml", "fragment")]),
    ("r09", "api", [("C", 4, "Run the ledger tests with `make test-ledger`.", "clean"),
                    ("X", 11, "run the ledger tests with `make test-ledger`", "lower"),
                    ("O", 19, "To run the ledger tests, use `make test-ledger`.", "paraphrase")]),
    ("r10", "ops", [("O", 2, "Priya Natarajan owns the notifier service.", "clean"),
                    ("X", 14, "The notifier service is owned by Priya Natarajan.", "paraphrase")]),
    ("r11", "api", [("X", 5, "Analytics events are stored in ClickHouse, table events_raw.", "clean"),
                    ("C", 16, "Analytics events are stored in Clickhouse, table events_raw.", "case")]),
    ("r12", "api", [("C", 6, "The search service indexes products into Elasticsearch 8.11.", "clean"),
                    ("O", 23, "the search service indexes products into Elasticsaerch 8.11", "typo")]),
    ("r13", "ops", [("X", 7, "Database passwords are read from Vault at secret/lumen/db.", "clean"),
                    ("C", 15, "database passwords are read from vault at secret/lumen/db", "lower")]),
    ("r14", "ops", [("O", 3, "Deployments to production go through ArgoCD.", "clean"),
                    ("C", 12, "We deploy to production through ArgoCD.", "paraphrase"),
                    ("X", 24, "deployments to production go through ArgoCD", "lower")]),
    ("r15", "ops", [("C", 8, "Prometheus scrapes every service every 30 seconds.", "clean"),
                    ("X", 20, "prometheus scrapes every service every 30 s", "lower")]),
    ("r16", "web", [("X", 1, "The web frontend builds with Node.js 20.", "clean"),
                    ("O", 9, "web frontend builds with node.js 20", "lower")]),
    ("r17", "api", [("C", 5, "The gateway rate limit is 500 requests per second.", "clean"),
                    ("O", 13, "网关的限流是每秒 500 个请求。", "zh")]),
    ("r18", "ops", [("X", 6, "Backups of the ledger database run every night at 02:00 UTC.", "clean"),
                    ("O", 16, "账本数据库的备份每天晚上 02:00 UTC 执行。", "zh")]),
    ("r19", "web", [("O", 4, "发布前必须在 staging 环境跑完 `make e2e`。", "clean"),
                    ("C", 11, "發佈前必須在 staging 環境跑完 `make e2e`。", "zh-hant")]),
    ("r20", "api", [("O", 7, "报表服务用 ClickHouse 存储月度汇总数据。", "clean"),
                    ("X", 19, "注意：报表服务用 ClickHouse 存储月度汇总数据。", "hedge")]),
    ("r21", "api", [("C", 9, "The notifier sends emails through Amazon SES.", "clean"),
                    ("O", 18, "通知服务通过 Amazon SES 发送邮件。", "zh")]),
    ("r22", "web", [("X", 10, "Feature flags are managed in LaunchDarkly.", "clean"),
                    ("O", 21, "功能开关在 LaunchDarkly 里管理。", "zh")]),
    ("r23", "api", [("C", 11, "The payments service retries a failed webhook 5 times with exponential backoff.", "clean"),
                    ("X", 22, "Failed webhooks in the payments service are retried 5 times with exponential backoff.",
                     "paraphrase")]),
    ("r24", "web", [("O", 12, "Code reviews need two approvals before merging to main.", "clean"),
                    ("C", 25, "Before merging to main, code reviews need two approvals.", "paraphrase")]),
    ("r25", "api", [("X", 8, "The gateway accepts two ways to authenticate: OAuth2 and API keys.", "clean"),
                    ("C", 17, "The gateway accepts ways to authenticate, e.g. OAuth2 and API keys.", "eg_list")]),
    ("r26", "ops", [("C", 3, "The API is deployed to three regions: us-east-1, eu-west-1 and ap-southeast-1.", "clean"),
                    ("O", 14, "The API is deployed to 3 regions: us-east-1, eu-west-1 and ap-southeast-1.", "count")]),
    ("r27", "api", [("X", 13, "The ledger service is written in Go 1.22.", "clean"),
                    ("C", 20, "ledger service is written in go 1.22", "lower")]),
    ("r28", "api", [("O", 6, "The inventory service listens on port 8087.", "clean"),
                    ("X", 15, "inventory service listens on port 8087", "fragment")]),
    ("r29", "ops", [("C", 14, "Logs are shipped to Loki with the promtail agent.", "clean"),
                    ("O", 24, "logs are shipped to loki with the promtail agent", "lower")]),
    ("r30", "api", [("X", 9, "The scheduler uses RabbitMQ for its job queue.", "clean"),
                    ("C", 19, "The scheduler uses RabitMQ for its job queue.", "typo")]),
    ("r31", "ops", [("O", 10, "APM traces are sent to Datadog via the dd-agent sidecar.", "clean"),
                    ("X", 23, "APM traces are sent to Datadog via the dd-agent sidecar", "fragment"),
                    ("C", 26, "apm traces are sent to datadog via the dd-agent sidecar.", "lower")]),
    ("r32", "ops", [("C", 15, "Never commit secrets to the repository; keep them in Vault.", "clean"),
                    ("X", 25, "Secrets must never be committed to the repo; keep them in Vault.", "paraphrase")]),
    ("r33", "api", [("O", 11, "The staging database is reset every Monday.", "clean"),
                    ("C", 22, "staging 数据库每周一重置。", "zh")]),
    ("r34", "web", [("X", 16, "Use pnpm, not npm, for the web frontend.", "clean"),
                    ("O", 26, "web frontend: use pnpm, not npm", "fragment")]),
    ("r35", "ops", [("C", 2, "The CI pipeline runs on GitHub Actions with the workflow .github/workflows/ci.yml.", "clean"),
                    ("X", 17, "CI pipeline runs on GitHub Actions with the workflow .github/workflows/ci.yml", "fragment"),
                    ("O", 27, "The CI pipeline runs on Github Actions with the workflow .github/workflows/ci.yml.", "case")]),
    ("r36", "ops", [("X", 3, "Image builds are pushed to the registry ghcr.io/lumen/api.", "clean"),
                    ("O", 14, "image builds are pushed to the registry ghcr.io/lumen/api", "lower")]),
    ("r37", "api", [("O", 8, "搜索服务的超时时间是 3 秒。", "clean"),
                    ("X", 18, "搜索服务超时时间为 3 秒", "fragment")]),
    ("r38", "web", [("C", 12, "The mobile app is built with React Native 0.74.", "clean"),
                    ("O", 24, "行動應用是用 React Native 0.74 開發的。", "zh-hant")]),
    ("r39", "ops", [("O", 13, "The on-call handoff happens every Monday at 10:00.", "clean"),
                    ("C", 27, "Every Monday at 10:00 the on-call handoff happens.", "paraphrase")]),
    ("r40", "api", [("X", 12, "Sentry alerts for the payments service go to the #payments-oncall Slack channel.", "clean"),
                    ("O", 25, "sentry alerts for the payments service go to the #payments-oncall slack channel", "lower")]),
    ("r41", "web", [("C", 7, "End-to-end tests run with Playwright on every pull request.", "clean"),
                    ("X", 21, "End-to-end tests run with Playwrigth on every pull request.", "typo")]),
    ("r42", "api", [("O", 9, "Refunds are processed through Stripe within 5 business days.", "clean"),
                    ("C", 20, "退款通过 Stripe 在 5 个工作日内处理。", "zh")]),
    ("r43", "ops", [("X", 5, "The nightly job exports invoices to the S3 bucket lumen-invoices.", "clean"),
                    ("O", 16, "nightly job exports invoices to the s3 bucket lumen-invoices", "lower"),
                    ("C", 23, "Nightly job: exports invoices to S3 bucket lumen-invoices", "fragment")]),
    ("r44", "web", [("C", 10, "The checkout page supports three payment methods: cards, PayPal and bank transfer.", "clean"),
                    ("X", 22, "The checkout page supports payment methods, e.g. cards, PayPal and bank transfer.",
                     "eg_list")]),
    ("r45", "api", [("O", 4, "账单服务部署在两个可用区。", "clean"),
                    ("X", 15, "账单服务部署在 2 个可用区。", "count")]),
    # harder: how agents restate a fact in their own words, or in the other language
    ("r46", "api", [("C", 6, "Use `ruff` for linting; black is no longer used.", "clean"),
                    ("X", 18, "We lint with `ruff` now and dropped black.", "paraphrase")]),
    ("r47", "api", [("X", 7, "The auth service signs JWTs with RS256.", "clean"),
                    ("O", 19, "JWTs issued by the auth service are signed using RS256.", "paraphrase")]),
    ("r48", "api", [("O", 3, "Run `make migrate` before starting the API locally.", "clean"),
                    ("C", 16, "Before you start the API locally, run `make migrate`.", "paraphrase")]),
    ("r49", "ops", [("C", 9, "Start the local dependencies with `docker compose up` when developing.", "clean"),
                    ("O", 21, "本地开发时用 `docker compose up` 启动依赖。", "zh")]),
    ("r50", "ops", [("X", 10, "The cron job `cleanup-sessions` runs every 10 minutes.", "clean"),
                    ("C", 23, "Every 10 minutes the `cleanup-sessions` cron job runs.", "paraphrase")]),
    ("r51", "web", [("O", 11, "Keep pull requests under 400 lines.", "clean"),
                    ("X", 24, "Pull requests should stay below 400 lines.", "paraphrase")]),
    ("r52", "api", [("C", 12, "All timestamps in the API are in UTC.", "clean"),
                    ("O", 25, "The API returns every timestamp in UTC.", "paraphrase")]),
    ("r53", "api", [("X", 13, "The order service database is PostgreSQL 15.", "clean"),
                    ("O", 26, "订单服务的数据库是 PostgreSQL 15。", "zh")]),
    ("r54", "ops", [("O", 14, "告警通过 PagerDuty 通知值班工程师。", "clean"),
                    ("C", 27, "Alerts page the on-call engineer through PagerDuty.", "zh")]),
    ("r55", "web", [("C", 15, "The web shop's CDN is Cloudflare.", "clean"),
                    ("X", 20, "We serve the web shop through the Cloudflare CDN.", "paraphrase")]),
]

# same attribute, another subject: each line is a fact of its own (paired with a restatement or each other)
LOOKALIKES: list[tuple[str, str, list[tuple[str, int, str]]]] = [
    ("l01", "api", [("C", 3, "The billing service listens on port 8080."), ("X", 11, "The ledger service listens on port 8080.")]),
    ("l02", "ops", [("O", 6, "Marco Rossi owns the search service."), ("C", 16, "Marco Rossi owns the reports service.")]),
    ("l03", "api", [("C", 8, "The auth service stores its data in PostgreSQL 16.")]),
    ("l04", "ops", [("X", 9, "Payments dashboards live in Grafana under the Payments folder.")]),
    ("l05", "api", [("O", 12, "The reports service reads its settings from config/reports.yaml.")]),
    ("l06", "api", [("X", 13, "Run the billing tests with `make test-billing`.")]),
    ("l07", "api", [("C", 14, "Payment events are published to the Kafka topic payments.v1.")]),
    ("l08", "api", [("C", 17, "The scheduler service listens on port 8087.")]),
    ("l09", "ops", [("O", 18, "Backups of the billing database run every night at 02:00 UTC.")]),
    ("l10", "api", [("C", 19, "报表服务用 ClickHouse 存储每日明细数据。")]),
    ("l11", "api", [("X", 20, "推荐服务的超时时间是 3 秒。")]),
    ("l12", "web", [("C", 21, "Errors from the mobile app are reported to Sentry project lumen-mobile.")]),
    ("l13", "api", [("O", 22, "The search service is written in Go 1.22.")]),
    ("l14", "api", [("X", 23, "The demo database is reset every Monday.")]),
    ("l15", "ops", [("O", 24, "Logs of the batch jobs are shipped to Loki with the promtail agent.")]),
    ("l16", "web", [("C", 25, "The docs site builds with Node.js 20.")]),
    ("l17", "web", [("X", 26, "Schema migrations need two approvals before merging to main.")]),
    ("l18", "api", [("O", 26, "图片服务的限流是每秒 500 个请求。")]),
    ("l19", "api", [("C", 18, "The payments service retries a failed refund 5 times with exponential backoff.")]),
    ("l20", "ops", [("X", 19, "Metric dashboards live in Grafana under the Lumen folder.")]),
]

# (outdated members, current member)
CHANGES: list[tuple[str, str, list[Member], Member]] = [
    ("c01", "api", [("X", 2, "The gateway timeout is 30 seconds.", "clean"), ("C", 6, "gateway timeout is 30 seconds", "fragment")],
     ("O", 20, "The gateway timeout is now 60 seconds.", "clean")),
    ("c02", "api", [("X", 1, "The ledger service runs on Python 3.11.", "clean"), ("C", 5, "ledger service runs on python 3.11", "lower")],
     ("O", 19, "The ledger service runs on Python 3.12 now.", "clean")),
    ("c03", "web", [("O", 4, "The max upload size is 10 MB.", "clean"), ("X", 9, "Max upload size is 10 MB.", "fragment")],
     ("C", 23, "The max upload size is 25 MB.", "clean")),
    ("c04", "api", [("C", 3, "The search index is rebuilt every 6 hours.", "clean")],
     ("X", 18, "The search index is rebuilt every 2 hours.", "clean")),
    ("c05", "api", [("X", 5, "The API rate limit per key is 1000 requests per minute.", "clean"),
                    ("O", 8, "API rate limit per key is 1000 requests per minute", "fragment")],
     ("C", 21, "The API rate limit per key is 2000 requests per minute.", "clean")),
    ("c06", "api", [("O", 5, "数据库连接池大小是 20。", "clean"), ("C", 8, "数据库连接池大小为 20", "fragment")],
     ("X", 22, "数据库连接池大小是 50。", "clean")),
    ("c07", "web", [("C", 4, "Dark mode is disabled by default in the web app.", "clean"),
                    ("O", 10, "dark mode is disabled by default in the web app", "lower")],
     ("X", 24, "Dark mode is enabled by default in the web app.", "clean")),
    ("c08", "web", [("O", 2, "Merging to main requires 1 approval.", "clean"), ("X", 7, "merging to main requires 1 approval", "lower")],
     ("C", 19, "Merging to main requires 2 approvals.", "clean")),
    ("c09", "ops", [("C", 6, "The release train leaves every Tuesday.", "clean")],
     ("O", 20, "The release train leaves every Thursday.", "clean")),
    ("c10", "web", [("X", 3, "Use Node.js 18 for the admin panel.", "clean"), ("C", 9, "use node.js 18 for the admin panel", "lower")],
     ("O", 25, "Use Node.js 20 for the admin panel.", "clean")),
    ("c11", "api", [("O", 7, "The payments API base URL is https://api.lumen.dev/v1.", "clean")],
     ("X", 21, "The payments API base URL is https://api.lumen.dev/v2.", "clean")),
    ("c12", "ops", [("C", 8, "日志保留 7 天。", "clean"), ("O", 12, "日志保留7天", "fragment")],
     ("X", 24, "日志保留 30 天。", "clean")),
    ("c13", "ops", [("X", 4, "Terraform state is stored in the S3 bucket lumen-tf-state.", "clean"),
                    ("O", 11, "terraform state is stored in the s3 bucket lumen-tf-state", "lower")],
     ("C", 22, "Terraform state is stored in the S3 bucket lumen-tfstate-prod.", "clean")),
    ("c14", "web", [("C", 5, "Password reset links expire after 24 hours.", "clean"),
                    ("X", 13, "password reset links expire after 24 hours", "lower")],
     ("O", 26, "Password reset links expire after 1 hour.", "clean")),
    ("c15", "api", [("O", 6, "Guest checkout is allowed in the web shop.", "clean"),
                    ("C", 12, "guest checkout is allowed in the web shop", "lower")],
     ("X", 23, "Guest checkout is not allowed in the web shop.", "clean")),
]

POLARITY: list[tuple[str, str, tuple[str, int, str], tuple[str, int, str]]] = [
    ("p01", "ops", ("C", 10, "Two-factor login is enabled for the admin panel."),
     ("X", 11, "Two-factor login is disabled for the admin panel.")),
    ("p02", "web", ("O", 12, "Force-pushing to main is allowed."), ("C", 13, "Force-pushing to main is not allowed.")),
    ("p03", "ops", ("O", 14, "管理后台启用了双因素登录。"), ("X", 15, "管理后台禁用了双因素登录。")),
    ("p04", "web", ("C", 15, "允许在周五发布。"), ("O", 16, "不允许在周五发布。")),
    ("p05", "ops", ("X", 16, "生产环境允许直接改数据库。"), ("O", 17, "生产环境禁止直接改数据库。")),
    ("p06", "ops", ("O", 17, "測試環境開啟了除錯日誌。"), ("C", 18, "測試環境關閉了除錯日誌。")),
    ("p07", "api", ("C", 18, "Response caching is enabled on the staging gateway."),
     ("X", 19, "Response caching is disabled on the staging gateway.")),
    ("p08", "web", ("X", 20, "Guest reviews are allowed on product pages."), ("O", 21, "Guest reviews are forbidden on product pages.")),
    ("p09", "api", ("O", 21, "The legacy v1 API is enabled."), ("C", 22, "The legacy v1 API is disabled.")),
    ("p10", "web", ("C", 23, "商品页允许匿名评论。"), ("X", 24, "商品页不允许匿名评论。")),
    ("p11", "ops", ("X", 25, "SSH access to production hosts is allowed for the on-call engineer."),
     ("C", 26, "SSH access to production hosts is not allowed for the on-call engineer.")),
    ("p12", "api", ("O", 26, "夜间批处理任务已开启。"), ("X", 27, "夜间批处理任务已关闭。")),
]

SERVICES = ("billing", "ledger", "gateway", "search", "notifier", "auth", "reports", "inventory", "scheduler",
            "payments", "checkout", "catalog")
WORDS = ("retry", "cursor", "batch", "tenant", "quota", "invoice", "refund", "webhook", "token", "session",
         "export", "digest", "shard", "ticket", "coupon", "price", "ledger_entry", "audit")
PKGS = ("httpx", "pydantic", "sqlalchemy", "fastapi", "celery", "structlog", "orjson", "boto3", "axios", "zod",
        "vite", "eslint", "prisma", "dayjs", "grpcio", "uvicorn", "alembic", "tenacity")
ONE_OFF_EN = (
    "Renamed `{w}_count` to `{w}_total` in src/{s}/metrics.py.",
    "Fixed the flaky test test_{w}_{n} in tests/{s}/test_{w}.py: it depended on the wall clock.",
    "Bumped {p} to {a}.{b}.{c} in the {s} lock file.",
    "The {s} service logs a warning when the {w} queue is longer than {n}00 items.",
    "Ticket LUM-{n}{a}: the {s} {w} endpoint returned 500 for empty payloads; fixed in PR #{n}{b}.",
    "Added an index on {w}_id to the {s} table {s}_{w}s (migration {n}{a}_{w}_idx).",
    "The {s} client times out a {w} call after {a}{b}00 ms.",
    "Moved the {w} helpers from src/{s}/utils.py to src/{s}/{w}.py.",
    "Alert {S}{W}Lag fires when the {s} {w} lag stays above {n} seconds for 5 minutes.",
    "The {s} service caches {w} lookups for {a} minutes in process.",
    "Deleted the unused feature flag {s}-{w}-v{a} from the web app.",
    "The {s} nightly report is written to reports/{s}/{w}-{n}.csv.",
    "Reproduced the {s} crash with `pytest tests/{s} -k {w}_{n}`; the cause was a None {w}.",
    "Use the `{s}-{w}` service account for the {s} cron jobs.",
    "The {w} schema of {s} is documented in docs/{s}/{w}.md.",
)
ONE_OFF_ZH = (
    "修复了 src/{s}/{w}.py 里 {w} 为空时的崩溃（PR #{n}{b}）。",
    "{s} 服务的 {w} 队列超过 {n}00 条时会报警。",
    "给 {s} 服务加了 {w}_latency_ms 指标。",
    "{s} 的 {w} 接口现在分页返回，每页 {a}0 条。",
    "把 {p} 升级到了 {a}.{b}.{c}，{s} 服务的测试都通过了。",
    "{s} 服务的 {w} 配置写在 config/{s}/{w}.toml 里。",
)


def mid(ref: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "memcli-bench-home/" + ref))


def names_in(text: str) -> list[str]:
    """Product names, identifiers and paths a keyword search should find this memory by."""
    import re

    out = [p for p in PRODUCTS + PKGS if re.search(r"(?<![\w.])" + re.escape(p) + r"(?![\w])", text)]
    for m in re.finditer(r"`([^`]+)`", text):
        out.append(m.group(1))
    for m in re.finditer(r"(?<![\w`])[A-Za-z0-9#][\w#]*(?:[./_\-][\w#]+)+", text):
        tok = m.group(0)
        if not re.fullmatch(r"[\d.:]+", tok) and tok not in out and not any(tok in o for o in out):
            out.append(tok)
    return out


def build() -> dict[str, Any]:
    rng = random.Random(28)
    memories: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []

    def add(ref: str, fact: str, agent: str, day: int, text: str, project: str, variant: str = "",
            source: str = "mcp", tags: list[str] | None = None, importance: float = 0.5) -> str:
        at = START_MS + day * DAY + rng.randrange(0, 9 * 3_600_000)
        memories.append({"id": mid(ref), "ref": ref, "fact": fact, "content": text, "scope": f"agent:{AGENTS[agent]}",
                         "project": f"lumen-{project}", "source": source, "tags": tags or [], "importance": importance,
                         "created_at": at, "variant": variant, "names": names_in(text)})
        return mid(ref)

    for gid, proj, members in RESTATEMENTS:
        ids = [add(f"{gid}{chr(97 + i)}", gid, a, d, t, proj, v) for i, (a, d, t, v) in enumerate(members)]
        groups.append({"id": gid, "kind": "restatement", "ids": ids, "best": ids[0],
                       "variants": [v for *_, v in members]})
    for gid, proj, lines in LOOKALIKES:
        ids = [add(f"{gid}{chr(97 + i)}", f"{gid}{chr(97 + i)}", a, d, t, proj, "lookalike")
               for i, (a, d, t) in enumerate(lines)]
        groups.append({"id": gid, "kind": "lookalike", "ids": ids})
    for gid, proj, old, new in CHANGES:
        olds = [add(f"{gid}{chr(97 + i)}", f"{gid}-old", a, d, t, proj, v) for i, (a, d, t, v) in enumerate(old)]
        cur = add(f"{gid}z", f"{gid}-new", new[0], new[1], new[2], proj, "current")
        groups.append({"id": gid, "kind": "change", "ids": [*olds, cur], "outdated": olds, "current": cur})
    for gid, proj, a, b in POLARITY:
        ids = [add(f"{gid}{x}", f"{gid}{x}", m[0], m[1], m[2], proj, "polarity") for x, m in (("a", a), ("b", b))]
        groups.append({"id": gid, "kind": "polarity", "ids": ids})
    # one-off facts: distinct values (a text twice would be an exact repeat, not a one-off)
    seen: set[str] = {m["content"] for m in memories}
    n = 0
    while n < 230:
        zh = rng.random() < 0.25
        tpl = rng.choice(ONE_OFF_ZH if zh else ONE_OFF_EN)
        s, w = rng.choice(SERVICES), rng.choice(WORDS)
        text = tpl.format(s=s, w=w, p=rng.choice(PKGS), n=rng.randrange(2, 99), a=rng.randrange(1, 9),
                          b=rng.randrange(0, 9), c=rng.randrange(0, 20), S=s.title(), W=w.title().replace("_", ""))
        if text in seen:
            continue
        seen.add(text)
        ref = f"o{n:03d}"
        captured = rng.random() < 0.3
        add(ref, ref, rng.choice("CXO"), rng.randrange(0, 28), text, rng.choice(("api", "web", "ops")),
            "one-off", source="hook:stop" if captured else "mcp", tags=["turn"] if captured else [],
            importance=0.5 if rng.random() < 0.9 else 0.85)
        n += 1
    memories.sort(key=lambda m: m["created_at"])
    return {
        "name": "home", "version": 1,
        "description": (__doc__ or "").split("\n\n", 2)[2].strip(),
        "agents": sorted(AGENTS.values()), "start_ms": START_MS, "days": 28,
        "memories": memories, "groups": groups,
    }


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(data['memories'])} memories, {len(data['groups'])} groups)")


if __name__ == "__main__":
    main()
