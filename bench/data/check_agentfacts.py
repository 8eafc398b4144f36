#!/usr/bin/env python3
"""Validate bench/data/agentfacts.json (standard library only).

Prints counts (languages, kinds, agents, projects, tags), the share of questions whose relevant memory
already contains at least half of the question's content words (low = real paraphrases), a rough lexical
baseline (BM25 over word tokens and CJK bigrams) with the memories it confuses for each question ("near
misses"), and the memories that answer no question and are a near miss for none.

Structural errors (bad ids, unknown relevant ids, missing fields, duplicates, wrong labels, counts below the
brief's minimums) make it exit 1; warnings do not.

    python bench/data/check_agentfacts.py [path/to/agentfacts.json] [-v]
"""
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict

LANGS = {"en", "zh-Hans", "zh-Hant", "mixed"}
KINDS = {"paraphrase", "identifier", "cross-language", "short"}
MIN_MEMORIES, MIN_QUESTIONS, MIN_OFFTOPIC, MIN_AGENTS = 170, 280, 60, 6

# Simplified -> Traditional pairs of common characters (only those that differ). Used both to tell the two
# scripts apart and to fold Traditional to Simplified before comparing words (memcli's tokenizer folds too).
_PAIRS = (
    "这這们們个個说說时時么麼发發为為还還来來对對会會过過没沒进進产產实實现現开開关關门門问問间間见見"
    "觉覺学學应應该該给給让讓请請认認识識设設试試语語读讀写寫数數据據库庫务務动動员員单單号號业業东東"
    "两兩严嚴丢丟乱亂价價优優传傳体體储儲儿兒决決冻凍减減几幾击擊则則刚剛创創删刪别別办辦劳勞区區华華"
    "协協卖賣历歷压壓参參变變启啟响響团團园園围圍图圖圆圓场場块塊坏壞处處备備复復头頭奖獎审審宽寬寻尋"
    "导導将將层層岁歲币幣师師带帶帮幫广廣库庫废廢异異张張弹彈强強归歸当當录錄总總惊驚扩擴扫掃报報护護"
    "担擔择擇换換断斷无無旧舊显顯暂暫术術机機权權杂雜条條极極构構标標样樣档檔检檢欢歡气氣汇匯况況测測"
    "满滿灭滅灵靈点點热熱爱愛状狀独獨环環电電画畫监監盘盤码碼础礎确確离離种種积積称稱稳穩笔筆签簽简簡"
    "类類级級纪紀线線组組细細终終经經结結统統继繼续續维維缓緩编編缩縮网網罗羅职職联聯胜勝脑腦节節获獲"
    "补補装裝观觀规規视視览覽计計记記讲講许許论論证證评評诉訴词詞译譯话話询詢详詳误誤课課谁誰调調谈談"
    "负負账賬货貨质質购購费費资資赖賴转轉轮輪软軟较較载載输輸辑輯边邊达達迁遷运運远遠连連选選递遞遗遺"
    "邮郵钟鐘钥鑰钱錢铁鐵链鏈销銷锁鎖错錯键鍵长長闭閉闻聞阅閱队隊阶階际際陆陸险險随隨难難页頁顶頂项項"
    "顺順须須预預领領频頻题題额額风風飞飛饭飯验驗鱼魚齐齊龙龍滚滾阈閾凭憑拦攔灯燈闪閃态態荐薦闹鬧溃潰"
    "帐帐币幣汉漢仓倉储儲弃棄队隊级級录錄择擇换換迟遲窗窗钮鈕卡卡执執拟擬绑綁维維缘緣绍紹贵貴赔賠审審"
    "轨軌达達钩鉤镜鏡问問闹鬧阵陣陈陳随隨隐隱难難鸟鳥黄黃龄齡宁寧实實宾賓尽盡屏屏岛島巩鞏帅帥库庫应應"
    "异異弯彎归歸彻徹忆憶怀懷态態恳懇惯慣愿願戏戲战戰户戶扑撲执執扩擴扬揚扰擾抢搶护護拥擁拨撥择擇挂掛"
    "挤擠挥揮捡撿损損换換据據掷擲搁擱摆擺摇搖撑撐敌敵敛斂旷曠昼晝晋晉晒曬朴樸杀殺杂雜权權样樣桥橋梦夢"
    "检檢楼樓横橫欧歐殴毆毁毀毕畢汤湯沟溝泽澤洁潔浅淺浆漿浇澆测測济濟浏瀏涌湧润潤涨漲渐漸渔漁湾灣湿濕"
    "滞滯灾災烦煩烧燒烫燙热熱爷爺牵牽犹猶狮獅猎獵献獻环環玛瑪琼瓊产產亩畝疗療疯瘋痒癢皱皺盏盞盐鹽监監"
    "盖蓋盗盜睁睜础礎祸禍离離秃禿秆稈税稅稣穌竞競笼籠筑築签簽简簡粮糧紧緊纠糾红紅纤纖约約级級纬緯"
    "练練组組绅紳细細织織终終绍紹经經绑綁绒絨结結绕繞绘繪给給络絡绝絕绞絞统統继繼绩績绪緒续續绳繩维維"
    "绵綿综綜绿綠缀綴缆纜缓緩编編缘緣缩縮缴繳网網罗羅罚罰罢罷羡羨习習翘翹耸聳职職聪聰肠腸肤膚肿腫胀脹"
    "胁脅脏臟脑腦腊臘舰艦舱艙艰艱艺藝节節芜蕪苍蒼范範荣榮药藥莱萊获獲萝蘿营營萧蕭蓝藍虑慮虚虛虫蟲虽雖"
    "蚁蟻蛮蠻补補表表袭襲装裝见見观觀规規视視览覽觉覺触觸誉譽计計订訂认認讨討让讓训訓议議讯訊记記讲講"
    "讶訝许許论論讽諷设設访訪证證评評识識诈詐诉訴词詞译譯试試诗詩诚誠话話诞誕询詢该該详詳语語误誤说說"
    "请請诸諸读讀课課谁誰调調谈談谋謀谎謊谐諧谓謂谢謝谣謠谨謹谱譜贝貝负負贡貢财財责責贤賢败敗账賬货貨"
    "质質贩販贪貪贫貧购購贯貫贴貼贵貴贷貸贸貿费費贺賀资資赏賞赐賜赔賠赖賴赚賺赛賽赞贊赠贈赵趙趋趨跃躍"
    "践踐踪蹤车車轨軌轩軒转轉轮輪软軟轰轟轻輕载載较較辅輔辆輛辈輩辉輝输輸辞辭辩辯边邊辽遼达達迁遷过過"
    "运運还還这這进進远遠违違连連迟遲适適选選递遞逻邏遗遺邻鄰郑鄭酱醬释釋鉴鑒针針钓釣钢鋼钩鉤钮鈕钱錢"
    "铁鐵铃鈴铅鉛银銀铺鋪链鏈销銷锁鎖锅鍋锋鋒错錯锡錫锤錘键鍵镇鎮镜鏡长長闭閉问問闯闖闲閒间間闷悶闸閘"
    "闹鬧闻聞阀閥阁閣阅閱阔闊队隊阳陽阴陰阵陣阶階际際陆陸陈陳险險随隨隐隱隶隸难難雾霧韩韓页頁顶頂项項"
    "顺順须須顾顧顿頓颁頒预預领領频頻题題颜顏额額风風飘飄飞飛饭飯饮飲馆館驱驅验驗骗騙鲁魯鲜鮮鸡雞鸭鴨"
    "麦麥黄黃齐齊齿齒龙龍龟龜册冊处處壳殼台臺后後里裡面麵周週云雲干幹发髮复複划劃汇彙历曆准準尸屍"
    "闲閑众眾举舉义義乐樂亚亞仅僅从從仑侖仓倉们們价價众眾优優伙夥会會伞傘伟偉传傳伤傷伦倫伪偽侠俠侧側"
    "侨僑侣侶俭儉债債倾傾偿償储儲兑兌兰蘭关關兴興养養兽獸内內冈岡冲衝农農冯馮冲沖凉涼减減凤鳳刘劉则則"
    "刚剛创創删刪别別剂劑剑劍剧劇劝勸办辦务務动動励勵劲勁劳勞势勢勋勳匀勻区區医醫华華协協单單卖賣"
    "卢盧卫衛却卻厅廳历歷压壓厌厭厕廁县縣参參双雙变變叙敘叠疊号號叹嘆吓嚇吕呂吗嗎吨噸听聽启啟吴吳员員"
    "呜嗚咏詠咙嚨响響哑啞唤喚啸嘯喷噴团團园園围圍国國图圖圆圓圣聖场場坏壞块塊坚堅坛壇坝壩坞塢坟墳"
    "坠墜垄壟垒壘垦墾埋埋堕墮墙牆壮壯声聲壶壺处處备備复復够夠头頭夸誇夹夾夺奪奋奮奖獎妆妝妇婦妈媽姗姍"
    "娱娛婴嬰孙孫学學宁寧宝寶实實宠寵审審宪憲宫宮宽寬宾賓寝寢对對寻尋导導寿壽将將尔爾尘塵尝嘗层層屉屜"
    "属屬岁歲岂豈岗崗岛島岭嶺峡峽币幣帅帥师師帐帳帘簾带帶帮幫庄莊庆慶库庫应應庙廟废廢开開异異弃棄张張"
    "弥彌弹彈强強归歸当當录錄彦彥彻徹径徑忆憶忧憂怀懷态態怜憐总總恋戀恒恆恶惡恼惱悦悅悬懸惊驚惧懼惨慘"
    "惩懲惫憊惯慣愤憤愿願戏戲战戰户戶扑撲执執扩擴扫掃扬揚扰擾抚撫抛拋抢搶护護报報担擔拟擬拢攏拣揀拥擁"
    "拦攔拧擰拨撥择擇挂掛挡擋挣掙挤擠挥揮捞撈损損换換捣搗据據掳擄掷擲掸撣掺摻揽攬搀攙搂摟摄攝摆擺摇搖"
    "摊攤撑撐撵攆擞擻敌敵敛斂数數斋齋斩斬断斷旧舊时時旷曠昙曇显顯晋晉晒曬晓曉晕暈暂暫术術机機杀殺杂雜"
    "权權条條来來杨楊极極构構枪槍枫楓柜櫃标標栈棧栏欄树樹样樣档檔桥橋桨槳桩樁梦夢检檢椭橢楼樓榄欖横橫"
    "樱櫻欢歡欧歐歼殲毁毀毕畢毙斃气氣汉漢汤湯沟溝没沒沣灃沥瀝沦淪沧滄泪淚泻瀉泼潑泽澤洁潔洒灑浅淺浆漿"
    "浊濁测測济濟浏瀏浑渾浓濃涂塗涌湧涛濤涝澇润潤涨漲渊淵渐漸渔漁温溫湾灣湿濕溃潰溅濺滚滾满滿滤濾滥濫"
    "滨濱滩灘潇瀟澜瀾濒瀕灭滅灯燈灵靈灾災灿燦炉爐炖燉点點炼煉烁爍烂爛烛燭烟煙烦煩烧燒烫燙热熱焕煥"
    "爱愛爷爺牍牘牵牽犹猶狈狽独獨狭狹狮獅狱獄猎獵猪豬猫貓献獻玛瑪环環现現玺璽琐瑣琼瓊画畫畅暢疗療疮瘡"
    "疯瘋痒癢瘫癱皑皚皱皺盏盞盐鹽监監盖蓋盘盤睁睜矫矯矿礦码碼砖磚础礎硕碩确確碍礙祷禱祸禍禅禪离離"
    "秃禿秆稈种種积積称稱秽穢税稅稳穩穷窮窃竊窍竅窑窯竖豎竞競笔筆笋筍笼籠筑築筛篩筹籌签簽简簡类類粮糧"
    "紧緊纠糾红紅纤纖约約级級纪紀纯純纱紗纲綱纳納纵縱纷紛纸紙纹紋纺紡线線练練组組细細织織终終绍紹经經"
    "结結绕繞绘繪给給络絡绝絕统統绢絹继繼绩績绪緒续續绳繩维維绵綿综綜绿綠缀綴缉緝缎緞缓緩编編缘緣缝縫"
    "缠纏缩縮缴繳"
)
S2T = {}
for i in range(0, len(_PAIRS) - 1, 2):
    s, t = _PAIRS[i], _PAIRS[i + 1]
    if s != t:
        S2T.setdefault(s, t)
T2S = {t: s for s, t in S2T.items()}
# characters that are ambiguous between the scripts in practice (used unchanged in Traditional text too)
_AMBIGUOUS = set("后里面周云干发复划汇历准台只系卡表窗范")
HANS_ONLY = set(S2T) - set(T2S) - _AMBIGUOUS
HANT_ONLY = set(T2S) - set(S2T) - _AMBIGUOUS

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z']+")
STOP_EN = set("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing don down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other
our ours out over own same she should so some such than that the their them then there these they this those
through to too under until up very was we were what when where which while who whom why will with would you
your yours get got still ok okay it's i'm we're don't didn't can't isn't what's where's that's let's should
anything something everything need use used using want does did there's also else today again
""".split())
STOP_ZH = set("的了吗嗎呢是在和与與要会會我们們你这這那哪什么麼怎吧啊个個就都也还還把被给給对對几幾该該呀嘛着著得地之其")


def fold(text):
    return "".join(T2S.get(ch, ch) for ch in text)


def stem(w):
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not w.endswith("ss"):
            return w[: -len(suf)]
    return w


def tokens(text):
    """Content tokens: lowercased stemmed latin words/numbers (no stop words) + CJK bigrams (folded to 简体)."""
    text = fold(text)
    out = []
    for w in re.findall(r"[A-Za-z0-9]+", text.lower()):
        if len(w) < 2 or w in STOP_EN:
            continue
        out.append(stem(w))
    for run in CJK_RUN.findall(text):
        if len(run) == 1:
            if run not in STOP_ZH:
                out.append(run)
            continue
        for i in range(len(run) - 1):
            bg = run[i:i + 2]
            if bg[0] in STOP_ZH or bg[1] in STOP_ZH:
                continue
            out.append(bg)
    return out


def script_of(text):
    """'en', 'hans', 'hant' or 'zh' (Chinese, script not decidable) for a text."""
    if not CJK.search(text):
        return "en"
    hans = sum(ch in HANS_ONLY for ch in text)
    hant = sum(ch in HANT_ONLY for ch in text)
    if hans > hant:
        return "hans"
    if hant > hans:
        return "hant"
    return "zh"


def group(lang, text):
    """Language group used to decide whether two texts are in the same language."""
    if lang == "en":
        return "en"
    s = script_of(text)
    if lang == "zh-Hans":
        return "hans"
    if lang == "zh-Hant":
        return "hant"
    return s if s in ("hans", "hant") else "zh"


def same_group(a, b):
    if a == b:
        return True
    return "zh" in (a, b) and "en" not in (a, b)


IDENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@\-]*[A-Za-z0-9_:/]|\d{3,}")


def identifier_tokens(text):
    out = []
    for tok in IDENT.findall(text):
        if len(tok) < 3:
            continue
        if (re.search(r"\d", tok) or re.search(r"[_.:/\-]", tok) or re.search(r"[a-z][A-Z]", tok)
                or (tok.isupper() and len(tok) >= 4)):
            out.append(tok)
    return out


class BM25:
    def __init__(self, docs, k1=1.2, b=0.75):
        self.docs = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = sum(self.len) / max(1, len(self.len))
        df = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, q):
        out = []
        for d, dl in zip(self.docs, self.len):
            s = 0.0
            for t in set(q):
                tf = d.get(t)
                if tf:
                    s += self.idf[t] * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * dl / self.avg))
            out.append(s)
        return out


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    path = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "agentfacts.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    errors, warnings = [], []
    err, warn = errors.append, warnings.append

    if set(data) != {"name", "version", "description", "memories", "questions", "offtopic"}:
        err(f"top-level keys: {sorted(data)}")
    mems, qs, offs = data.get("memories", []), data.get("questions", []), data.get("offtopic", [])

    # ------------------------------------------------------------------ structure
    mem_by_id = {}
    for i, m in enumerate(mems):
        if set(m) != {"id", "content", "agent", "tags", "project", "lang"}:
            err(f"memory #{i} fields {sorted(m)}")
            continue
        if m["id"] != f"m{i + 1:03d}":
            err(f"memory #{i} id {m['id']} (expected m{i + 1:03d})")
        if m["id"] in mem_by_id:
            err(f"duplicate memory id {m['id']}")
        mem_by_id[m["id"]] = m
        if m["lang"] not in LANGS:
            err(f"{m['id']} lang {m['lang']!r}")
        if not isinstance(m["tags"], list) or len(m["tags"]) > 3 or not all(isinstance(t, str) for t in m["tags"]):
            err(f"{m['id']} tags {m['tags']!r}")
        if not m["content"].strip() or not m["agent"] or not m["project"]:
            err(f"{m['id']} empty content/agent/project")
        n = len(m["content"])
        if n < 30 or n > 320:
            warn(f"{m['id']} content length {n}")
    norm = Counter(re.sub(r"\s+", " ", m["content"].strip().lower()) for m in mems)
    for c, k in norm.items():
        if k > 1:
            err(f"duplicate memory content: {c[:60]}")

    for i, q in enumerate(qs):
        if set(q) != {"id", "question", "relevant", "lang", "kind"}:
            err(f"question #{i} fields {sorted(q)}")
            continue
        if q["id"] != f"q{i + 1:03d}":
            err(f"question #{i} id {q['id']} (expected q{i + 1:03d})")
        if q["lang"] not in LANGS:
            err(f"{q['id']} lang {q['lang']!r}")
        if q["kind"] not in KINDS:
            err(f"{q['id']} kind {q['kind']!r}")
        rel = q["relevant"]
        if not isinstance(rel, list) or not rel or len(set(rel)) != len(rel):
            err(f"{q['id']} relevant {rel!r}")
        for r in rel:
            if r not in mem_by_id:
                err(f"{q['id']} relevant id {r} does not exist")
    qnorm = Counter(q["question"].strip().lower() for q in qs)
    for c, k in qnorm.items():
        if k > 1:
            err(f"duplicate question: {c}")
    for i, o in enumerate(offs):
        if set(o) != {"id", "prompt", "lang", "kind"} or o.get("kind") not in ("unrelated", "near-topic"):
            err(f"offtopic #{i} fields {sorted(o)}")
            continue
        if o["id"] != f"o{i + 1:03d}":
            err(f"offtopic #{i} id {o['id']}")
        if o["lang"] not in LANGS:
            err(f"{o['id']} lang {o['lang']!r}")
    onorm = Counter(o["prompt"].strip().lower() for o in offs)
    for c, k in onorm.items():
        if k > 1:
            err(f"duplicate offtopic prompt: {c}")
    for c in set(onorm) & set(qnorm):
        err(f"prompt is both a question and offtopic: {c}")

    agents = Counter(m["agent"] for m in mems)
    if len(mems) < MIN_MEMORIES:
        err(f"only {len(mems)} memories (< {MIN_MEMORIES})")
    if len(qs) < MIN_QUESTIONS:
        err(f"only {len(qs)} questions (< {MIN_QUESTIONS})")
    if len(offs) < MIN_OFFTOPIC:
        err(f"only {len(offs)} offtopic prompts (< {MIN_OFFTOPIC})")
    if len(agents) < MIN_AGENTS:
        err(f"only {len(agents)} agents (< {MIN_AGENTS})")

    if errors:  # later checks assume a sound structure
        for e in errors:
            print("ERROR:", e)
        return 1

    # ------------------------------------------------------------------ language labels
    def check_lang(ident, lang, text):
        has_cjk = bool(CJK.search(text))
        s = script_of(text)
        hans = "".join(sorted({ch for ch in text if ch in HANS_ONLY}))
        hant = "".join(sorted({ch for ch in text if ch in HANT_ONLY}))
        if lang == "en" and has_cjk:
            err(f"{ident} labelled en but contains Chinese")
        if lang != "en" and not has_cjk:
            err(f"{ident} labelled {lang} but has no Chinese")
        if lang == "zh-Hant" and hans:
            err(f"{ident} labelled zh-Hant but has simplified-only characters {hans}: {text}")
        if lang == "zh-Hans" and hant:
            err(f"{ident} labelled zh-Hans but has traditional-only characters {hant}: {text}")
        if lang == "mixed" and hans and hant:
            err(f"{ident} mixes simplified ({hans}) and traditional ({hant}) characters: {text}")
        if lang == "mixed" and not LATIN_WORD.search(text):
            err(f"{ident} labelled mixed but has no English word: {text}")
        return s

    for m in mems:
        check_lang(m["id"], m["lang"], m["content"])
    for q in qs:
        check_lang(q["id"], q["lang"], q["question"])
    for o in offs:
        check_lang(o["id"], o["lang"], o["prompt"])

    # ------------------------------------------------------------------ kinds
    mgroup = {m["id"]: group(m["lang"], m["content"]) for m in mems}
    word_df = Counter(w for m in mems for w in set(re.findall(r"[a-z0-9_]+", m["content"].lower())))
    for q in qs:
        qg = group(q["lang"], q["question"])
        rel_groups = [mgroup[r] for r in q["relevant"]]
        text = q["question"]
        if q["kind"] == "cross-language":
            if all(same_group(qg, g) for g in rel_groups):
                warn(f"{q['id']} cross-language but same language as its memory: {text}")
        elif q["kind"] == "paraphrase":
            if not any(same_group(qg, g) for g in rel_groups):
                warn(f"{q['id']} paraphrase in another language than its memory (cross-language?): {text}")
        elif q["kind"] == "identifier":
            # a code-like token (digits, _ . - / :, camelCase, ALLCAPS) or a rare word (in <= 2 memories), found
            # verbatim in a relevant memory
            ids = identifier_tokens(text) + [w for w in re.findall(r"[a-z0-9_]{5,}", text.lower())
                                             if word_df.get(w, 0) <= 2]
            found = [t for t in ids if any(t.lower() in mem_by_id[r]["content"].lower() for r in q["relevant"])]
            if not found:
                warn(f"{q['id']} identifier question without an identifier found in its memory: {text}")
        elif q["kind"] == "short":
            if CJK.search(text):
                if len(CJK.findall(text)) + len(LATIN_WORD.findall(text)) > 10:
                    warn(f"{q['id']} short question is long: {text}")
            elif len(text.split()) > 5:
                warn(f"{q['id']} short question is long: {text}")

    # ------------------------------------------------------------------ counts
    print(f"file: {path}")
    print(f"memories {len(mems)}, questions {len(qs)}, offtopic {len(offs)}")
    print("structure: ids unique and sequential, every relevant id exists, no duplicate memory contents, "
          "questions or prompts, fields and language labels valid")

    def show(title, counter, total):
        parts = ", ".join(f"{k} {v} ({100 * v / total:.0f}%)" for k, v in counter.most_common())
        print(f"  {title}: {parts}")

    print("memories")
    show("lang", Counter(m["lang"] for m in mems), len(mems))
    show("agent", agents, len(mems))
    show("project", Counter(m["project"] for m in mems), len(mems))
    show("tags", Counter(t for m in mems for t in m["tags"]), len(mems))
    lens = sorted(len(m["content"]) for m in mems)
    print(f"  content length: min {lens[0]}, median {lens[len(lens) // 2]}, max {lens[-1]} characters")
    print("questions")
    show("lang", Counter(q["lang"] for q in qs), len(qs))
    show("kind", Counter(q["kind"] for q in qs), len(qs))
    show("relevant ids", Counter(len(q["relevant"]) for q in qs), len(qs))
    print("offtopic")
    show("lang", Counter(o["lang"] for o in offs), len(offs))

    # ------------------------------------------------------------------ paraphrase overlap
    mtok = {m["id"]: set(tokens(m["content"])) for m in mems}
    high = defaultdict(list)
    for q in qs:
        qt = set(tokens(q["question"]))
        if not qt:
            share = 0.0
        else:
            share = max(len(qt & mtok[r]) / len(qt) for r in q["relevant"])
        q["_share"] = share
        if share >= 0.5:
            high[q["kind"]].append(q)
    n_high = sum(len(v) for v in high.values())
    print("word overlap: questions whose relevant memory has >= 50% of the question's content words "
          "(latin words + CJK bigrams, 繁 folded to 简)")
    print(f"  all: {n_high}/{len(qs)} ({100 * n_high / len(qs):.0f}%)")
    for kind in sorted(KINDS):
        tot = sum(q["kind"] == kind for q in qs)
        print(f"  {kind}: {len(high[kind])}/{tot} ({100 * len(high[kind]) / max(1, tot):.0f}%)")
    if high["paraphrase"]:
        print("  paraphrase questions at >= 50%:")
        for q in high["paraphrase"]:
            print(f"    {q['id']} {q['_share']:.2f} {q['question']}  ->  {q['relevant']}")

    # ------------------------------------------------------------------ lexical baseline and near misses
    ids = [m["id"] for m in mems]
    bm = BM25([tokens(m["content"]) for m in mems])
    near = defaultdict(set)  # memory id -> questions for which it is a near miss (outranks the gold)
    hit1 = hit5 = 0
    per_kind = defaultdict(lambda: [0, 0])
    for q in qs:
        sc = bm.scores(tokens(q["question"]))
        order = sorted(range(len(ids)), key=lambda i: -sc[i])
        rel = set(q["relevant"])
        ranks = [r for r, i in enumerate(order) if ids[i] in rel]
        best = ranks[0] if ranks else len(ids)
        hit1 += best == 0
        hit5 += best < 5
        per_kind[q["kind"]][0] += best < 5
        per_kind[q["kind"]][1] += 1
        # a near miss: a memory that is not relevant but shares words with the question and ranks above the
        # best relevant one
        for i in order[:best]:
            if sc[i] > 0:
                near[ids[i]].add(q["id"])
    print("lexical baseline (BM25 on the tokens above; a rough difficulty gauge, not memcli):")
    print(f"  hit@1 {hit1 / len(qs):.3f}, hit@5 {hit5 / len(qs):.3f}; hit@5 by kind: "
          + ", ".join(f"{k} {v[0] / v[1]:.2f}" for k, v in sorted(per_kind.items())))

    answered = {r for q in qs for r in q["relevant"]}
    print(f"memories that answer at least one question: {len(answered)}/{len(mems)}")
    print(f"memories that are a lexical near miss (share words with a question it does not answer and "
          f"outrank its gold) for at least one question: {len(near)}/{len(mems)}")
    print(f"memories that are a near miss for at least 3 questions: {sum(len(v) >= 3 for v in near.values())}")
    orphans = [i for i in ids if i not in answered and i not in near]
    print(f"memories that answer no question and are a near miss for none: {len(orphans)}")
    for i in orphans:
        print(f"    {i} {mem_by_id[i]['content'][:90]}")
    never = [i for i in ids if i not in answered]
    if never:
        print(f"memories that answer no question (pure distractors): {len(never)} {' '.join(never)}")

    # offtopic prompts sharing words with memories
    surf = 0
    for o in offs:
        ot = set(tokens(o["prompt"]))
        if any(len(ot & mtok[i]) >= 1 for i in ids):
            surf += 1
    print(f"offtopic prompts sharing at least one content word with some memory: {surf}/{len(offs)}")

    for w in warnings:
        print("WARNING:", w)
    if verbose:
        for q in qs:
            sc = bm.scores(tokens(q["question"]))
            order = sorted(range(len(ids)), key=lambda i: -sc[i])[:3]
            print(q["id"], q["kind"], q["question"], q["relevant"], "| top3:", [ids[i] for i in order])
    for e in errors:
        print("ERROR:", e)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
