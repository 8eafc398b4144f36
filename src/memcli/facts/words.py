"""The word lists of the same-fact test (:mod:`memcli.facts.samefact`): generic words, negations, kinds of words
where each word names one value, units, and a few synonyms. General English and Chinese, not tuned to any
one store: a word missing here makes the test stricter (a merge not made), never looser."""

from __future__ import annotations

from memcli.textnorm import STOP_WORDS

# ------------------------------------------------------------------------------------------ English
EN_NEGATORS = frozenset("not no never cannot without none nothing nobody neither nor nowhere".split())

# Function words (the search index's stop words, less the ones that carry a value: negations, all/only/…)
_VALUED = {"no", "nor", "not", "only", "all", "some", "few", "more", "most", "before", "after", "above", "below",
           "up", "down", "off", "over", "under", "same", "other", "each", "any", "can", "should", "ought", "again",
           "once", "first", "between", "against", "out", "during"}
EN_STOP = frozenset(set(STOP_WORDS) - _VALUED) | frozenset(
    "also just really actually basically currently still via per e.g i.e etc us let's we'll it'll in on as".split())

# Words that add no fact of their own: hedges, labels agents put in front, fillers
EN_HEDGES = frozenset("""i think guess believe seems seem apparently probably likely maybe perhaps fyi heads note notes
reminder remember important please basically just actually honestly anyway btw quick reminder discussed known aware
decision decided decide convention gotcha tip todo info update config preference setting pref user prefers prefer
turns so know""".split())

# Generic words a restatement may add (the keeper may say "instance", "use", "we" where the member did not):
# nothing a reader would call a new fact. Stems.
EN_GENERIC = frozenset("""use run be have make get set keep go put take need want do done say work call thing things
instance instances one ones way case place part kind type sort value values way time times whole fully full entire
real really actual around about approximately roughly usually typically generally normally default defaults
ourselves yourself own our your team teams people someone something anything everything stuff make sure ensure
able possible happen happens come comes through across within inside place sit sits live lives stay stays
belong belongs fine okay ok good right just also even still there here new given current currently now today
their whatever whenever every each many much lot lots little bit bits kept keep hold holds handle handles
done doing does did via per therefore thus hence since because reason why so order purpose which that what
level option options setting settings config configuration name named called call""".split())

EN_NUMBERS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
              "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
              "fifteen": "15", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60",
              "hundred": "100", "single": "1", "once": "1x", "twice": "2x", "double": "2x", "half": "0.5"}

# Units, written as agents write them → one canonical form (a number's unit is part of its value)
UNITS: dict[str, str] = {}
for _canon, _forms in {
    "ms": "ms msec msecs millisecond milliseconds 毫秒",
    "s": "s sec secs second seconds 秒 秒钟",
    "min": "m min mins minute minutes 分 分钟 分鐘",
    "h": "h hr hrs hour hours 小时 小時 个小时",
    "d": "d day days 天 日",
    "w": "w wk wks week weeks 周 週 星期 个星期",
    "mo": "mo month months 个月 月",
    "y": "y yr yrs year years 年",
    "b": "b byte bytes",
    "kb": "k kb kib kilobyte kilobytes",
    "mb": "mb mib megabyte megabytes m",
    "gb": "gb gib gigabyte gigabytes g",
    "tb": "tb tib terabyte terabytes",
    "%": "% percent pct 百分之",
    "x": "x times 倍",
    "rps": "rps qps",
    "ports": "port",
}.items():
    for _f in _forms.split():
        UNITS.setdefault(_f, _canon)
UNITS["m"] = "min"  # "30m" is minutes far more often than megabytes in memories

# Kinds of words where each word names one value: when both texts use the kind, they must use the same words.
_KINDS: dict[str, str] = {
    "polarity": "enable enabled disable disabled allow allowed permit forbid forbidden prohibit deny denied block "
                "blocked disallow reject accept off true false yes",
    "inside": "during inside outside within",
    "frequency": "always never sometimes often rarely usually occasionally",
    "addition": "add added remove removed delete deleted drop dropped",
    "direction": "increase increased decrease decreased raise raised lower lowered reduce reduced grow shrink "
                 "up down upgrade downgrade",
    "order": "before after earlier later prior first last previous next",
    "timing": "sync synchronous async asynchronous blocking nonblocking",
    "visibility": "public private internal external",
    "access": "read reads reader readonly read-only write writes writer read-write writable",
    "bounds": "min minimum max maximum least most lower upper floor ceiling",
    "quantity": "all some none only every",
    "comparison": "more less fewer higher lower faster slower larger smaller bigger longer shorter newer older",
    "outcome": "success succeed succeeded fail failed failure",
    "crypto": "encrypt encrypted decrypt decrypted",
    "lock": "lock locked unlock unlocked",
    "transfer": "upload download import export push pull inbound outbound ingress egress input output",
    "role_side": "client server frontend backend producer consumer sender receiver",
    "replica": "primary secondary replica master slave leader follower standby",
    "need": "required optional mandatory must should may might could",
    "sort": "ascending descending asc desc",
    "age": "old new legacy",
    "state": "open opened close closed start started stop stopped",
    "inclusion": "include included exclude excluded",
    "environment": "staging stage stg preprod production prod prd live dev development qa uat sandbox canary "
                   "preview",
    "platform": "ios android web desktop windows macos mac linux",
    "weekday": "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri sat sun "
               "weekday weekdays weekend weekends",
    "month": "january february march april june july august september october november december jan feb mar apr "
             "jun jul aug sep sept oct nov dec",
    "time_of_day": "morning afternoon evening night nightly midnight noon am pm",
    "period": "hourly daily weekly biweekly fortnightly monthly quarterly yearly annually annual",
    "time_unit": "second seconds minute minutes hour hours day days week weeks month months year years",
    "timezone": "utc gmt pst pdt est edt cet cest jst ist",
    "semver": "major minor patch",
    "people_role": "owner owns owned maintainer maintains maintain maintained reviewer reviews approver approves "
                   "author assignee lead",
}
_CANON = {"enabled": "enable", "disabled": "disable", "allowed": "allow", "forbidden": "forbid",
          "denied": "deny", "blocked": "block", "added": "add", "removed": "remove", "deleted": "delete",
          "dropped": "drop", "increased": "increase", "decreased": "decrease", "raised": "raise",
          "lowered": "lower", "reduced": "reduce", "synchronous": "sync", "asynchronous": "async",
          "reads": "read", "reader": "read", "readonly": "read-only", "writes": "write", "writer": "write",
          "writable": "write", "minimum": "min", "maximum": "max", "succeed": "success", "succeeded": "success",
          "failed": "fail", "failure": "fail", "encrypted": "encrypt", "decrypted": "decrypt", "locked": "lock",
          "unlocked": "unlock", "asc": "ascending", "desc": "descending", "opened": "open", "closed": "close",
          "started": "start", "stopped": "stop", "included": "include", "excluded": "exclude", "stage": "staging",
          "stg": "staging", "prod": "production", "prd": "production", "live": "production",
          "development": "dev", "mac": "macos", "weekdays": "weekday", "weekends": "weekend", "mon": "monday",
          "tue": "tuesday", "tues": "tuesday", "wed": "wednesday", "thu": "thursday", "thurs": "thursday",
          "fri": "friday", "sat": "saturday", "sun": "sunday", "jan": "january", "feb": "february",
          "mar": "march", "apr": "april", "jun": "june", "jul": "july", "aug": "august", "sep": "september",
          "sept": "september", "oct": "october", "nov": "november", "dec": "december", "nightly": "night",
          "annually": "yearly", "annual": "yearly", "fortnightly": "biweekly", "seconds": "second",
          "minutes": "minute", "hours": "hour", "days": "day", "weeks": "week", "months": "month", "years": "year", "owns": "owner", "owned": "owner",
          "every": "all", "maintains": "maintainer", "maintain": "maintainer",
          "maintained": "maintainer", "reviews": "reviewer", "approves": "approver", "master": "primary",
          "leader": "primary", "slave": "replica", "follower": "replica", "mandatory": "required"}
POLES: dict[str, tuple[str, str]] = {}
for _kind, _words in _KINDS.items():
    for _w in _words.split():
        POLES.setdefault(_w, (_kind, _CANON.get(_w, _w)))
POLES["lower"] = ("direction", "lower")

# A few synonyms agents use for one thing (stems)
EN_SYNONYMS: dict[str, str] = {}
for _canon, _forms in {
    "database": "db dbs database databases",
    "postgres": "postgres postgresql pg psql",
    "kubernetes": "k8s kubernetes kube",
    "repository": "repo repos repository repositories",
    "configure": "configure configured configuring config configuration",
    "environment": "env envs environment environments",
    "application": "app apps application applications",
    "documentation": "doc docs documentation document documented",
    "directory": "dir dirs directory directories folder folders",
    "message": "msg msgs message messages",
    "authentication": "auth authn authentication authenticate",
    "javascript": "js javascript",
    "typescript": "ts typescript",
    "choose": "choose chose chosen pick picked select selected opt opted",
    "deploy": "deploy deployed deploying deployment deployments ship shipped shipping",
    "fix": "fix fixed fixes resolve resolved",
    "bug": "bug bugs issue issues defect defects",
    "store": "store stored save saved persist persisted",
    "require": "require requires required need needs needed",
    "machine": "machine machines box boxes host hosts server? node?",
    "connection": "connection connections conn conns",
    "identifier": "id ids identifier identifiers",
    "password": "password passwords pwd passwd",
    "credential": "credential credentials creds secret secrets",
    "timeout": "timeout timeouts time-out",
    "schedule": "schedule scheduled cron",
    "alert": "alert alerts alerting page paged paging",
    "test": "test tests testing",
    "cert": "cert certs certificate certificates",
    "sign": "sign signed signing",
    "hash": "hash hashed hashing",
    "production": "prod prd production",
    "staging": "staging stage stg",
    "dev": "dev development",
    "backup": "backup backups",
}.items():
    for _f in _forms.split():
        if not _f.endswith("?"):
            EN_SYNONYMS.setdefault(_f, _canon)

# ------------------------------------------------------------------------------------------ Chinese
CJK_NEGATORS = ("不", "没", "无", "别", "勿", "未", "非", "否", "莫")
# compounds with a negation character that negate nothing (removed before counting)
CJK_NEG_NOT = ("不过", "不仅", "不断", "不只", "不论", "不管", "不久", "不少", "不同", "无论", "非常", "未来", "是否",
               "否则", "并非得", "不然的话", "莫名", "别人", "别的", "区别", "差别", "分别", "特别", "类别", "级别",
               "识别", "无线", "非得", "除非", "无损", "是非", "未必")
# Character kinds that carry no fact: particles, pronouns (removed before comparing character pairs)
CJK_STOP_CHARS = "的了地得着呢吧啊嘛呀哦么之其这那我你他她它们个把被就都也还又再很和与及或而且在于从对向给让使用采为是有要会"
CJK_HEDGES = ("我觉得", "我认为", "我想", "好像", "应该是", "大概", "顺便说一下", "顺便说", "注意", "提醒", "记得", "记住",
              "请", "一下", "我们决定", "据我所知", "个人理解", "经讨论", "讨论后", "经过讨论", "我的理解", "备忘", "我们约定", "决定", "约定", "目前", "现在", "其实", "补充", "备注", "说明",
              "我们的", "咱们", "需要注意", "重要", "另外", "总之", "这个", "那个")
# numerals inside words that are not numbers
CJK_NUM_COMPOUNDS = ("一些", "一定", "统一", "一直", "唯一", "一起", "一样", "万一", "一般", "一旦", "一切", "之一",
                     "一下", "一致", "进一步", "同一", "一部分", "一律", "一并", "一边", "一体", "一键", "一次性",
                     "不一", "十分", "一点", "一些", "一个", "一条", "一份", "一套", "一种",
                     *(f"{p}{d}" for p in ("周", "星期", "礼拜") for d in "一二三四五六"))  # 周一: Monday
# Chinese words of a kind (as for English, each names one value); canonical values are English
CJK_POLES: dict[str, dict[str, str]] = {
    "polarity": {"启用": "enable", "开启": "enable", "打开": "enable", "开通": "enable", "禁用": "disable",
                 "关闭": "disable", "关掉": "disable", "停用": "disable", "允许": "allow", "禁止": "forbid",
                 "可以": "may"},
    "timing": {"同步": "sync", "异步": "async"},
    "visibility": {"公开": "public", "私有": "private", "内部": "internal", "外部": "external"},
    "direction": {"增加": "increase", "减少": "decrease", "提高": "increase", "降低": "decrease", "升级": "upgrade",
                  "降级": "downgrade", "扩容": "increase", "缩容": "decrease"},
    "order": {"之前": "before", "以前": "before", "之后": "after", "以后": "after", "第一": "first", "最后": "last"},
    "bounds": {"最大": "max", "最小": "min", "上限": "max", "下限": "min", "至少": "min", "最多": "max"},
    "access": {"只读": "read-only", "读写": "read-write", "可写": "write"},
    "transfer": {"上传": "upload", "下载": "download", "导入": "import", "导出": "export", "推送": "push",
                 "拉取": "pull", "入站": "inbound", "出站": "outbound"},
    "replica": {"主库": "primary", "从库": "replica", "主节点": "primary", "从节点": "replica", "备库": "standby"},
    "need": {"必须": "required", "可选": "optional", "不需要": "optional", "务必": "required"},
    "outcome": {"成功": "success", "失败": "fail"},
    "state": {"开始": "start", "停止": "stop", "结束": "stop"},
    "sort": {"升序": "ascending", "降序": "descending"},
    "age": {"新版": "new", "旧版": "old", "老版": "old"},
    "role_side": {"前端": "frontend", "后端": "backend", "客户端": "client", "服务端": "server", "服务器端": "server"},
    "environment": {"测试环境": "qa", "生产环境": "production", "线上": "production", "正式环境": "production",
                    "预发": "staging", "预发布": "staging", "开发环境": "dev", "灰度": "canary"},
    "platform": {"安卓": "android", "苹果": "ios", "网页": "web", "桌面": "desktop"},
    "period": {"每天": "daily", "每日": "daily", "每周": "weekly", "每月": "monthly", "每年": "yearly",
               "每小时": "hourly", "每季度": "quarterly", "每晚": "night", "每两周": "biweekly"},
    "time_unit": {"每秒": "second", "每分钟": "minute", "秒钟": "second", "分钟": "minute", "小时": "hour"},
    "time_of_day": {"上午": "morning", "下午": "afternoon", "晚上": "evening", "凌晨": "night", "夜里": "night",
                    "中午": "noon", "半夜": "midnight"},
    "weekday": {"工作日": "weekday", "周末": "weekend", **{f"{p}{d}": day for p in ("周", "星期", "礼拜")
                for d, day in zip("一二三四五六日天", ("monday", "tuesday", "wednesday", "thursday", "friday",
                                                   "saturday", "sunday", "sunday"))}},
    "quantity": {"所有": "all", "全部": "all", "部分": "some", "只有": "only", "仅": "only", "只能": "only"},
    "people_role": {"负责人": "owner", "维护": "maintainer", "审核": "reviewer", "审批": "approver"},
}
# one word for one thing (after 繁→简): the Taiwan and mainland words of computing, and a few plain synonyms
CJK_SYNONYMS: dict[str, str] = {}
for _canon, _forms in {
    "数据库": "资料库", "数据": "资料", "软件": "软体", "硬件": "硬体", "服务器": "伺服器", "网络": "网路",
    "内存": "记忆体", "硬盘": "硬碟", "程序": "程式", "代码": "程式码 源码", "文件": "档案 档", "接口": "介面 界面",
    "默认": "预设", "缓存": "快取", "线程": "执行绪 线绪", "进程": "行程", "项目": "专案", "视频": "影片",
    "信息": "资讯 讯息", "消息": "讯息", "队列": "伫列", "支持": "支援", "连接": "连线", "超时": "逾时",
    "客户端": "用户端", "用户": "使用者", "对象": "物件", "镜像": "映像档 映像", "位": "位元",
    "字符串": "字串", "变量": "变数", "函数": "函式", "参数": "参数", "登录": "登入", "注销": "登出",
    "账号": "帐号 帐户 账户", "密码": "密码", "设置": "设定", "配置": "组态", "日志": "日志档 日志", "打印": "列印",
    "导出": "汇出", "导入": "汇入", "上线": "上版", "发布": "发版 释出", "回滚": "回退 还原", "审查": "审核 评审",
    "运行": "执行 跑", "调用": "呼叫", "返回": "回传 传回", "季度": "季", "核数": "核心数", "渗透": "渗透",
    "推送": "推播", "移动端": "行动端 移动", "优化": "最佳化", "扩展": "扩充", "存储": "储存 保存",
    "设": "设为 设成 设置为 设定为 设置成 设定成 调到 调成", "生产": "生产环境 正式环境",
}.items():
    for _f in _forms.split():
        if _f != _canon:
            CJK_SYNONYMS[_f] = _canon
# longest first, so 程式码 is replaced before 程式
CJK_SYNONYMS = dict(sorted(CJK_SYNONYMS.items(), key=lambda kv: -len(kv[0])))
