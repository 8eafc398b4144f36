"""Is a turn worth keeping? Decided from the turn itself, with no model and no network.

A teammate's memory should hold what outlives the session: a decision and its reason, a root cause, a fix, a
convention, a configuration value, a preference, a gotcha. It should not hold greetings and thanks, commands
("run the tests", "继续", "commit"), progress reports ("Added X", "写好了"), tool output relayed ("412 passed"),
or a question answered with nothing new. The verdict weighs general cues of both, in English and Chinese
(简体 and 繁體), as a teammate would:

- evidence for keeping: the user states a rule or a preference ("always pnpm", "以后用中文"); the reply names a
  cause ("because", "root cause", "原因"), a fix, a decision ("instead of", "改成", "决定"), a rule ("never",
  "must", "不要", "一律") or a caveat ("注意", "gotcha"); concrete values (ports, versions, durations, sizes,
  `KEY=value`, paths, identifiers); and enough reply to hold them;
- evidence against: a short imperative prompt or a pasted command, a reply that reports an action or a tool's
  result ("Done", "Committed", "3 passed", "全部通过"), a reply that ends by asking what to do, hedging.

`python bench/sessions.py` measures the result on labelled sessions (bench/README.md). With an LLM configured
(`[hooks] llm_provider`), turns the rules reject without being sure of it are also sent to the model, which may
keep them (a summary) or not ("SKIP").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memcli.hooks.text import is_trivial, one_line, prose

KEEP_AT = 3.0  # points a turn needs to be kept
SURE_SKIP = 0.0  # below this (evidence against the turn) the LLM is not asked either
LOOK_AT = 12_000  # characters of the prompt and of the reply weighed (a turn's point is not in its 50th page)

_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_RE = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
_WORD_RE = re.compile(r"[A-Za-z0-9_'\-]+|[\u3400-\u9fff]")

# ----------------------------------------------------------------------------------------------- cues
# Each is a family of words a teammate hears as "this is worth writing down". English words are whole words.
_CAUSE = re.compile(
    r"(?i)\bcauses?:|\b(because|root[- ]cause|the cause|caused by|due to|the reason|which is why|that's why|hence|"
    r"therefore|as a result|turns? out|so that|otherwise|traced\b.{0,60}?\bto|comes? from|came from)\b"
    r"|原因|根因|因为|因為|由于|由於|导致|導致|造成|是因|所以")
_SO = re.compile(r"(?i), so\b|, which (?:means|is why)\b")  # a weaker "because": also common in plain narration
_FIX = re.compile(r"(?i)\b(?:fix|fixed|mitigated):|\b(the fix|fixed by|fixed it|workaround|mitigat\w*|resolved by|"
                  r"now (?:gets?|uses?|has|runs?|sets?|points?|reads?|writes?|returns?|retries|waits?|listens?|"
                  r"goes|keeps?|drops?|skips?)|no longer|works (?:again|now))\b"
                  r"|修复|修復|解决|解決|绕过|繞過|规避|規避|现在会|現在會|现在用|現在用|不再")
_DECISION = re.compile(
    r"(?i)\b(decid\w*|decision|go(?:ing)? with|chose|instead of|instead|switch(?:ed)? to|moved? to|migrat\w* to|"
    r"replaced?|standardi[sz]\w*|agreed|on record|recommend\w*|keep (?:it|them|this|that)?|stays?|pin(?:ned)?|"
    r"deliberately|on purpose|intentionally|let's use|we'll use|we will use|let's go with)\b"
    r"|决定|決定|方案|改成|改为|改為|改用|换成|換成|采用|採用|选用|選用|保持|保留|建议|建議|约定|約定|故意|刻意")
_RULE = re.compile(
    r"(?i)\b(always|never|must(?:n't)?|shouldn't|should never|should always|don't|do not|not allowed|only|rule|"
    r"convention|policy|"
    r"from now on|going forward|for the record|by default|default|required?|requires)\b"
    r"|必须|必須|不要|不能|别|別|一律|统一|統一|规则|規則|规范|規範|只能|只有|永远|永遠|以后|以後|默认|默認|預設|"
    r"禁止|记得|記得|一定要|不允许|不允許|都用|都是")
_CAVEAT = re.compile(r"(?i)\b(gotcha|careful|caveat|beware|watch out|note|pitfall|breaks?|broke|won't|"
                     r"doesn't|isn't|can't|unsafe|not safe)\b|注意|坑|小心|陷阱|不会|不會|会被|會被")
# what the user says when stating a preference or a standing instruction
_PREFERENCE = re.compile(
    r"(?i)\b(always|never|don't|do not|please don't|from now on|going forward|for the record|remember|note for|"
    r"i want|i'd like|i prefer|we prefer|we use|we're on|let's|standardi[sz]e|make sure|no \w+ (?:anywhere|ever))\b"
    r"|以后|以後|不要|别|別|一律|统一|統一|记住|記住|记得|記得|我想|我要|我希望|都用|请用|請用|就好|就行")
# concrete values: numbers with units, versions, ports, times, KEY=value, env names, paths, identifiers in code
_VALUE = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?|[KMGT]i?B|%|px|rows?|slots?|"
    r"replicas?|workers?|pods?|nodes?|requests?|connections?|parts?|req/\w+|/min|/s)\b"
    r"|\b\d+(?:\.\d+)?\s?(?:秒|分钟|分鐘|小时|小時|天|个|個|次|行|张|張)"
    r"|\bv?\d+\.\d+(?:\.\d+)*\b|:\d{2,5}\b|\b\d{1,2}:\d{2}\b|\b[\w.\-]+=[\w.\-/:@\"']+"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|`[^`\n]{2,200}`|(?:^|\s)(?:\.{0,2}/)?[\w.\-]+/[\w.\-/]+"
    r"|(?<![\w&])[#@][A-Za-z][\w\-/.]+|\b[\w.+\-]+@[\w\-]+\.[\w.]+"  # channels, handles, addresses
    r"|\b(?:port|version|timeout|limit|size|ttl|retries|replicas|[a-z]+[A-Z]\w*)\s?[=:]?\s?\d+"
    r"|\b[\w\-]+\.(?:py|js|ts|tsx|go|rs|rb|java|kt|md|toml|json|ya?ml|sh|sql|cfg|ini|conf|env|lock|hcl|tf)\b"
    r"|\b[A-Z][A-Za-z]+ \d+(?:\.\d+)*\b"  # a named thing and its version: PostgreSQL 16, Android 14
    r"|(?i:\b(?:http|status|returns?|gets?|answers?|with) (?:a |an )?[1-5]\d\d\b)"  # an HTTP status
    r"|(?i:\b(?:every|each) (?:day|night|hour|week|month|morning|evening|(?:mon|tues|wednes|thurs|fri|satur|sun)day)s?"
    r"|\b(?:daily|nightly|hourly|weekly|monthly|midnight|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b)"
    r"|每天|每晚|每周|每週|每月|每小时|每小時|凌晨|午夜|[周週][一二三四五六日]|星期[一二三四五六日天]|\d+\s?[点點]")
# ----------------------------------------------------------------------------------------------- noise
_THANKS = re.compile(
    r"(?i)^\W*(thanks?|thank you|thx|ty|cheers|great (?:work|job)|nice|cool|perfect|awesome|lol|good|ok(?:ay)?|"
    r"done for today|see you|bye|good ?night|going to bed|that's all|hi|hello|hey|good morning|morning|你好|早安?|嗨|"
    r"谢谢|謝謝|多谢|多謝|辛苦|好的?|好吧|可以|行|"
    r"收到|明白|嗯|没问题|沒問題|今天先到这|今天先到這|👍|🙏)(?:\W|$)")
_COMMAND_VERB = re.compile(
    r"(?i)^\W*(?:(?:ok(?:ay)?|yes|yep|yeah|cool|good|great|perfect|nice|alright|then|now|please|pls|so|and|"
    r"go ahead and|can you|could you|let's)[,.!]?\s+)*"
    r"(run|re-?run|commit|push|deploy|apply|plan|merge|ship|build|test|tests|write|add|fix|do|try|retry|import|"
    r"tag|implement|wire|check|show|open|create|update|remove|delete|install|generate|kick off|roll (?:it )?out|"
    r"measure|draft|redo|re-?plan|refresh|revert|undo|format|lint|bump|rename|move|start|stop|restart|watch|"
    r"execute|release|publish|continue|proceed|go|clean|set up|setup|make|pnpm|npm|yarn|git|pytest|terraform|"
    r"kubectl|dbt|docker|atlantis|helm|cargo|make|python|sqlmigrate)\b"
    r"|^\W*(?:好[，,]?\s*|嗯[，,]?\s*|ok\s*|那\s*|先\s*)*(跑|提交|推|部署|写|寫|加|改|修|生成|执行|執行|试|試|看一?下|"
    r"帮我|幫我|apply|commit|继续|繼續|重新|上线|上線|发布|發布|合并|合併|删|刪|装|裝|建)")
_STATUS = re.compile(
    r"(?i)^\W*(done|committed|pushed|merged|deployed|rolled out|build succeeded|all \d* ?(?:tests )?pass\w*|"
    r"tests? pass\w*|\d+ (?:passed|failed|tests?)|plan(?=:)|applied|imported|unlocked|clean|added|updated|created|"
    r"wrote|ran|tagged|set|installed|removed|deleted|generated|upgraded|renamed|moved|started|fixed|one passes)\b"
    r"|^\W*[\u4e00-\u9fff\w ]{0,6}?(完成|好了|成功|生成了|跑完|通过|通過|过了|過了|提交了|推送了|部署了)|^\W*已")
_RESULT = re.compile(r"(?i)\b(\d+ passed|\d+ failed|passed|succeeded|no changes|is clean|are clean|green|"
                     r"\d+ to (?:add|change|destroy))\b|通过|通過|过了|過了|成功|没有报错|沒有報錯")
_ASKS_BACK = re.compile(r"(?i)(want me to|shall i|should i|do you want|which (?:one|way)|要不要|要我|需要我|"
                        r"你想要|你想|能帮我|能幫我|你要|可以吗|可以嗎)")
# the user asks for a fact (a value, a place, an owner): answered with values, that is configuration
_ASKS_FACT = re.compile(r"(?i)\b(what|which|where|who|whom|when|how (?:many|much|long|often|big|large)|"
                        r"how (?:do|should|can|would) we)\b|多少|哪|谁|誰|"
                        r"什么时候|什麼時候|几|幾|在哪")
# ... or for an explanation of what exists (answerable again from the code)
_ASKS_TOUR = re.compile(r"(?i)\b(explain|tour|walk me through|overview|introduce|what does .{0,40} do|"
                        r"how is .{0,40}(?:laid out|organi[sz]ed|structured))\b"
                        r"|介绍|介紹|讲讲|講講|解释一下|解釋一下|怎么组织|怎麼組織|在做什么|在做什麼|是干什么的|是幹什麼的")
# the user asks why: the answer is a cause
_ASKS_WHY = re.compile(r"(?i)\b(why|how come|what(?:'s| is) (?:wrong|going on|happening)|what happened)\b|为什么|為什麼|"
                       r"为啥|為啥|怎么回事|怎麼回事|什么原因|什麼原因")
# the user reports a problem (an implicit "why?"): an answer with a cause or a fix is worth keeping
_PROBLEM = re.compile(r"(?i)\b(fails?|failing|failed|broken|breaks|crash\w*|errors?|exceptions?|doesn't work|"
                      r"does not work|stuck|hangs?|timing out|times out|slow|flaky|returns? (?:a )?5\d\d)\b"
                      r"|报错|報錯|失败|失敗|挂了|掛了|崩|闪退|閃退|超时|超時|卡住|很慢|不工作|出错|出錯")
# the user asks for a decision: a reply that makes one is worth keeping
_ASKS_DECISION = re.compile(r"(?i)\b(should we|shall we|which (?:one|is better)|better to)\b|\bor\b[^.?]{0,60}\?"
                            r"|还是|還是|用哪|選哪|选哪|该不该|該不該|要不要用")
# standing instructions (a preference for every later session) and their acknowledgement
_STANDING = re.compile(r"(?i)\b(always|never|from now on|going forward|for the record|remember|in this repo|anywhere|"
                       r"ever|every time)\b|以后|以後|一律|统一|統一|永远|永遠|记住|記住|每次")
_ACKNOWLEDGED = re.compile(r"(?i)^\W*(understood|noted|got it|will do|sure|ok(?:ay)?|right|agreed|of course|"
                           r"sounds good)\b|\b(from now on|i'll (?:always|never|only|use|keep|stick)|i won't|"
                           r"going forward)\b|记住了|記住了|明白|收到|没问题|沒問題|好的|以后|以後|之后|之後")
# the user tells what was decided (not asks): "we decided …", "the team agreed …", "我们决定…"
_STATED_DECISION = re.compile(r"(?i)\b(?:we|i|the team|they)(?: have| had|'ve)? (?:decided|agreed|chose|"
                              r"settled on|standardi[sz]ed on|are going with|will go with)\b|\bthe decision is\b"
                              r"|我们决定|我們決定|决定了|決定了|定下来|定下來|约定|約定")
# a reply that lays out options for the user to choose from has not decided anything yet
_OPTIONS = re.compile(r"(?i)\boptions?:|\b(trade-?offs?|pros and cons|two ways|either\b.{0,80}\bor)\b"
                      r"|取舍|取捨|两种|兩種|两个办法|兩個辦法|几种|幾種|选项|選項")
_HEDGE = re.compile(r"(?i)\b(probably|maybe|might be|i guess|not sure|i can't tell|i'm not sure|seems to)\b|"
                    r"猜测|猜測|可能是|不确定|不確定|也许|也許")


def _units(text: str) -> int:
    """Words (a CJK character counts as half a word)."""
    n = 0.0
    for w in _WORD_RE.findall(text):
        n += 0.5 if _CJK_RE.match(w) else 1.0
    return int(n)


@dataclass
class Verdict:
    """Whether to keep a turn, why (the cues that decided), its points, and whether an LLM may be asked."""

    keep: bool
    reason: str
    score: float = 0.0
    ask_llm: bool = False


def judge_turn(prompt: str, reply: str) -> Verdict:
    """Keep or skip one turn (``prompt``, the assistant's final ``reply``), from general cues."""
    p = prose((prompt or "").strip()[:LOOK_AT])
    r_all = (reply or "").strip()[:LOOK_AT]
    r = one_line(_FENCE_RE.sub(" ", r_all))
    r_len = len(r) if not _CJK_RE.search(r) else int(len(r) * 2.2)  # a CJK character says about a word's worth
    if p and (is_trivial(p) or _THANKS.match(p) and _units(p) <= 8) and r_len < 260:
        return Verdict(False, "greeting or acknowledgement", 0.0)
    if r_len < 24 and not _PREFERENCE.search(p):
        return Verdict(False, "nothing in the reply", 0.0)
    why: list[tuple[float, str]] = []
    _evidence(p, r, r_all, r_len, why)
    _noise(p, r, r_len, why)
    score = round(sum(points for points, _ in why), 2)
    keep = score >= KEEP_AT
    reason = ("kept: " if keep else "not worth keeping: ") + (
        ", ".join(f"{label} {points:+.1f}" for points, label in why) or "no cue")
    return Verdict(keep, reason, score, ask_llm=not keep and score >= SURE_SKIP)


def _asks(p: str) -> bool:
    return p.rstrip().endswith(("?", "？")) or bool(_ASKS_FACT.search(p))


def _evidence(p: str, r: str, r_all: str, r_len: int, why: list[tuple[float, str]]) -> None:
    """What speaks for keeping the turn: stated rules, causes, fixes, decisions, values, a fact asked for."""
    stated = " ".join(x for x in _SENTENCE_RE.split(p) if x.strip() and not x.rstrip().endswith(("?", "？")))
    if _STANDING.search(stated) and (_PREFERENCE.search(stated) or _RULE.search(stated)):
        why.append((3.0, "the user states a standing rule or preference"))
    elif _PREFERENCE.search(stated) or _RULE.search(stated) and _units(stated) >= 6:
        why.append((2.0, "the user states a rule or preference"))
        if _ACKNOWLEDGED.search(r[:200]):
            why.append((1.0, "acknowledged"))
    if _STATED_DECISION.search(stated):
        why.append((3.0, "the user states a decision"))
    for rx, points, label in ((_CAUSE, 1.5, "cause"), (_FIX, 1.5, "fix"), (_DECISION, 1.0, "decision"),
                              (_RULE, 1.0, "rule"), (_CAVEAT, 0.5, "caveat")):
        if rx.search(r):
            why.append((points, label))
    if not _CAUSE.search(r) and _SO.search(r):
        why.append((0.75, "consequence"))
    values = {m.group(0).strip() for m in _VALUE.finditer(r_all)}
    if values:
        why.append((min(2.0, 0.5 * len(values)), f"{len(values)} values"))
        if _asks(p) and _ASKS_FACT.search(p) and not _ASKS_TOUR.search(p):
            why.append((2.5, "a fact asked for"))
    if _asks(p) and _ASKS_WHY.search(p):
        why.append((1.5, "a cause asked for"))
    elif _PROBLEM.search(p) and (_CAUSE.search(r) or _FIX.search(r)):
        why.append((1.5, "a problem explained"))
    if _ASKS_DECISION.search(p) and _DECISION.search(r):
        why.append((2.0, "a decision asked for and made"))
    if _ASKS_TOUR.search(p):
        why.append((-1.0, "an explanation asked for"))
    if r_len >= 300:
        why.append((1.0 if r_len < 700 else 1.5, "a substantial reply"))


def _noise(p: str, r: str, r_len: int, why: list[tuple[float, str]]) -> None:
    """What speaks against it: a command, a progress report, a tool's result, options, a hand-back, hedging."""
    if _COMMAND_VERB.match(p) and _units(p) <= 12 and not _asks(p):
        # a long reply to a command may still hold what was decided and why
        why.append((-1.5 if r_len < 300 else -0.5, "a command"))
    if _STATUS.match(r) and r_len < 500:
        why.append((-1.5 if r_len < 250 else -0.5, "a progress report"))
    if _RESULT.search(r[:120]) and r_len < 300:
        why.append((-1.0, "a tool's result"))
    if _OPTIONS.search(r):
        why.append((-1.0, "options, no decision"))
    tail = r[-160:]
    if _ASKS_BACK.search(tail) or tail.rstrip().endswith(("?", "？")):
        why.append((-1.0, "ends by asking"))
    if _HEDGE.search(r):
        why.append((-0.5, "hedged"))
