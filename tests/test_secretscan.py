"""The one key = value secret rule (design §2a): a key holding secret, token, password, passwd, api_key,
private_key, access_key, … with any prefix and `_`/`-` parts after it, then `=` or `:` and a value; the
characters a reader does not see are removed before the scan; and an owner is held to it from every source."""

from __future__ import annotations

import pytest
from helpers import git, ledger_bytes, run_here, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from majordomus import secretscan

ROOTS = ["password", "passwd", "passphrase", "pwd", "secret", "secrets", "token", "credential", "credentials",
         "api_key", "api-key", "apikey", "private_key", "privatekey", "access_key", "access-key"]
PREFIXES = ["", "DB_", "client_", "client-", "aws_", "my", "X"]
SUFFIXES = ["", "_KEY", "_key", "-value", "_id_2", "_b64"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\U000e0041"]
ident = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=4, max_size=12)


@given(root=st.sampled_from(ROOTS), prefix=st.sampled_from(PREFIXES), suffix=st.sampled_from(SUFFIXES),
       upper=st.booleans(), assign=st.sampled_from(["=", " = ", ": ", '": "', "='"]), value=ident)
@settings(max_examples=400, deadline=None)
def test_every_key_of_the_rule_with_a_value_is_a_secret(root, prefix, suffix, upper, assign, value):
    key = prefix + (root.upper() if upper else root) + suffix
    line = f"{key}{assign}{value}"
    assert secretscan.looks_secret(line) is not None, line
    assert secretscan.first_secret_line(["fine", line]) == (2, secretscan.looks_secret(line))


@given(root=st.sampled_from(ROOTS), at=st.integers(min_value=1), char=st.sampled_from(INVISIBLE), value=ident)
@settings(max_examples=300, deadline=None)
def test_an_invisible_character_inside_the_key_hides_nothing(root, at, char, value):
    cut = at % len(root)
    line = f"{root[:cut]}{char}{root[cut:]}={value}"
    assert secretscan.looks_secret(line) is not None, ascii(line)


@pytest.mark.parametrize("line", ["SECRET_KEY=abcdef123456", 'secret_key = "abcdef123456"', "private_key=abcdef123456",
                                  "access_key=abcdef123456", "secrets=abcdef123456", "pass\u200bword=hunter22",
                                  "Authorization: Basic dXNlcjpwYXNzd29yZA==", "token=abc",
                                  "hf_" + "a1B2" * 9, "pypi-AgEIcHlwaS5vcmcCJDk4ZmE1Zjk3LWI",
                                  "SG." + "a1B2_" * 5 + "." + "c3D4-" * 8, "dapi" + "0123456789abcdef" * 2,
                                  "AccountName=x;AccountKey=" + "A1b2" * 10 + "==", "curl -u admin:hunter2 https://x",
                                  "mysql -u root -phunter2 db",
                                  "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/" + "c1D2" * 6,
                                  "ya29." + "a0Ab_" * 6, "glrt-" + "x1Y2z" * 5, "dop_v1_" + "0a" * 32,
                                  "shpat_" + "0a1b" * 8, "sq0atp-" + "A1b2-" * 5, "SK" + "0123456789abcdef" * 2,
                                  "https://acct.blob.core.windows.net/c?sv=2022&sig=" + "AbC%2Bd" * 5,
                                  '{"auths": {"ghcr.io": {"auth": "dXNlcjpnaHBfYWJjZGVmZ2hpams="}}}'])
def test_the_probe_s_lines_are_refused_in_a_checkpoint_and_nothing_is_written(repo, line):
    assert run_here("task", "start", "s", "--title", "s", cwd=repo).returncode == 0
    before, ledger = snapshot(repo), ledger_bytes(repo)
    done = run_here("checkpoint", cwd=repo, input=line + "\n", text=True)
    assert done.returncode == 10 and "looks like it carries a secret" in done.stderr, done
    assert (snapshot(repo), ledger_bytes(repo)) == (before, ledger)


@pytest.mark.parametrize("prose", ["tokenizer: sentencepiece", "max_tokens=1000", "token=ab", "token: ok",
                                   "secretary: jane", "the password reset flow", "Authorization: Basic abc",
                                   "key=value", "credential helper is set", "docker run -u 1000:1000 img",
                                   "curl -u admin https://x", "mysql -p db", "ssh -p 2222 host", "the hf_ prefix",
                                   "SKU 1234", "the sig= parameter", '"auth": "none"', "ya29 is a prefix"])
def test_one_past_the_rule_prose_and_short_values_are_not_secrets(prose):
    assert secretscan.looks_secret(prose) is None, prose


OWNER_TOKENS = ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "password=hunter22", "api_key=abc123"]


@pytest.mark.parametrize("owner", OWNER_TOKENS)
@pytest.mark.parametrize("source", ["--owner", "MAJORDOMUS_OWNER", "user.email"])
def test_an_owner_that_is_a_secret_is_refused_from_every_source_and_nothing_is_written(repo, owner, source):
    args, env = ["task", "start", "o1", "--title", "t"], {}
    if source == "--owner":
        args += ["--owner", owner]
    elif source == "MAJORDOMUS_OWNER":
        env["MAJORDOMUS_OWNER"] = owner
    else:
        git(repo, "config", "user.email", owner)
    before, ledger = snapshot(repo), ledger_bytes(repo)
    done = run_here(*args, cwd=repo, env=env, text=True)
    assert done.returncode == 10, done
    assert "the owner" in done.stderr and "looks like it carries a secret" in done.stderr
    if source != "--owner":
        assert f"(from {'MAJORDOMUS_OWNER' if source == 'MAJORDOMUS_OWNER' else 'git config user.email'})" in done.stderr
    assert (snapshot(repo), ledger_bytes(repo)) == (before, ledger)


def test_one_past_an_ordinary_owner_is_taken(repo):
    done = run_here("task", "start", "o1", "--title", "t", "--owner", "Ana Token <ana@example.com>", cwd=repo)
    assert done.returncode == 0, done
