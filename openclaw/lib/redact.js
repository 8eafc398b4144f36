// Secrets never reach the disk: a faithful port of memcli's src/memcli/redact.py (same kinds, same labels
// `[REDACTED:<kind>]`, same careful rules for bare keys and passwords in prose, so SHAs, UUIDs, paths and
// identifiers stay). The plugin cleans every payload with it before a turn is queued on disk (spool() in
// transport.js) and every line it logs. tests/js/redact.test.mjs (run by tests/test_openclaw_plugin.py) keeps
// the two equal: the patterns' text below must be redact.py's, and redact() must give Python's output on every
// case of bench/data/redact_cases.json and on ordinary texts.
//
// The patterns are redact.py's own text, translated by py() into JavaScript with Python's semantics: `\w`,
// `\d`, `\s` and `\b` are Unicode-aware in Python (`\w` = letters, numbers, `_`; `\d` = decimal digits;
// `\s` includes \x1c-\x1f and \x85), ASCII in JavaScript, so they become explicit Unicode classes (u flag);
// `(?i)` / IGNORECASE becomes the i flag, and Python's case-insensitive `i` also matches `İ` and `ı`;
// `\Z` becomes `$` (no m flag); `(?P<name>` becomes `(?<name>`.
//
// Two of redact.py's fullmatch checks backtrack badly on a crafted input (_WORDLIKE exponentially on a
// 40-character part such as "1111…aB", _VERSION quadratically on "1.1.1.…#"); they are computed here without
// backtracking, with the same answers (the test compares them with the translated patterns on many strings).
//
// No imports at all (the plugin uses Node's standard library only).

const W = String.raw`\p{L}\p{N}_`; // Python's \w of a str pattern (str.isalnum() or "_")
const D = String.raw`\p{Nd}`; // Python's \d (decimal digits)
const S = String.raw`\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`; // Python's \s
const B = `(?:(?<=[${W}])(?![${W}])|(?<![${W}])(?=[${W}]))`; // Python's \b
const B_BEFORE_WORD = `(?<![${W}])`; // Python's \b where a word character must follow (V8 then finds it fast)
const DOTLESS = String.raw`\u0130\u0131`; // Python's IGNORECASE "i" also matches İ and ı (JS's i flag does not)
const PASS = new Set("\\.^$|?*+()[]{}/".split(""));

/** A Python `re` pattern (str, flags "i"/"s") → a JavaScript RegExp with the same meaning (u flag). */
export function py(source, flags = "", extra = "") {
  let src = source;
  let ignore = flags.includes("i");
  if (src.startsWith("(?i)")) {
    src = src.slice(4);
    ignore = true;
  }
  let out = "";
  let i = 0;
  let klass = null; // the body of the character class being read, or null outside one
  const take = (text) => {
    if (klass !== null) klass += text;
    else out += text;
  };
  while (i < src.length) {
    const c = src[i];
    if (c === "\\") {
      const e = src[i + 1];
      i += 2;
      if (e === "w") take(klass !== null ? W : `[${W}]`);
      else if (e === "d") take(D);
      else if (e === "s") take(klass !== null ? S : `[${S}]`);
      else if (e === "b" && klass === null) take(wordFollows(src, i) ? B_BEFORE_WORD : B);
      else if (e === "Z" && klass === null) take("$");
      else if (e === "n") take("\\n");
      else if (e === '"' || e === "'" || e === "`") take(e);
      else if (e === "-") take(klass !== null ? "\\-" : "-");
      else if (/[1-9]/.test(e) && klass === null) take(`\\${e}`);
      else if (PASS.has(e)) take(`\\${e}`);
      else throw new Error(`py(): escape \\${e} is not translated: ${source}`);
      continue;
    }
    if (klass === null && c === "[") {
      klass = "";
      i += 1;
      if (src[i] === "^") {
        klass = "^";
        i += 1;
      }
      continue;
    }
    if (klass !== null && c === "]") {
      const negated = klass.startsWith("^");
      let body = negated ? klass.slice(1) : klass;
      // a "-" that is a character ([\w-]) escaped, so the characters added after it make no range
      if (body.startsWith("-")) body = `\\${body}`;
      if (body.endsWith("-") && !body.endsWith("\\-")) body = `${body.slice(0, -1)}\\-`;
      const dotless = ignore && new RegExp(`[${body}]`, "iu").test("i") ? DOTLESS : "";
      out += `[${negated ? "^" : ""}${body}${dotless}]`;
      klass = null;
      i += 1;
      continue;
    }
    if (klass === null && src.startsWith("(?P<", i)) {
      out += "(?<";
      i += 4;
      continue;
    }
    if (klass === null && src.startsWith("(?", i)) { // (?: (?= (?! (?<= (?<!: no letters to translate
      const m = /^\(\?(?:<[=!]|[:=!])/.exec(src.slice(i, i + 4));
      if (!m) throw new Error(`py(): group syntax not translated: ${source}`);
      out += m[0];
      i += m[0].length;
      continue;
    }
    take(ignore && klass === null && (c === "i" || c === "I") ? `[iI${DOTLESS}]` : c);
    i += 1;
  }
  if (klass !== null) throw new Error(`py(): unterminated class: ${source}`);
  let f = "u" + extra;
  if (ignore) f += "i";
  if (flags.includes("s")) f += "s";
  return new RegExp(out, f);
}

/** Must every match of the Python pattern `src` from index `i` on start with a word character? (A literal
 * letter, digit or "_", `\d`, `\w`, a class of ASCII letters and digits, or a group whose every alternative
 * does; not when it may be skipped.) */
function wordFollows(src, i) {
  let end; // where the atom at i ends
  let ok;
  const c = src[i];
  if (c === undefined) return false;
  if (c === "\\") {
    ok = src[i + 1] === "d" || src[i + 1] === "w";
    end = i + 2;
  } else if (c === "[") {
    const close = src.indexOf("]", i + 1);
    ok = close > i && /^(?:[A-Za-z0-9_](?:-[A-Za-z0-9_])?)+$/.test(src.slice(i + 1, close));
    end = close + 1;
  } else if (c === "(") {
    let start = i + 1;
    if (src.startsWith("?:", start)) start += 2;
    else if (src.startsWith("?P<", start)) start = src.indexOf(">", start) + 1;
    else if (src[start] === "?") return false; // a lookaround
    const alternatives = [start];
    let depth = 0;
    let k = start;
    for (; k < src.length; k++) {
      if (src[k] === "\\") k += 1;
      else if (src[k] === "[") k = src.indexOf("]", k + 1);
      else if (src[k] === "(") depth += 1;
      else if (src[k] === ")" && depth-- === 0) break;
      else if (src[k] === "|" && depth === 0) alternatives.push(k + 1);
    }
    ok = k < src.length && alternatives.every((a) => wordFollows(src, a));
    end = k + 1;
  } else {
    ok = /[A-Za-z0-9_]/.test(c);
    end = i + 1;
  }
  return ok && !/^(?:[?*]|\{0[,}])/.test(src.slice(end, end + 3));
}

// ------------------------------------------------------------------ redact.py's patterns, as written there
// [python source, python flags]: tests/js/redact.test.mjs checks these against redact.py's compiled
// patterns, so a change there fails the test until it is ported here.
export const SOURCES = {
  PRIVATE: [String.raw`<private>.*?(?:</private>|\Z)`, "is"],
  PEM: [String.raw`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY` +
    String.raw`(?: BLOCK)?-----|\Z)`, "s"],
  TOKENS: [
    ["anthropic-key", String.raw`\bsk-ant-[A-Za-z0-9_\-]{16,}`],
    ["api-key", String.raw`\bsk-(?:proj-|live-|test-|admin-|svcacct-)?[A-Za-z0-9_\-]{16,}`],
    ["stripe-key", String.raw`\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}`],
    ["stripe-key", String.raw`\bwhsec_[A-Za-z0-9]{24,}`],
    ["aws-key-id", String.raw`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`],
    ["github-token", String.raw`\bgh[pousr]_[A-Za-z0-9]{20,}\b`],
    ["github-token", String.raw`\bgithub_pat_[A-Za-z0-9_]{20,}`],
    ["gitlab-token", String.raw`\bgl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_\-]{20,}`],
    ["slack-token", String.raw`\bxox[abposre]-[A-Za-z0-9\-]{10,}`],
    ["slack-token", String.raw`\bxapp-\d-[A-Za-z0-9\-]{10,}`],
    ["slack-webhook", String.raw`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+`],
    ["discord-webhook", String.raw`https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+`],
    ["google-key", String.raw`\bAIza[0-9A-Za-z_\-]{35}\b`],
    ["google-oauth", String.raw`\bGOCSPX-[A-Za-z0-9_\-]{20,}`],
    ["google-oauth", String.raw`\bya29\.[0-9A-Za-z_\-]{20,}`],
    ["npm-token", String.raw`\bnpm_[A-Za-z0-9]{36}\b`],
    ["pypi-token", String.raw`\bpypi-AgE[A-Za-z0-9_\-]{40,}`],
    ["hf-token", String.raw`\bhf_[A-Za-z0-9]{30,}\b`],
    ["sendgrid-key", String.raw`\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}`],
    ["mailgun-key", String.raw`\bkey-[0-9a-f]{32}\b`],
    ["twilio-key", String.raw`\bSK[0-9a-f]{32}\b`],
    ["shopify-token", String.raw`\bshp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}\b`],
    ["digitalocean-token", String.raw`\bdo[por]_v1_[a-f0-9]{64}\b`],
    ["databricks-token", String.raw`\bdapi[0-9a-f]{32}(?:-\d)?\b`],
    ["telegram-token", String.raw`\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b`],
    ["discord-token", String.raw`\b[MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38}\b`],
    ["linear-key", String.raw`\blin_(?:api|oauth)_[A-Za-z0-9]{32,}\b`],
    ["notion-token", String.raw`\b(?:secret|ntn)_[A-Za-z0-9]{43,}\b`],
    ["vault-token", String.raw`\bhv[sbr]\.[A-Za-z0-9_\-]{24,}`],
    ["doppler-token", String.raw`\bdp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_\-.]{30,}`],
    ["age-key", String.raw`\bAGE-SECRET-KEY-1[0-9A-Z]{50,}\b`],
    ["llm-key", String.raw`\b(?:gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|pplx-[A-Za-z0-9]{40,}` +
      String.raw`|xai-[A-Za-z0-9]{40,}|AIzaSy[0-9A-Za-z_\-]{33})\b`],
    ["square-token", String.raw`\bsq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,}|\bEAAA[A-Za-z0-9_\-]{56,}`],
    ["atlassian-token", String.raw`\bATATT3[A-Za-z0-9_\-=]{60,}`],
    ["memcli-token", String.raw`\bmnemo_[A-Za-z0-9_\-]{24,}`],
    ["jwt", String.raw`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`],
  ],
  BEARER: [String.raw`(?i)\b(bearer|token|basic)(\s+)([A-Za-z0-9._~+/=\-]{16,})`, "i"],
  AUTH_HEADER: [String.raw`(?i)\b(authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)([\"']?)([^\s\"',;]+(?:\s+[^\s\"',;]+)?)`, "i"],
  ASSIGN: [
    String.raw`(?i)((?<![\w.\-])[\"']?[\w.\-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|` +
    String.raw`private[_\-]?key|secret[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?|account[_\-]?key|` +
    String.raw`shared[_\-]?access[_\-]?key|signing[_\-]?key|encryption[_\-]?key)\b[\"']?)(\s*(?:=|:|=>)\s*)` +
    String.raw`([\"']?)([^\s\"',;}{)]{4,})(\3)`, "i"],
  URL_PASSWORD: [String.raw`(?<![a-zA-Z0-9+.\-])([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:)([^@\s/]+)(@)`, ""],
  CLI_PASSWORD: [String.raw`(?<![\w-])(--?(?:password|passwd|token|secret|api-key|apikey)(?:=|\s+))([^\s\"']+)`, "i"],
  PROSE: [
    String.raw`(?i)\b((?:password|passphrase|passwd|secret(?:[ _\-](?:access[ _\-])?key)?|api[ _\-]?key|access[ _\-]key|` +
    String.raw`private[ _\-]key|(?:auth|access|api|bearer|bot|refresh)[ _\-]token|token|credentials?)` +
    String.raw`\s+(?:is|was|are|were|is\s+now|became|to|of)\s+)([` + "`" + String.raw`'\"]?)([^\s` + "`" + String.raw`'\",;]{6,})`, "i"],
  SEGMENT: [String.raw`[^\n|;&]+`, ""],
  CURL: [String.raw`\bcurl\b`, ""],
  CURL_USER: [String.raw`(?<![\w-])(-u\s*|-U\s*|--user(?:\s+|=)|--proxy-user(?:\s+|=))([\"']?)([^\s:\"'@]{1,128}:)` +
    String.raw`([^\s\"']+)`, ""],
  MYSQL: [String.raw`\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb|` +
    String.raw`mariadb-dump|mariadb-admin)\b`, ""],
  MYSQL_PASSWORD: [String.raw`(?<![\w-])(-p)([\"']?)([^\s\"'\-][^\s\"']*)`, ""],
  DOCKER_AUTH: [String.raw`(?i)((?<![\w.\-])[\"']?auth[\"']?\s*[:=]\s*)([\"']?)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])`, "i"],
  PGPASS: [String.raw`(?<![\w.\-*:\\/])((?:[\w.\-]+|\*):([0-9]{1,5}|\*):((?:\\.|[^\s:\\])+):((?:\\.|[^\s:\\])+):)` +
    String.raw`((?:\\.|[^\s:\\])+)(?=\s|\Z)`, ""],
  CJK_PROSE: [String.raw`((?:密码|密碼|口令|密钥|密鑰|秘钥|私钥|私鑰|令牌)\s*(?:(?:是|为|為|设为|设置为|設為|改为|改成|改為)` +
    String.raw`(?:\s*[：:])?|[：:=])\s*)([` + "`" + String.raw`'\"“「]?)([A-Za-z0-9!#$%&()*+\-./:<=>?@\[\]^_{|}~]{6,})`, ""],
  // literal invisible characters, as in redact.py (String.raw would keep the escapes as text)
  ZERO_WIDTH: ["(?<=[A-Za-z0-9_+/=.\\-])[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]+(?=[A-Za-z0-9_+/=.\\-])", ""],
  VERSION: [String.raw`v?\d+(?:\.\d+)+[\w.\-]*`, ""],
  HYPHENED_WORDS: [String.raw`[a-z]+\d*(?:-[a-z]+\d*)+`, ""],
  BARE40: [String.raw`(?<![A-Za-z0-9/+=_\-.])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_\-])`, ""],
  WORDLIKE: [String.raw`(?:[A-Z]?[a-z]{2,}|[A-Z]{2,6}(?![a-z])|\d+)*[A-Z]?[a-z]?`, ""],
};

export const WORDS = new Set(`none null true false required optional str string int bool bytes the this that these those
from with your our their which what will would should must can could is are was were be been being empty
missing stored set unset env environment variable variables field value values here there below above
config configured see same new old default example placeholder redacted hidden`.split(/\s+/));

/** Fields of a hook payload that are identifiers, never prose: kept as they are (a path, a session id). */
export const PAYLOAD_IDS = new Set(["session_id", "transcript_path", "cwd", "hook_event_name", "agent_id", "agent_type",
  "source", "reason", "trigger", "permission_mode", "stop_hook_active", "_memcli_caller"]);

const sub = ([source, flags]) => py(source, flags, "g");
const PRIVATE = sub(SOURCES.PRIVATE);
const PEM = sub(SOURCES.PEM);
const TOKENS = SOURCES.TOKENS.map(([label, source]) => [label, py(source, "", "g")]);
const BEARER = sub(SOURCES.BEARER);
const AUTH_HEADER = sub(SOURCES.AUTH_HEADER);
const ASSIGN = sub(SOURCES.ASSIGN);
const URL_PASSWORD = sub(SOURCES.URL_PASSWORD);
const CLI_PASSWORD = sub(SOURCES.CLI_PASSWORD);
const PROSE = sub(SOURCES.PROSE);
const SEGMENT = sub(SOURCES.SEGMENT);
const CURL = py(...SOURCES.CURL); // searched, not replaced: no g flag
const CURL_USER = sub(SOURCES.CURL_USER);
const MYSQL = py(...SOURCES.MYSQL);
const MYSQL_PASSWORD = sub(SOURCES.MYSQL_PASSWORD);
const DOCKER_AUTH = sub(SOURCES.DOCKER_AUTH);
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/; // b64decode(validate=True) refuses any other character; Buffer skips them
const USER_PASSWORD = /^[^\x00-\x1f\x7f:]+:[^\x00-\x1f\x7f]*$/u; // redact.py's _USER_PASSWORD, fullmatch
const PGPASS = sub(SOURCES.PGPASS);
const CJK_PROSE = sub(SOURCES.CJK_PROSE);
const ZERO_WIDTH = sub(SOURCES.ZERO_WIDTH);
const DECIMAL = /^\p{Nd}+$/u; // Python's str.isdecimal()
const HYPHENED_WORDS = fullmatcher(SOURCES.HYPHENED_WORDS[0]); // linear: each repetition starts with "-"
const BARE40 = sub(SOURCES.BARE40);
// _VERSION.fullmatch without its quadratic backtracking: `\d+(?:\.\d+)+[\w.\-]*` takes the same strings as
// `\d+\.\d[\w.\-]*` (digits and dots are in [\w.\-]), which has one way to match.
const VERSION_LINEAR = py(String.raw`^v?\d+\.\d[\w.\-]*\Z`);
const SURROGATE = /[\ud800-\udfff]/gu; // a lone surrogate (with the u flag a pair is one character)

/** Python's _VERSION.fullmatch(value) ("1.2.3", "v2.0-rc1"), in linear time. */
export function versionLike(value) {
  return VERSION_LINEAR.test(value);
}

/** A Python pattern's fullmatch as a RegExp (`^(?:…)$`); for the tests' comparisons too. */
export function fullmatcher(source, flags = "") {
  return py(`^(?:${source})\\Z`, flags);
}

// ------------------------------------------------------------------ redact.py's functions
/** Return `text` with every secret it recognises replaced by `[REDACTED:<kind>]`. */
export function redact(text) {
  if (!text) return text;
  const out = patterns(text);
  const joined = out.replace(ZERO_WIDTH, "");
  if (joined !== out) { // a token with invisible characters inside: redacted without them if they hid it
    const again = patterns(joined);
    if (again !== joined) return again;
  }
  return out;
}

function patterns(text) {
  text = text.replace(PRIVATE, "[private]");
  text = text.replace(PEM, "[REDACTED:private-key]");
  for (const [label, pat] of TOKENS) text = text.replace(pat, () => `[REDACTED:${label}]`);
  text = text.replace(URL_PASSWORD, (_m, g1, _g2, g3) => `${g1}[REDACTED:password]${g3}`);
  text = text.replace(AUTH_HEADER, (...m) => keep(m, 3, "credential"));
  text = text.replace(BEARER, (m0, g1, g2, g3) => (g3.startsWith("[REDACTED") ? m0 : `${g1}${g2}[REDACTED:token]`));
  text = text.replace(CLI_PASSWORD, (m0, g1, g2) => (g2.startsWith("[REDACTED") ? m0 : `${g1}[REDACTED:password]`));
  if (CURL.test(text) || MYSQL.test(text)) text = text.replace(SEGMENT, command);
  text = text.replace(DOCKER_AUTH, dockerAuth);
  text = text.replace(PGPASS, pgpass);
  text = text.replace(ASSIGN, (...m) => assign(m));
  text = text.replace(PROSE, (...m) => prose(m));
  text = text.replace(CJK_PROSE, (...m) => prose(m));
  text = text.replace(BARE40, (m0, g1) => (looksRandom(g1) ? "[REDACTED:secret-key]" : m0));
  return text;
}

/** Whether redact() would change `text`. */
export function containsSecret(text) {
  return redact(text) !== text;
}

/** Python's _WORDLIKE.fullmatch(part), without backtracking: the positions the starred group can reach,
 * then whether `[A-Z]?[a-z]?` ends the part from one of them. */
export function wordlike(part) {
  const n = part.length;
  const up = (k) => k < n && part[k] >= "A" && part[k] <= "Z";
  const low = (k) => k < n && part[k] >= "a" && part[k] <= "z";
  const digit = (k) => k < n && part[k] >= "0" && part[k] <= "9"; // parts are ASCII: [A-Za-z0-9]
  const reach = new Array(n + 1).fill(false);
  reach[0] = true;
  for (let i = 0; i <= n; i++) {
    if (!reach[i]) continue;
    // [A-Z]?[a-z]{2,}
    for (const s of up(i) ? [i, i + 1] : [i]) {
      let j = s;
      while (low(j)) {
        j += 1;
        if (j - s >= 2) reach[j] = true;
      }
    }
    // [A-Z]{2,6}(?![a-z])
    for (let j = i + 1; j <= i + 6 && up(j - 1); j++) if (j - i >= 2 && !low(j)) reach[j] = true;
    // \d+
    for (let j = i; digit(j); j++) reach[j + 1] = true;
  }
  for (let i = 0; i <= n; i++) {
    if (!reach[i]) continue;
    let j = i; // [A-Z]?[a-z]? to the end: the longest way is enough (a shorter one ends before it)
    if (up(j)) j += 1;
    if (low(j)) j += 1;
    if (j === n) return true;
  }
  return false;
}

/** A key rather than a word, a path or a hash: mixed case, close to random (≥ 4.3 bits a character), not
 * made of words (redact.py's looks_random). */
export function looksRandom(token) {
  if (!(/[a-z]/.test(token) && /[A-Z]/.test(token))) return false; // the token is ASCII ([A-Za-z0-9/+]{40})
  if (token.split(/[/+]/).filter(Boolean).every(wordlike)) return false;
  const counts = new Map();
  for (const c of token) counts.set(c, (counts.get(c) ?? 0) + 1);
  let sum = 0; // Python's sum(): left to right, in first-seen order
  for (const n of counts.values()) sum += (n / token.length) * Math.log2(n / token.length);
  return -sum >= 4.3;
}

function keep(m, quoteGroup, label) {
  const value = m[quoteGroup + 1];
  if (value.startsWith("[REDACTED") || ["none", "null", "true", "false"].includes(value.toLowerCase())) return m[0];
  return `${m[1]}${m[2]}${m[quoteGroup]}[REDACTED:${label}]`;
}

const startsWithAny = (value, prefixes) => prefixes.some((p) => value.startsWith(p));

/** Python's str.strip(chars) / rstrip(chars), without a regex (a run of 32,000 dots stays linear). */
function rstrip(value, chars) {
  let end = value.length;
  while (end > 0 && chars.includes(value[end - 1])) end -= 1;
  return value.slice(0, end);
}

function strip(value, chars) {
  let start = 0;
  while (start < value.length && chars.includes(value[start])) start += 1;
  return rstrip(value.slice(start), chars);
}

function assign(m) {
  const value = m[4];
  if (startsWithAny(value, ["[REDACTED", "[private"]) || WORDS.has(strip(value.toLowerCase(), ".:"))) return m[0];
  // `password = os.environ…` (read from the environment) or `token: str` are code, not secrets
  if (startsWithAny(value, ["os.", "env.", "process.env", "${", "$", "getenv", "<", "input("]) || value.endsWith("(")) {
    return m[0];
  }
  return `${m[1]}${m[2]}${m[3]}[REDACTED:secret]${m[5]}`;
}

/** A command-line flag's value that is a password, not a reference to one ($PASS, %PASS%, <password>). */
const flagValue = (value) => !startsWithAny(value, ["[REDACTED", "[private", "$", "%", "<"]);

/** One command of a line: the password flags of curl and the MySQL clients after their name redacted. */
function command(seg) {
  for (const [name, flag, repl] of [[CURL, CURL_USER, curlUser], [MYSQL, MYSQL_PASSWORD, mysqlPassword]]) {
    const found = name.exec(seg);
    if (found) {
      const end = found.index + found[0].length;
      seg = seg.slice(0, end) + seg.slice(end).replace(flag, repl);
    }
  }
  return seg;
}

function curlUser(m0, g1, g2, g3, g4) {
  return flagValue(g4) ? `${g1}${g2}${g3}[REDACTED:password]` : m0;
}

function mysqlPassword(m0, g1, g2, g3) {
  return flagValue(g3) ? `${g1}${g2}[REDACTED:password]` : m0;
}

function dockerAuth(m0, g1, g2, value) {
  if (value.length % 4 || !BASE64.test(value)) return m0;
  let decoded;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(Buffer.from(value, "base64"));
  } catch {
    return m0;
  }
  return USER_PASSWORD.test(decoded) ? `${g1}${g2}[REDACTED:credential]` : m0;
}

function pgpass(m0, g1, port, db, user, password) {
  if (port !== "*" && Number(port) > 65535) return m0;
  if (![db, user].every((f) => f === "*" || LETTER.test(f))) return m0; // 10:15:30:45:00, fe80:1:2:3:4
  if (DECIMAL.test(password) || password === "*" || !flagValue(password)) return m0;
  return `${g1}[REDACTED:password]`;
}

function prose(m) {
  const value = !m[2] ? rstrip(m[3], ".!?)]:") : m[3];
  if (!passwordLike(value)) return m[0];
  return `${m[1]}${m[2]}[REDACTED:secret]${m[3].slice(value.length)}`;
}

const LETTER = /\p{L}/u; // Python's str.isalpha()

function passwordLike(value) {
  const chars = [...value]; // code points, as Python counts
  if (chars.length < 6 || startsWithAny(value, ["[REDACTED", "[private", "/", "~", "./", "$", "<", "{", "%"])) return false;
  if (value.includes("://") || WORDS.has(value.toLowerCase()) || versionLike(value) || HYPHENED_WORDS.test(value)) {
    return false;
  }
  const letters = chars.filter((c) => LETTER.test(c)).length;
  const others = chars.length - letters;
  return letters > 0 && others > 0;
}

/** Lone surrogates (broken UTF-16) replaced by U+FFFD, the rest kept. */
export function fixSurrogates(text) {
  return text.replace(SURROGATE, "\ufffd");
}

function isPlainObject(value) {
  if (value === null || typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A hook payload fit to keep (redact.py's clean_payload): lone surrogates replaced (the turn is kept, not
 * refused) and every text field redacted; ids and paths (PAYLOAD_IDS) are only repaired.
 */
export function cleanPayload(value, redactText = true) {
  if (typeof value === "string") {
    const fixed = fixSurrogates(value);
    return redactText ? redact(fixed) : fixed;
  }
  if (Array.isArray(value)) return value.map((v) => cleanPayload(v, redactText));
  if (isPlainObject(value)) { // fromEntries: a "__proto__" key stays a key, as in Python's dict
    return Object.fromEntries(Object.entries(value)
      .map(([k, v]) => [fixSurrogates(k), cleanPayload(v, redactText && !PAYLOAD_IDS.has(k))]));
  }
  return value;
}
