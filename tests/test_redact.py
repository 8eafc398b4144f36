"""The core's redaction (memcli.redact) on its own: every kind of bench/data/redact_cases.json is redacted in its
sentence, the tricky ordinary sentences (ids, hashes, paths, "the token is expired") are left exactly as they
are, a hook payload keeps its ids and paths and loses its secrets and lone surrogates, and no input makes
the patterns backtrack for minutes (a 32,000-character "a.a.a…" took 460 s, one 32,000-letter word 100 s
of a server's write before the patterns were anchored)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memcli.redact import (
    clean_payload,
    clean_payload_bytes,
    contains_secret,
    looks_random,
    redact,
    redact_fields,
    redact_label,
    redact_metadata,
)
from memcli.textnorm import search_text

CASES = json.loads((Path(__file__).resolve().parents[1] / "bench" / "data" / "redact_cases.json").read_text())


@pytest.mark.parametrize("case", CASES["secrets"], ids=[c["kind"] for c in CASES["secrets"]])
def test_every_kind_is_redacted_in_its_sentence(case: dict[str, str]) -> None:
    out = redact(case["text"])
    assert all(p not in out for p in case["secret"].split("\n") if len(p) >= 6), out
    assert "[REDACTED:" in out or "[private]" in out
    assert redact(out) == out  # idempotent: a stored memory redacted again stays the same


@pytest.mark.parametrize("text", CASES["ordinary"])
def test_ordinary_text_is_left_exactly_as_it_is(text: str) -> None:
    assert redact(text) == text and not contains_secret(text)


def test_the_bare_aws_secret_key_in_prose_and_what_is_not_one() -> None:
    assert redact("the secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == "the secret key is [REDACTED:secret]"
    assert "[REDACTED:secret-key]" in redact("paste wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY there")
    for word in ("Users/JohnSmith/Documents/Projects/MyApp", "ComponentsHeaderButtonStylesMainIndex2js",
                 "3f9a1c2e4b7d6a5f8e9d0c1b2a3f4e5d6c7b8a90", "0123456789ABCDEF0123456789ABCDEF01234567"):
        assert not looks_random(word), word


def test_a_hook_payload_keeps_its_ids_and_loses_secrets_and_lone_surrogates() -> None:
    payload = {"session_id": "s-token=abcd1234", "cwd": "/home/me/password=hunter22", "transcript_path": "/t.jsonl",
               "prompt": "deploy with ghp_" + "A1b2" * 9 + " \ud800 now",
               "_memcli_caller": {"space": "crew", "agent": "bob", "token_id": "0123456789ab"},
               "nested": [{"last": "Authorization: Bearer " + "z" * 30}]}
    out = clean_payload(payload)
    assert out["session_id"] == payload["session_id"] and out["cwd"] == payload["cwd"]
    assert out["_memcli_caller"] == payload["_memcli_caller"]
    assert out["prompt"] == "deploy with [REDACTED:github-token] \ufffd now"
    assert "z" * 30 not in json.dumps(out["nested"])
    raw = clean_payload_bytes(b'{"prompt": "x \\ud800 sk-ant-api03-abcdefghijklmnopqrstu"}')
    assert json.loads(raw) == {"prompt": "x \ufffd [REDACTED:anthropic-key]"}
    assert b"abcdefghijklmnop" not in clean_payload_bytes(b"not json: sk-ant-api03-abcdefghijklmnopqrstu")


@pytest.mark.parametrize("unit", ["a.", "c", "a:b@", "aA", "password=", "-", "x://", "a-", "Ac", "c_", "1c",
                                  "token ", "password is ", "\"", "eyJab.", "aB3/", "curl -u ", "curl x.-ux",
                                  "mysql -p", "!a:1:b:c:", "a:1:", "\\:", "密码是 ", "密码 ", "auth: ", "a\u200b",
                                  "\u200b"])
def test_no_input_makes_the_patterns_backtrack(unit: str) -> None:
    """Not a speed target: a guard against catastrophic backtracking (minutes, where linear work is ~0.1 s)."""
    text = unit * (32_000 // len(unit))
    t0 = time.monotonic()
    redact(text)
    search_text(text)
    assert time.monotonic() - t0 < 10, unit


@pytest.mark.parametrize("word", ["1" * 38 + "aB", "a" * 38 + "A1", "Ab" * 19 + "1C", "ABCDEF" * 6 + "abC1"])
def test_a_crafted_40_character_key_is_judged_without_backtracking(word: str) -> None:
    """The word-like check of a bare 40-character key took hours on "111…1aB" as a regex fullmatch."""
    t0 = time.monotonic()
    redact(f"the key is {word} ok")
    assert time.monotonic() - t0 < 5, word


def test_the_linear_checks_take_exactly_the_strings_of_the_patterns_they_replace() -> None:
    import random

    from memcli import redact as r

    rnd = random.Random(7)
    for _ in range(20_000):
        part = "".join(rnd.choice("abcXYZ012") for _ in range(rnd.randint(0, 12)))
        assert r._wordlike(part) == bool(r._WORDLIKE.fullmatch(part)), part
        value = "".join(rnd.choice("v1.2-a#_") for _ in range(rnd.randint(0, 10)))
        assert bool(r._VERSION_LINEAR.fullmatch(value)) == bool(r._VERSION.fullmatch(value)), value


GH = "ghp_" + "Qm7RtZ2xWv9KpL4nB8cYd3Hs6Ja1Fe5Ug0Ti"


@pytest.mark.parametrize("label", ["password-reset", "db-password-policy", "api-key:stripe", "token:rotation",
                                   "secret:rotation/vault", "credentials:aws", "auth-token-expiry", "billing-api",
                                   "envs/staging/terraform.tfstate", "数据库密码", "session-2024-05-01",
                                   "0e0e0001-0000-7000-8000-000000000001", "user:alice:pref", "Bearer"])
def test_a_label_that_only_sounds_like_a_secret_is_kept(label: str) -> None:
    assert redact_label(label) == label


@pytest.mark.parametrize(("label", "want"), [
    (GH, "[REDACTED:github-token]"), (f"deploy-{GH}", "deploy-[REDACTED:github-token]"),
    ("password:hunter2x", "password:[REDACTED:secret]"), ("token=refresh", "token=[REDACTED:secret]"),
    ("deploy/token=Rk9Wq2Zt7Lm4Xv8P", "deploy/token=[REDACTED:secret]"),
    ("billing-AKIAQ7RT2ZXW9KPL4NB8", "billing-[REDACTED:aws-key-id]"),
    ("ghp_Hd4Lr8Wz\u200b2Qx6Kt1Vb9Nm3Pc7Jy5Fs0GaUeZi", "[REDACTED:github-token]"),
])
def test_a_label_loses_its_secret(label: str, want: str) -> None:
    assert redact_label(label) == want and redact_label(want) == want


def test_metadata_keys_and_the_values_of_keys_that_name_a_secret_are_redacted() -> None:
    meta = {GH: "the bot's", GH[:-1] + "X": "another bot's", "db_password": "Pc6Hy1Jd5Fs0Ga8Nm2Qx",
            "apiKey": "correct horse battery", "password_hint": "ask ops", "token": "none", "secret": "$SECRET",
            "nested": [{"client_secret": "abcd1234"}, "sk-ant-api03-abcdefghijklmnopqrstu"], "n": 3}
    out = redact_metadata(meta)
    assert out == {"[REDACTED:github-token]": "the bot's", "[REDACTED:github-token] (2)": "another bot's",
                   "db_password": "[REDACTED:secret]", "apiKey": "[REDACTED:secret]", "password_hint": "ask ops",
                   "token": "none", "secret": "$SECRET", "nested": [{"client_secret": "[REDACTED:secret]"},
                                                                      "[REDACTED:anthropic-key]"], "n": 3}
    assert redact_metadata(out) == out


def test_redact_fields_covers_every_stored_string_field_and_nothing_else() -> None:
    fields = {"content": f"use {GH}", "context": [f"before {GH}"], "tags": [GH, "password-reset", GH],
              "key": f"k-{GH}", "project": f"p-{GH}", "thread": f"t-{GH}", "metadata": {GH: GH},
              "scope": "agent:ghp_x", "importance": 0.5, "namespace": None}
    out = redact_fields(fields)
    assert GH not in json.dumps(out)
    assert out["tags"] == ["[REDACTED:github-token]", "password-reset"]  # alike after redaction: one tag
    assert {k: out[k] for k in ("scope", "importance", "namespace")} == {"scope": "agent:ghp_x", "importance": 0.5,
                                                                        "namespace": None}
    assert redact_fields({"tags": None, "key": None}) == {"tags": None, "key": None}
