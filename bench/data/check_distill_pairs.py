#!/usr/bin/env python3
"""Validate bench/data/distill_pairs.json (standard library only).

Checks the shape (top-level keys, pair fields, ids p001, p002, ...), labels and classes (each class belongs to
one label), languages (script of both texts: no CJK in "en", CJK in the Chinese ones, no Traditional-only
character in "zh-hans" and no Simplified-only one in "zh-hant"; a zh_variant pair is Simplified in a and
Traditional in b), that a != b, that no pair and no text occurs twice, the minimum counts per label and class,
and, for "merge" pairs, that both texts carry the same numbers and the same identifiers/code spans (a "merge"
pair restates the same fact). A "keep" pair whose texts differ only in case, spacing, punctuation or
backticks is an error too (that is a case_punct merge).

Prints counts per label, class (with languages) and language. Structural errors exit 1; warnings
(heuristics: a negation word on one side only of a merge pair, a language share far from the target) do not.

    python3 bench/data/check_distill_pairs.py [path/to/distill_pairs.json]
"""
import json
import os
import re
import sys
import unicodedata
from collections import Counter, defaultdict

LABELS = ("keep", "merge")
KEEP_CLASSES = (
    "negation", "antonym", "number_unit", "version", "date_time", "subject", "environment",
    "identifier_kebab", "identifier_snake", "identifier_dotted", "identifier_camel", "path", "url",
    "error_code", "bucket_table", "code_span", "near_miss", "paraphrase_value",
)
MERGE_CLASSES = (
    "paraphrase", "reorder", "typo", "case_punct", "zh_variant", "hedge", "shortened", "expanded",
    "agent_style",
)
LANGS = ("en", "zh-hans", "zh-hant", "mixed")
TARGET_SHARE = {"en": 0.55, "zh-hans": 0.20, "zh-hant": 0.12, "mixed": 0.13}
MIN_PER_LABEL = {"keep": 170, "merge": 170}
MIN_PER_KEEP_CLASS, MIN_PER_MERGE_CLASS = 8, 12
MIN_LANGS_PER_CLASS = 2
PAIR_FIELDS = {"id", "a", "b", "label", "class", "lang"}
OPTIONAL_FIELDS = {"note"}

# Simplified/Traditional pairs of common characters whose forms differ and are not used in the other script
# (ambiguous ones such as 后/後, 里/裡, 台/臺, 周/週, 准/準, 只/隻, 干/幹, 面/麵, 着/著, 范/範 are left out).
_PAIRS = (
    "这這们們个個说說时時么麼发發为為还還来來对對会會过過没沒进進产產实實现現开開关關门門问問间間见見"
    "觉覺学學应應该該给給让讓请請认認识識设設试試语語读讀写寫数數据據库庫务務动動员員单單号號业業东東"
    "两兩严嚴丢丟价價优優传傳体體储儲决決减減几幾则則创創删刪别別办辦区區华華协協历歷压壓参參变變启啟"
    "响響团團围圍图圖场場块塊处處备備复復头頭审審宽寬导導将將层層师師带帶帮幫广廣废廢异異张張强強归歸"
    "当當录錄总總扩擴扫掃报報护護担擔择擇换換断斷无無旧舊显顯暂暫术術机機权權杂雜条條极極构構标標样樣"
    "档檔检檢气氣汇匯测測满滿灭滅点點热熱状狀环環电電监監盘盤码碼础礎确確离離种種积積称稱稳穩签簽简簡"
    "类類级級线線组組细細终終经經结結统統继繼续續维維缓緩编編缩縮网網联聯节節获獲补補装裝观觀规規视視"
    "览覽计計记記讲講许許论論证證评評词詞译譯话話询詢详詳误誤课課谁誰调調负負账帳帐帳货貨质質购購费費"
    "资資转轉软軟较較载載输輸边邊达達迁遷运運远遠连連选選递遞邮郵钟鐘钥鑰钱錢链鏈销銷锁鎖错錯键鍵长長"
    "闭閉阅閱队隊阶階际際险險随隨难難页頁项項顺順须須预預领領频頻题題额額风風飞飛验驗齐齊阈閾拦攔灯燈"
    "态態执執拟擬绑綁轨軌钩鉤镜鏡陈陳隐隱户戶闸閘阀閥鉴鑒于於与與从從众眾乱亂争爭亚亞仅僅伤傷侧側债債"
    "儿兒兴興养養内內军軍农農冲衝况況净淨凭憑击擊刘劉刚剛剧劇劳勞势勢医醫卖賣卫衛却卻厂廠县縣双雙叙敘"
    "叹嘆吗嗎园園国國圆圓坏壞坚堅声聲够夠夹夾夺奪奖獎妈媽宁寧宝寶宪憲寻尋尔爾尽盡属屬岁歲币幣并並弃棄"
    "弹彈彻徹径徑忆憶忧憂恶惡惊驚惯慣愿願扰擾抢搶拥擁挂掛挡擋损損摄攝摆擺敌敵晋晉杀殺栈棧栏欄树樹桥橋"
    "梦夢楼樓欢歡残殘毁毀毕畢汉漢沟溝浅淺济濟浏瀏涨漲渐漸温溫湾灣湿濕滚滾滤濾灵靈灾災炼煉烦煩烧燒爱愛"
    "独獨猎獵画畫畅暢疗療盖蓋砖磚穷窮竞競笔筆筛篩紧緊红紅约約纪紀纯純纳納纸紙练練绍紹绕繞绘繪络絡绝絕"
    "绩績综綜绿綠缘緣罚罰职職肃肅脑腦脚腳药藥营營虑慮虚虛触觸讨討训訓议議讯訊订訂访訪诉訴谈談谢謝贡貢"
    "财財责責败敗贴貼赖賴赛賽车車轮輪轻輕违違迟遲适適逻邏释釋针針铁鐵银銀闲閒闻聞陆陸雾霧顶頂顾顧馆館"
    "驱驅鱼魚黄黃龙龍厅廳吴吳缀綴聪聰乐樂书書买買亏虧亲親仓倉伪偽佣傭俩倆丰豐临臨丽麗举舉义義乌烏乔喬"
    "习習乡鄉"
)
S2T = {}
for _i in range(0, len(_PAIRS) - 1, 2):
    _s, _t = _PAIRS[_i], _PAIRS[_i + 1]
    if _s != _t:
        S2T.setdefault(_s, _t)
HANS_ONLY = set(S2T) - set(S2T.values())
HANT_ONLY = set(S2T.values()) - set(S2T)

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
CODE_SPAN = re.compile(r"`([^`]+)`")
# bare identifiers: a dotted/slashed/underscored/@ token, camelCase, or letters mixed with digits
IDENT = re.compile(r"[A-Za-z0-9_@~./:-]*[A-Za-z0-9_]")
NEG_EN = re.compile(r"\b(not|never|no|none|nobody|nothing|cannot|without)\b|n't\b", re.I)
NEG_ZH = re.compile(r"不|没|沒|别|別|禁止|勿|無|无|非")


def is_identifier(tok):
    tok = tok.strip("./:-")
    if len(tok) < 3:
        return False
    if re.fullmatch(r"[\d.,:]+", tok):  # plain numbers, times: checked as numbers
        return False
    return bool(re.search(r"[_./@]", tok) or re.search(r"[a-z][A-Z]", tok)
                or (re.search(r"\d", tok) and re.search(r"[A-Za-z]", tok)))


def identifiers(text):
    """Identifiers a merge pair must keep: each word of a code span (split on spaces and '='), bare identifiers."""
    out = {w for m in CODE_SPAN.findall(text) for w in re.split(r"[\s=]+", m) if len(w) >= 2}
    for tok in IDENT.findall(CODE_SPAN.sub(" ", text)):
        if is_identifier(tok):
            out.add(tok.strip("./:-"))
    return out


def plain(text):
    """The text without case, spacing, punctuation (half- or full-width) and backticks."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum() or CJK.match(ch))


def numbers(text):
    return sorted(n.replace(",", "") for n in NUMBER.findall(text))


def script_errors(lang, cls, a, b):
    errs = []
    texts = (("a", a), ("b", b))
    if lang == "en":
        errs += [f"{k} has Chinese characters but lang is en" for k, t in texts if CJK.search(t)]
        return errs
    errs += [f"{k} has no Chinese characters but lang is {lang}" for k, t in texts if not CJK.search(t)]
    if lang == "mixed":
        errs += [f"{k} has no Latin letters but lang is mixed" for k, t in texts if not LATIN.search(t)]
    if cls == "zh_variant":
        if any(ch in HANT_ONLY for ch in a) or not any(ch in HANS_ONLY for ch in a):
            errs.append("zh_variant: a must be Simplified")
        if any(ch in HANS_ONLY for ch in b) or not any(ch in HANT_ONLY for ch in b):
            errs.append("zh_variant: b must be Traditional")
        return errs
    for k, t in texts:
        if lang == "zh-hans":
            bad = sorted({ch for ch in t if ch in HANT_ONLY})
            if bad:
                errs.append(f"{k} is zh-hans but has Traditional characters {''.join(bad)}")
        if lang == "zh-hant":
            bad = sorted({ch for ch in t if ch in HANS_ONLY})
            if bad:
                errs.append(f"{k} is zh-hant but has Simplified characters {''.join(bad)}")
    if lang == "mixed":
        # one script per pair outside zh_variant
        hans = any(ch in HANS_ONLY for ch in a + b)
        hant = any(ch in HANT_ONLY for ch in a + b)
        if hans and hant:
            errs.append("mixed pair mixes Simplified and Traditional characters")
    return errs


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    path = argv[1] if len(argv) > 1 else os.path.join(here, "distill_pairs.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    errors, warnings = [], []
    for key in ("name", "version", "description", "pairs"):
        if key not in data:
            errors.append(f"top level: missing {key!r}")
    if data.get("name") != "distill_pairs":
        errors.append("top level: name must be 'distill_pairs'")
    if not isinstance(data.get("version"), int):
        errors.append("top level: version must be an integer")
    if not str(data.get("description", "")).strip():
        errors.append("top level: empty description")
    pairs = data.get("pairs") or []

    seen_ids, seen_pairs, seen_texts = set(), {}, {}
    by_label, by_class, by_lang = Counter(), Counter(), Counter()
    class_langs = defaultdict(Counter)
    label_langs = defaultdict(Counter)
    for n, p in enumerate(pairs, 1):
        pid = p.get("id", f"#{n}")
        where = f"{pid}:"
        missing = PAIR_FIELDS - set(p)
        extra = set(p) - PAIR_FIELDS - OPTIONAL_FIELDS
        if missing:
            errors.append(f"{where} missing {sorted(missing)}")
            continue
        if extra:
            errors.append(f"{where} unknown fields {sorted(extra)}")
        if pid != f"p{n:03d}":
            errors.append(f"{where} expected id p{n:03d} (ids are p001, p002, ... in order)")
        if pid in seen_ids:
            errors.append(f"{where} duplicate id")
        seen_ids.add(pid)
        a, b, label, cls, lang = p["a"], p["b"], p["label"], p["class"], p["lang"]
        if not (isinstance(a, str) and isinstance(b, str) and a.strip() and b.strip()):
            errors.append(f"{where} a and b must be non-empty strings")
            continue
        if a != a.strip() or b != b.strip():
            errors.append(f"{where} leading/trailing whitespace")
        if "note" in p and not (isinstance(p["note"], str) and p["note"].strip()):
            errors.append(f"{where} note must be a non-empty string when present")
        if label not in LABELS:
            errors.append(f"{where} unknown label {label!r}")
        if label == "keep" and cls not in KEEP_CLASSES:
            errors.append(f"{where} class {cls!r} is not a keep class")
        if label == "merge" and cls not in MERGE_CLASSES:
            errors.append(f"{where} class {cls!r} is not a merge class")
        if lang not in LANGS:
            errors.append(f"{where} unknown lang {lang!r}")
        if a == b:
            errors.append(f"{where} a == b")
        key = frozenset((plain(a), plain(b)))
        if key in seen_pairs:
            errors.append(f"{where} same pair as {seen_pairs[key]}")
        seen_pairs.setdefault(key, pid)
        for t in dict.fromkeys((a, b)):
            if t in seen_texts:
                errors.append(f"{where} text already used in {seen_texts[t]}: {t!r}")
            seen_texts.setdefault(t, pid)
        errors += [f"{where} {e}" for e in script_errors(lang, cls, a, b)]
        if label == "keep" and plain(a) == plain(b):
            errors.append(f"{where} keep pair differs only in case/punctuation/backticks")
        if label == "merge":
            if numbers(a) != numbers(b):
                errors.append(f"{where} merge pair with different numbers {numbers(a)} / {numbers(b)}")
            for x, y, side in ((a, b, "a"), (b, a, "b")):
                for ident in sorted(identifiers(x)):
                    if ident.casefold() not in y.casefold():
                        errors.append(f"{where} merge pair: {side} has {ident!r}, the other text does not")
            na = len(NEG_EN.findall(a)) + len(NEG_ZH.findall(a))
            nb = len(NEG_EN.findall(b)) + len(NEG_ZH.findall(b))
            if (na == 0) != (nb == 0):
                warnings.append(f"{where} merge pair with a negation on one side only (check the polarity)")
        by_label[label] += 1
        by_class[(label, cls)] += 1
        by_lang[lang] += 1
        class_langs[(label, cls)][lang] += 1
        label_langs[label][lang] += 1

    for label in LABELS:
        if by_label[label] < MIN_PER_LABEL[label]:
            errors.append(f"{label}: {by_label[label]} pairs, at least {MIN_PER_LABEL[label]} needed")
    for label, classes, least in (("keep", KEEP_CLASSES, MIN_PER_KEEP_CLASS),
                                  ("merge", MERGE_CLASSES, MIN_PER_MERGE_CLASS)):
        for cls in classes:
            if by_class[(label, cls)] < least:
                errors.append(f"{label}/{cls}: {by_class[(label, cls)]} pairs, at least {least} needed")
            if len(class_langs[(label, cls)]) < MIN_LANGS_PER_CLASS:
                errors.append(f"{label}/{cls}: only {len(class_langs[(label, cls)])} language(s)")

    total = sum(by_lang.values()) or 1
    print(f"{path}: {len(pairs)} pairs")
    print()
    print(f"{'label':<8}{'pairs':>6}  " + "  ".join(f"{lang:>8}" for lang in LANGS))
    for label in LABELS:
        print(f"{label:<8}{by_label[label]:>6}  " + "  ".join(f"{label_langs[label][lang]:>8}" for lang in LANGS))
    print()
    print(f"{'label/class':<28}{'pairs':>6}  " + "  ".join(f"{lang:>8}" for lang in LANGS))
    for label, classes in (("keep", KEEP_CLASSES), ("merge", MERGE_CLASSES)):
        for cls in classes:
            c = class_langs[(label, cls)]
            print(f"{label + '/' + cls:<28}{by_class[(label, cls)]:>6}  "
                  + "  ".join(f"{c[lang]:>8}" for lang in LANGS))
    print()
    print(f"{'lang':<10}{'pairs':>6}{'share':>8}{'target':>8}")
    for lang in LANGS:
        share = by_lang[lang] / total
        print(f"{lang:<10}{by_lang[lang]:>6}{share:>8.1%}{TARGET_SHARE[lang]:>8.0%}")
        if abs(share - TARGET_SHARE[lang]) > 0.05:
            warnings.append(f"lang {lang}: share {share:.1%}, target about {TARGET_SHARE[lang]:.0%}")
    print()
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    print(f"{len(errors)} error(s), {len(warnings)} warning(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
