"""The same-fact test (memcli.facts.samefact) that distill merges by and check-duplicate reports by: every class of
"close in meaning, a different fact" is vetoed, restatements are recognised, and through the real service
(bundled embedder) check-duplicate and remember say conflicting/related instead of duplicate."""

from __future__ import annotations

import pytest

from memcli.facts.samefact import CONFLICT, RELATED, compare, explain, merge_verdict, same_fact
from memcli.memory.service import MemoryService

# The six pairs a new user saw merged and promoted (issue 16), then one of each class.
REPORTED = [
    ("Always run database migrations during business hours", "Never run database migrations during business hours"),
    ("checkout_v2 is enabled in production", "checkout_v2 is disabled in production"),
    ("the request timeout is 30 seconds", "the request timeout is 30 minutes"),
    ("the billing service uses PostgreSQL 16", "the payments service uses PostgreSQL 16"),
    ("`make deploy-staging` deploys the web app to the cluster", "`make deploy-prod` deploys the web app to the cluster"),
    ("Static assets live in the S3 bucket `acme-stage-assets`", "Static assets live in the S3 bucket `acme-prod-assets`"),
]
DIFFERENT = {
    "negation/must": ("You must rotate the API keys every quarter", "You must not rotate the API keys every quarter"),
    "negation/zh": ("生产数据库可以直接用 root 账号登录", "生产数据库不可以直接用 root 账号登录"),
    "antonym/allow": ("Direct pushes to main are allowed for the release bot", "Direct pushes to main are forbidden for the release bot"),
    "antonym/zh": ("灰度发布时启用 feature flag", "灰度发布时禁用 feature flag"),
    "antonym/sync": ("Invoice emails are sent synchronously", "Invoice emails are sent asynchronously"),
    "number/size": ("Uploads are limited to 10 MB per file", "Uploads are limited to 10 GB per file"),
    "number/count": ("The web tier runs 3 replicas", "The web tier runs 5 replicas"),
    "version": ("The CI image uses Node 18", "The CI image uses Node 20"),
    "version/dotted": ("Pin pydantic to 2.7.1", "Pin pydantic to 2.7.2"),
    "date": ("The certificate expires on 2026-03-01", "The certificate expires on 2026-04-01"),
    "time": ("Backups run at 02:00 UTC", "Backups run at 03:00 UTC"),
    "weekday": ("Releases go out on Tuesday", "Releases go out on Thursday"),
    "weekday/zh": ("release branch 每两周的周三 cut 一次", "release branch 每两周的周四 cut 一次"),
    "period": ("The sync job runs hourly", "The sync job runs daily"),
    "subject/person": ("Alice owns the billing dashboards", "Bob owns the billing dashboards"),
    "subject/platform": ("The iOS app reads its flags from Firebase", "The Android app reads its flags from Firebase"),
    "environment": ("Deploys to staging need one approval", "Deploys to production need one approval"),
    "environment/zh": ("测试环境的数据库每天凌晨重置", "生产环境的数据库每天凌晨重置"),
    "kebab": ("The worker image is `order-worker`", "The worker image is `orders-worker`"),
    "snake": ("Read the flag from `max_retry_count`", "Read the flag from `max_retries_count`"),
    "dotted": ("The metrics prefix is `acme.ingest.worker`", "The metrics prefix is `acme.ingest.workers`"),
    "camel": ("Components read the user from `useAuthSession`", "Components read the user from `useAuthState`"),
    "path": ("The config lives in /etc/app/config.yaml", "The config lives in /etc/app/config.yml"),
    "url": ("Webhooks post to https://hooks.acme.dev/v1/events", "Webhooks post to https://hooks.acme.dev/v2/events"),
    "error_code": ("A locked account returns E4021", "A locked account returns E4012"),
    "code_span_flag": ("The pre-commit hook runs `ruff check --fix .`", "The pre-commit hook runs `ruff check .`"),
    "near_miss/word": ("The reporting job reads from the replica", "The reporting job writes to the replica"),
    "swap": ("Logs are shipped to Loki and metrics to Prometheus", "Logs are shipped to Prometheus and metrics to Loki"),
    "swap/order": ("deploy 失败时先 rollback，再排查原因", "deploy 失败时先排查原因，再 rollback"),
    "swap/zh": ("主库负责写，从库只负责读", "主库负责读，从库只负责写"),
}
# A member whose words are all in the keeper, but the keeper's extra words change what they mean: containment
# alone must not merge them.
CONTAINED = [
    ("the queue is redis and the cache is memcached", "the cache is redis"),
    ("The queue is Redis and the cache is Memcached", "the cache is Redis"),
    ("staging deploys go through argocd and production deploys go through jenkins", "deploys go through argocd"),
    ("the replica is read-only and the primary is read-write", "the primary is read-only"),
    ("the worker runs hourly on weekdays", "the worker runs hourly"),
    ("retries are disabled for reads but enabled for writes", "retries are disabled"),
]
SAME = {
    "case_punct": ("The default branch is `main`.", "the default branch is main"),
    "hedge": ("FYI: the staging cert is self-signed, so curl needs `-k`.", "The staging cert is self-signed, so curl needs `-k`."),
    "typo": ("Rotate the Vault root token after every break-glass session.", "Rotate the Vault root token after every break-glass sesion."),
    "reorder": ("Redis runs on port 6380 in the dev compose file, not 6379.", "In the dev compose file, Redis runs on port 6380, not 6379."),
    "units": ("The request timeout is 30 seconds", "the request timeout is 30s"),
    "zh_variant": ("数据库的连接池上限是 100。", "資料庫的連線池上限是 100。"),
    "zh_variant/software": ("这个软件只支持 64 位系统。", "這個軟體只支援 64 位元系統。"),
    "synonym": ("Prod database: PostgreSQL 16 on RDS", "prod db - postgres 16 on RDS"),
}


@pytest.mark.parametrize("a,b", REPORTED)
def test_the_reported_pairs_are_different_facts_both_ways(a: str, b: str) -> None:
    for x, y in ((a, b), (b, a)):
        v = same_fact(x, y)
        assert not v.same and v.sure, (x, y, v)
        assert v.differences, "a user is told what differs"


@pytest.mark.parametrize("kind", sorted(DIFFERENT))
def test_each_kind_of_difference_is_vetoed(kind: str) -> None:
    a, b = DIFFERENT[kind]
    v = same_fact(a, b)
    assert not v.same and v.sure, (kind, v)  # sure: an LLM may not merge it either


@pytest.mark.parametrize("keeper,member", CONTAINED)
def test_a_fact_inside_a_longer_different_one_is_not_merged(keeper: str, member: str) -> None:
    assert not compare(keeper, member).same


@pytest.mark.parametrize("kind", sorted(SAME))
def test_restatements_are_the_same_fact(kind: str) -> None:
    a, b = SAME[kind]
    assert same_fact(a, b).same, (kind, same_fact(a, b))


def test_a_contradiction_is_a_conflict_and_another_subject_is_related() -> None:
    assert same_fact(*REPORTED[2]).relation == CONFLICT  # 30 s / 30 min of the same timeout
    assert same_fact(*REPORTED[0]).relation == CONFLICT  # always / never
    assert same_fact(*REPORTED[3]).relation == RELATED  # billing / payments: two facts, no contradiction
    d = same_fact(*REPORTED[2]).differences
    assert any("30 seconds" in " ".join(p) and "30 minutes" in " ".join(p) for p in d)


POLARITY = [
    ("Two-factor login is enabled for the admin panel.", "Two-factor login is disabled for the admin panel."),
    ("Guest reviews are allowed on product pages.", "Guest reviews are forbidden on product pages."),
    ("Force-pushing to main is allowed.", "Force-pushing to main is not allowed."),
    ("管理后台启用了双因素登录。", "管理后台禁用了双因素登录。"),
    ("生产环境允许直接改数据库。", "生产环境禁止直接改数据库。"),
    ("商品页允许匿名评论。", "商品页不允许匿名评论。"),
    ("測試環境開啟了除錯日誌。", "測試環境關閉了除錯日誌。"),
    ("The release train leaves every Tuesday.", "The release train leaves every Thursday."),
    ("Terraform state is stored in the S3 bucket lumen-tf-state.",
     "Terraform state is stored in the S3 bucket lumen-tfstate-prod."),
]


@pytest.mark.parametrize("a,b", POLARITY)
def test_polarity_pairs_are_conflicts_in_english_and_chinese(a: str, b: str) -> None:
    # issue 28: these were "related" (the words that carry the value counted as another subject)
    for x, y in ((a, b), (b, a)):
        v = same_fact(x, y)
        assert v.relation == CONFLICT, (x, y, v)


RESTATED = [
    ("The gateway accepts two ways to authenticate: OAuth2 and API keys.",
     "The gateway accepts ways to authenticate, e.g. OAuth2 and API keys."),
    ("The checkout page supports three payment methods: cards, PayPal and bank transfer.",
     "The checkout page supports payment methods, e.g. cards, PayPal and bank transfer."),
    ("The API is deployed to three regions: us-east-1, eu-west-1 and ap-southeast-1.",
     "The API is deployed to 3 regions: us-east-1, eu-west-1 and ap-southeast-1."),
    ("账单服务部署在两个可用区。", "账单服务部署在 2 个可用区。"),
    ("The scheduler uses RabbitMQ for its job queue.", "The scheduler uses RabitMQ for its job queue."),
    ("Priya Natarajan owns the notifier service.", "The notifier service is owned by Priya Natarajan."),
]


@pytest.mark.parametrize("a,b", RESTATED)
def test_an_example_list_a_count_said_two_ways_a_typo_in_a_name_and_a_passive_are_restatements(a: str, b: str) -> None:
    # issue 28: reported as conflicts before (e.g. / two; 两 / 2; RabbitMQ / RabitMQ; exchanged places)
    for x, y in ((a, b), (b, a)):
        assert merge_verdict(x, y).same, (x, y, merge_verdict(x, y))


@pytest.mark.parametrize("a,b", [
    ("The API is deployed to three regions: us-east-1, eu-west-1 and ap-southeast-1.",
     "The API is deployed to 4 regions: us-east-1, eu-west-1 and ap-southeast-1."),
    ("The gateway accepts two ways to authenticate: OAuth2 and API keys.",
     "The gateway accepts three ways to authenticate: OAuth2 and API keys."),
    ("账单服务部署在两个可用区。", "账单服务部署在 3 个可用区。"),
    ("The ledger uses UserService for lookups.", "The ledger uses UsersService for lookups."),
    ("Alice reviews Bob's pull requests.", "Alice's pull requests are reviewed by Bob."),
])
def test_a_count_that_is_not_the_list_a_plural_name_and_swapped_roles_stay_apart(a: str, b: str) -> None:
    assert not merge_verdict(a, b).same and not merge_verdict(b, a).same, (a, b)


@pytest.mark.parametrize("en,zh", [
    ("The gateway rate limit is 500 requests per second.", "网关的限流是每秒 500 个请求。"),
    ("Backups of the ledger database run every night at 02:00 UTC.", "账本数据库的备份每天晚上 02:00 UTC 执行。"),
    ("Feature flags are managed in LaunchDarkly.", "功能开关在 LaunchDarkly 里管理。"),
    ("The staging database is reset every Monday.", "staging 数据库每周一重置。"),
    ("Refunds are processed through Stripe within 5 business days.", "退款通过 Stripe 在 5 个工作日内处理。"),
    ("The mobile app is built with React Native 0.74.", "行動應用是用 React Native 0.74 開發的。"),
])
def test_the_same_fact_in_english_and_chinese_is_the_same_fact(en: str, zh: str) -> None:
    # issue 28: no cross-language pair was merged (the word rules cannot compare them)
    assert same_fact(en, zh).same and same_fact(zh, en).same and merge_verdict(en, zh).same


@pytest.mark.parametrize("en,zh", [
    ("The gateway rate limit is 500 requests per second.", "图片服务的限流是每秒 500 个请求。"),  # another service
    ("The gateway timeout is 30 seconds.", "网关超时是 30 分钟。"),  # another unit
    ("Refunds take 5 days.", "退款需要 5 小时。"),
    ("The staging database is reset every Monday.", "staging 数据库每周五重置。"),  # another day
    ("Dark mode is enabled by default in the web app.", "网页应用默认禁用深色模式。"),  # the opposite
    ("Guest checkout is allowed in the web shop.", "网店不允许访客结账。"),
    ("Refunds are processed through Stripe within 5 business days.", "退款通过 PayPal 在 5 个工作日内处理。"),
    ("Backups of the ledger database run every night at 02:00 UTC.", "账本数据库的备份每天晚上 03:00 UTC 执行。"),
    ("The notifier sends emails through Amazon SES.", "通知服务通过 Amazon SES 发送短信和邮件。"),  # says more
])
def test_an_english_and_a_chinese_memory_that_differ_stay_apart(en: str, zh: str) -> None:
    assert not same_fact(en, zh).same and not merge_verdict(zh, en).same, (en, zh)


def test_explain_says_it_in_plain_words() -> None:
    assert explain(*REPORTED[2]).startswith("would not merge: a conflict: they state different values")
    assert "30 seconds" in explain(*REPORTED[2])
    assert explain(*SAME["case_punct"]).startswith("would merge")


# ------------------------------------------------------------------------------------------ through the service
@pytest.mark.slow
def test_check_duplicate_and_remember_report_conflicts_not_duplicates(real_service: MemoryService) -> None:
    svc = real_service
    ids = [svc.remember(a, agent="codex").memory_id for a, _ in REPORTED]
    for (a, b), mid in zip(REPORTED, ids):
        dup = svc.check_duplicate(b, threshold=0.8)
        assert not dup.is_duplicate, (b, dup.item())
        near = {h.memory.id: h.relation for h in dup.similar}
        assert mid in near and near[mid]["relation"] in ("conflict", "related"), (b, dup.item())
        assert near[mid]["differences"]
    # the same fact said again is a duplicate, and remember says so
    again = svc.check_duplicate("FYI: always run database migrations during business hours.")
    assert again.is_duplicate and again.similar[0].memory.id == ids[0] and again.similar[0].relation["relation"] == "same"
    res = svc.remember("Never run database migrations during business hours", agent="claude-code")
    assert res.created and res.duplicate_of == []
    assert [r["memory_id"] for r in res.related] == [ids[0]] and res.related[0]["relation"] == "conflict"
    res = svc.remember("ALWAYS run database migrations during business hours!", agent="gemini")
    assert res.duplicate_of == [ids[0]]
