"""The same fact in English and in Chinese? The same-fact test for a pair written in two scripts.

The small multilingual embedder scores an English sentence and its Chinese translation no closer than two
unrelated sentences of one language (cosine ≈ 0.86), so similarity cannot propose such pairs and the word
rules of :mod:`memcli.facts.samefact` cannot compare them. This test does, conservatively, with a glossary of
everyday developer words (English → Chinese, general, not tuned to one store). A pair is the same fact only
when:

- both state the same values (numbers, versions, times, identifiers, paths: the same set) and the same
  names (every Latin word of the Chinese text is in the English one), with at least one of them in common;
- no negation on one side only, and the same words of each kind both use (enable/启用, Monday/周一, …);
- every content word of the English text is said in the Chinese one (a glossary translation, or the word
  itself): an English word the glossary does not know makes the pair unsure, never the same;
- and the Chinese text says hardly anything else (at most two characters left once the translations, kinds,
  numbers, particles and function words are taken out).

Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from memcli.facts.words import (
    CJK_HEDGES,
    CJK_POLES,
    CJK_STOP_CHARS,
    EN_GENERIC,
    EN_HEDGES,
    EN_STOP,
    POLES,
    UNITS,
)

# English word (as written, lower case, singular/base form) → how Chinese writes it (simplified)
_GLOSSARY_TEXT = """
gateway 网关|rate 限流 速率 频率|limit 限流 限制 上限 限额|request 请求|response 响应|backup 备份|database 数据库 库
ledger 账本 分类账|billing 账单 计费|bill 账单|invoice 发票|night 晚上 夜间 夜里 晚|evening 晚上 晚|morning 早上 上午
notifier 通知|notification 通知|send 发送 发|email 邮件|mail 邮件|feature 功能 特性|flag 开关 标志|manage 管理
reset 重置|mobile 移动 行动 手机|app 应用 app|application 应用|build 构建 开发 编译 打包|built 构建 开发 编译
refund 退款|process 处理|business 工作|service 服务|search 搜索 检索|index 索引|timeout 超时|cache 缓存|log 日志
retain 保留|deploy 部署|deployment 部署|region 区域 地区|zone 可用区 区|user 用户|password 密码|token 令牌
session 会话|queue 队列|job 任务 作业|task 任务|test 测试|release 发布 发版|error 错误 报错|alert 告警 报警
report 报表 报告|store 存储 保存 存|data 数据|file 文件|setting 设置 配置|image 镜像 图片|page 页 页面
comment 评论|review 评审 审查|admin 管理 后台|panel 面板 后台|login 登录|connection 连接|pool 池|size 大小
summary 汇总|detail 明细|payment 支付 付款|order 订单|product 商品 产品|inventory 库存|scheduler 调度
monthly 每月 月度|daily 每天 每日|nightly 每晚 夜间|weekly 每周|hourly 每小时|branch 分支|merge 合并
commit 提交|push 推送|pull 拉取|approval 批准 审批 通过|secret 密钥 机密|key 密钥 键|certificate 证书
domain 域名|server 服务器|client 客户端|version 版本|upgrade 升级|migration 迁移|schema 结构 模式|table 表
column 列|field 字段|metric 指标|dashboard 仪表盘 看板|monitor 监控|trace 链路 追踪|retry 重试|fail 失败
failure 失败|success 成功|crash 崩溃|restart 重启|start 启动 开始|stop 停止|write 写 写入|read 读 读取
upload 上传|download 下载|export 导出|import 导入|message 消息|event 事件|topic 主题|channel 频道 渠道
team 团队|owner 负责人|own 负责|repository 仓库|repo 仓库|code 代码|library 库|package 包|dependency 依赖
install 安装|script 脚本|command 命令|environment 环境|production 生产 线上|staging 预发 staging|local 本地
memory 内存|disk 磁盘|storage 存储|bucket 桶|cluster 集群|node 节点|container 容器|instance 实例
api 接口 api|endpoint 端点 接口|rule 规则|policy 策略|permission 权限|access 访问 权限|role 角色|account 账号
customer 客户|guest 访客 游客 匿名|anonymous 匿名|checkout 结账 结算|cart 购物车|price 价格|discount 折扣
coupon 优惠券|shipping 发货 配送|delivery 配送|stock 库存|warehouse 仓库|rollback 回滚|incident 事故 故障
outage 故障 宕机|on-call 值班|duty 值班|handoff 交接|meeting 会议|document 文档|doc 文档|docs 文档
translation 翻译|language 语言|font 字体|theme 主题|dark 深色 暗色 暗黑|mode 模式|light 浅色|frontend 前端
backend 后端|batch 批处理 批量|nightly 每晚|reset 重置|sync 同步|async 异步|lock 锁|limiter 限流器
develop 开发|engineer 工程师|developer 开发者 开发人员|page 页 页面 通知 呼叫|notify 通知|call 调用 呼叫
"""
GLOSSARY: dict[str, tuple[str, ...]] = {}
for _entry in _GLOSSARY_TEXT.replace("\n", "|").split("|"):
    _parts = _entry.split()
    if len(_parts) >= 2:
        GLOSSARY[_parts[0]] = tuple(dict.fromkeys(GLOSSARY.get(_parts[0], ()) + tuple(_parts[1:])))
# what Chinese says around a fact without adding one
_ZH_FUNCTION = ("通过", "进行", "之内", "以内", "以上", "以下", "里面", "里", "内", "上", "中", "时", "由", "被",
                "将", "已", "经", "会", "能", "可", "到", "去", "来", "着", "过", "所", "以", "所有")
_FOLD = {"evening": "night"}  # 晚上 is evening and night
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*")
# a number and the Chinese unit after it (5 个工作日 → 5 days, 30 分钟 → 30 min): English reads its units itself
_ZH_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*个?\s*(?:工作)?(毫秒|秒钟|秒|分钟|小时|天|日|周|星期|月|年|倍|%)")


def _forms(word: str) -> list[str]:
    """A word and its likely base forms (requests → request, managed → manage, built → build)."""
    out = [word]
    for suffix, add in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""), ("ing", ""),
                        ("ing", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.append(word[: len(word) - len(suffix)] + add)
    return out


def same_across_languages(english: str, chinese: str, a: Any, b: Any, zh: str) -> tuple[bool, str]:
    """``(same, why)`` for an English text and a Chinese one (see the module's docstring): ``a`` and ``b`` are
    what :func:`memcli.facts.samefact.read` reads from each, ``zh`` the Chinese text in simplified script."""
    units = {m.group(1): UNITS.get(m.group(2), m.group(2)) for m in _ZH_UNIT.finditer(zh)}
    va = set(a.specifics)
    en_units = {UNITS[w.casefold()] for w in _LATIN_WORD.findall(english) if w.casefold() in UNITS}
    # "5 business days" / "5 个工作日": the English unit a word or two after its number is the same value
    vb = {x + units[x] if x in units and not (x in va and units[x] in en_units) else x for x in b.specifics}
    if any(x.startswith("#") for x in va | vb) or va != vb:
        return False, "they state different values"
    zh_latin = {w.casefold() for w in _LATIN_WORD.findall(re.sub(r"`[^`]*`", " ", zh))}
    en_latin = {w.casefold() for w in _LATIN_WORD.findall(english)}
    if not zh_latin <= en_latin | {v.casefold() for v in va}:
        return False, "the Chinese names something the English does not"
    if not (va or zh_latin):
        return False, "no value or name in common to anchor them"
    if a.negations % 2 != b.negations % 2:
        return False, "one says the opposite of the other (a negation on one side only)"
    for kind in set(a.poles) & set(b.poles):
        if {_FOLD.get(x, x) for x in a.poles[kind]} != {_FOLD.get(x, x) for x in b.poles[kind]}:
            return False, f"they differ in {kind.replace('_', ' ')}"
    used: list[str] = []
    for word in (w.casefold() for w in _LATIN_WORD.findall(english)):
        if word in zh_latin or word in EN_STOP or word in EN_HEDGES or len(word) < 2 or word in va or word in UNITS:
            continue
        forms = _forms(word)
        said = [zh_word for f in forms for zh_word in GLOSSARY.get(f, ()) if zh_word in zh]
        if said:
            used += said
            continue
        kind = next((POLES[f] for f in forms if f in POLES), None)
        if kind and kind[0] in b.poles:
            continue  # a word of a kind the Chinese says too (checked above): Monday / 周一
        if any(f in EN_GENERIC for f in forms) or word in _FILLER:
            continue
        return False, f"the Chinese does not say {word!r} (or the glossary does not know it)"
    rest = zh
    for w in sorted(set(used), key=len, reverse=True):
        rest = rest.replace(w, " ")
    for members in CJK_POLES.values():
        for w in sorted(members, key=len, reverse=True):
            rest = rest.replace(w, " ")
    for w in (*CJK_HEDGES, *_ZH_FUNCTION):
        rest = rest.replace(w, " ")
    left = [c for c in _CJK.findall(rest) if c not in CJK_STOP_CHARS and c not in "每个条次位种天日周月年秒分时"]
    if len(left) > 2:
        return False, f"the Chinese says more ({''.join(left)})"
    return True, "the same fact in two languages: the same values and names, every word of one said in the other"


_FILLER = frozenset("every each via per through within into onto about with from".split())


def scripts_differ(a: str, b: str) -> bool:
    """One text is written in Chinese, the other in English (identifiers and names aside)."""
    from memcli.textnorm import script_of

    return script_of(a) != script_of(b)
