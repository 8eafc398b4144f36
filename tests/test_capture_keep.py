"""What the Stop hook keeps: the keep/skip verdict on turns written for these tests (not the bench data), in
English, 简体 and 繁體, and the memory's text stating the fact."""

from __future__ import annotations

import pytest

from memcli.hooks.keep import judge_turn
from memcli.hooks.summarize import extractive

KEEP = [
    # a configuration value asked for and answered
    ("which database does billing use?", "Billing uses PostgreSQL 16 because of JSONB support."),
    ("what port does the metrics exporter listen on?",
     "The metrics exporter listens on port 9464 (OTEL_EXPORTER_PROMETHEUS_PORT)."),
    ("which queue does the mailer use?",
     "The mailer consumes the `outbound-mail` queue on RabbitMQ; retries go to `outbound-mail.dlq`."),
    ("find where the retry policy lives",
     "The retry policy lives in net/retry.py: 5 attempts, exponential backoff from 200 ms."),
    ("how do we release a new version?",
     "Push a tag `v*`: the release workflow builds the wheel and publishes it to PyPI; only maintainers can push "
     "tags."),
    # a decision, a cause, a fix
    ("what did we decide about caching?", "We decided to cache session tokens in Redis with a 15 minute TTL."),
    ("", "We traced the flaky checkout test to a shared Redis database between CI shards; each shard now gets "
         "its own database index."),
    ("why are some tables missing from backups?",
     "The nightly backup job skips tables created after midnight; the fix is to list tables at job start."),
    ("the upload test keeps timing out on CI",
     "Root cause: the S3 mock starts slowly on CI runners, so the first request hits a closed port. Fixed by "
     "waiting for its /health endpoint in conftest.py before the tests start; the suite passed 20 times in a row."),
    ("why MySQL for billing?",
     "billing stays on MySQL 8 because the reporting jobs depend on its binlog format."),
    ("when do we ship? I keep forgetting the schedule",
     "I checked the release workflow and the team calendar. Releases go out on Tuesdays: the release workflow "
     "runs on the v* tag that the release manager pushes every Tuesday morning after the standup. Hotfixes can "
     "go out any day."),
    # a decision the user tells, even when the reply only reports that it is done
    ("We decided the osprey nightly report moves to Mondays at 07:00.",
     "Done: the osprey nightly report is now scheduled for Mondays at 07:00, and its owners know."),
    ("我们决定以后每个迁移都先在 staging 跑一遍再上生产。", "好的，已经记下了：迁移先在 staging 跑，再上生产。"),
    # a preference or a convention the user states, even with a short answer
    ("please don't mock the database in tests here, we got burned by that before",
     "Understood: tests will hit the real Postgres test database through the factories."),
    ("from now on, always use pnpm in this repo, never npm", "Got it: pnpm only from now on."),
    ("以后提交信息都用英文写，跟我说话用中文", "好的，以后 commit message 用英文，和你交流用中文。"),
    ("數據庫用的是哪個版本？", "正式環境的資料庫是 PostgreSQL 15.4，連線池上限 200，設定在 `deploy/db.yaml`。"),
    ("为什么夜里的同步任务老是失败？",
     "原因是同步任务和备份任务都在凌晨 2 点跑，抢同一个数据库连接池，超时后被杀掉。已经把同步任务改到 3:30，"
     "并把连接池从 10 调到 20。"),
    ("the staging deploy keeps failing with ImagePullBackOff",
     "Root cause: the staging cluster's node role lost `ecr:BatchGetImage` when the IAM module was upgraded to v3. "
     "I added the permission back in `iam/nodes.tf`; the pods pull fine now."),
    ("let's always squash-merge PRs in this repo",
     "Agreed: squash-merge only. I turned off merge commits and rebase merges in the repo settings."),
    ("where do the nightly backups go?",
     "To the `acme-backups` S3 bucket in eu-west-1, under `db/<date>/`, kept for 35 days by a lifecycle rule."),
    ("should we use Celery or RQ for the new jobs?",
     "Let's use Celery: we already run it for billing, it has retries with backoff and beat for schedules, and RQ "
     "would be a second queue system to operate."),
    ("the login page returns 500 after the upgrade",
     "The session backend setting was renamed in Django 5: `SESSION_ENGINE` still pointed to the removed alias. "
     "Fixed by setting it to `django.contrib.sessions.backends.cached_db`; login works again."),
    ("who owns the search service?",
     "The search service is owned by the discovery team (lead: Priya Shah); on-call in PagerDuty \"Search\", "
     "channel #search-dev."),
    ("別再用 moment.js 了，以後日期一律用 date-fns", "好的，之後日期處理一律用 date-fns，我也把 moment 從 package.json 移除了。"),
    ("为什么 CI 老是超时？",
     "因为 CI 的 runner 只有 2 核，而测试默认开了 8 个 worker，互相抢 CPU。我把 `-n auto` 改成了 `-n 2`，现在 CI 稳定在 6 分钟左右。"),
    ("这个超时到底设多少合适？",
     "决定：上游接口超时统一设为 5 秒，重试 2 次，指数退避从 200ms 开始；写进了 `config/http.toml`，不要在代码里写死。"),
]

SKIP = [
    ("thanks!", "You're welcome!"),
    ("ok", "Done."),
    ("hi there", "Hi! How can I help you today?"),
    ("great work, thanks a lot", "Glad I could help! Let me know if you need anything else."),
    ("谢谢，今天先到这", "不客气，明天见。"),
    ("好", "好的。"),
    ("继续", "好的，接下来我会修改 parser.py 并补上测试。"),
    ("run the tests", "All 212 tests passed."),
    ("commit it", "Committed as `3f2a1b9` on `feature/export`."),
    ("push the branch", "Pushed `feature/export` to origin."),
    ("跑一下测试", "全部通过，共 58 个测试。"),
    ("now fix the lint errors", "Fixed the 4 lint errors; `ruff check` is clean now."),
    ("run the migration on staging", "Applied: `0042_add_index` ran in 3.2 s on staging, no errors."),
    ("部署到预发环境", "部署完成，3 个 pod 都已就绪。"),
    ("what's next?", "Next I'll update the README and then run the tests again. Want me to continue?"),
    ("add a docstring to parse_args", "Added a docstring to `parse_args` in `cli.py`."),
    ("can you look at the failing CI job?",
     "Let me check the CI logs first. I'll start with the lint step and then look at the unit tests."),
    ("refactor the payment module", "I've split `payments.py` into `client.py`, `models.py` and `webhooks.py` and "
                                    "updated the imports. All 143 tests still pass."),
    ("what does this function do?",
     "`normalize_amount` takes an amount in cents and a currency and returns a `Decimal` rounded to the currency's "
     "minor unit. It's called from the invoice serializer and the CSV export."),
    ("plan the migration to the new API", "Here's a plan:\n1. Add the new client behind a flag.\n2. Migrate the read "
     "paths.\n3. Migrate the write paths.\n4. Remove the old client.\nShall I start with step 1?"),
    ("explain the difference between a list and a tuple in python",
     "Lists are mutable and tuples are immutable; tuples can be dictionary keys and are slightly faster to create."),
    ("show me the diff", "The diff touches 3 files: `api/views.py` (+12 −4), `api/serializers.py` (+30 −2) and "
                         "`tests/test_api.py` (+45)."),
    ("did the deploy finish?", "Yes, the deploy finished at 14:32 and all 6 pods are healthy."),
    ("好的，开始吧", "好的，我先读一下 `settings.py`，然后再改配置。"),
    ("帮我看看这个函数在做什么", "这个函数读取配置文件，把每个 key 转成小写，然后返回一个字典。"),
    ("写个单元测试", "写好了 `tests/test_parse.py`，覆盖了空输入、非法输入和正常输入三种情况，都通过了。"),
    ("提交吧", "已提交：`a1b2c3d fix: handle empty input`。"),
    ("these are the logs:\n\n2025-05-01 10:00:01 ERROR timeout\n2025-05-01 10:00:02 ERROR timeout",
     "I see repeated timeouts starting at 10:00. Can you also paste the config of the upstream service so I can "
     "compare the timeout values?"),
    ("lgtm, merge it", "Merged PR #412 into main."),
    ("how do I reverse a list in python?", "Use `lst.reverse()` to reverse in place, or `lst[::-1]` for a new list."),
]


@pytest.mark.parametrize(("prompt", "reply"), KEEP)
def test_turns_worth_keeping_are_kept(prompt: str, reply: str) -> None:
    v = judge_turn(prompt, reply)
    assert v.keep, v.reason


@pytest.mark.parametrize(("prompt", "reply"), SKIP)
def test_chatter_commands_and_reports_are_skipped(prompt: str, reply: str) -> None:
    v = judge_turn(prompt, reply)
    assert not v.keep, v.reason


def test_the_verdict_gives_its_reasons() -> None:
    v = judge_turn("why does the nightly export fail?",
                   "Because the export runs before the invoices are generated; I moved it to 02:30 UTC.")
    assert v.keep and "cause" in v.reason
    v = judge_turn("thanks!", "You're welcome!")
    assert not v.keep and "greeting" in v.reason and not v.ask_llm


def test_a_pasted_log_is_not_the_prompt_that_is_remembered() -> None:
    prompt = ("the nightly export crashed again:\n\nTraceback (most recent call last):\n  File \"jobs/export.py\", "
              "line 88, in run\n    rows = fetch(cursor)\npsycopg.errors.QueryCanceled: canceling statement due "
              "to statement timeout\n\nwhat is going on?")
    reply = ("The export query runs into the 30 s statement_timeout of the reporting role. Fixed by running the "
             "export with its own role `exporter` whose statement_timeout is 10 min.")
    text = extractive(prompt, reply)
    assert text.startswith("User: the nightly export crashed again") and "what is going on?" in text
    assert "line 88" not in text and "Traceback" not in text
    assert "statement_timeout of the reporting role" in text and "exporter" in text


def test_a_sentence_that_starts_with_a_number_keeps_it() -> None:
    text = extractive("how big is courier_pings?", "3.1 billion rows, 61 GiB in 97 partitions.\n\n1. Copy it by "
                      "partition.\n2) Swap the tables.")
    assert "Assistant: 3.1 billion rows, 61 GiB in 97 partitions. Copy it by partition. Swap the tables." in text


def test_the_verdict_is_quick_on_a_huge_turn() -> None:
    import time

    reply = ("Because the export runs before the invoices exist, it now runs at 02:30 UTC. " * 3000
             + "```\n" + "x = 1\n" * 20000 + "```")
    t0 = time.perf_counter()
    assert judge_turn("why does the export fail? " * 500, reply).keep
    assert time.perf_counter() - t0 < 0.5
