"""What looks like a secret (design §2a): refused in pins, task titles and objectives, checkpoint and handoff
bodies; redacted in run output, a private-key block whole (design §17).

Text majordomus keeps is injected into model context, appended to an append-only ledger and shared
through remotes; a secret that gets in cannot be taken back. The list errs on the side of refusing.
"""

from __future__ import annotations

from majordomus.lite.lazyre import LazyRe
from majordomus.lite.textrules import BIDI, INVISIBLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

_PATTERNS = (
    ("a private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    ("an AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("an AWS secret key", r"(?i:\baws_secret_access_key\s*[=:]\s*\S+)"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b"),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
    ("a Stripe key", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{30,}\b"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    ("an npm token", r"\bnpm_[A-Za-z0-9]{30,}\b"),
    ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("a Slack webhook", r"\bhooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{16,}"),
    ("a Google OAuth token", r"\bya29\.[A-Za-z0-9_-]{20,}"),
    ("a service token", r"\b(?:glrt-[A-Za-z0-9_-]{20,}|dop_v1_[a-f0-9]{64}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"
                        r"|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|SK[0-9a-f]{32})\b"),
    ("a signed URL", r"[?&]sig=[A-Za-z0-9%+/=]{20,}"),
    ("a registry credential", r"\"auth\"\s*:\s*\"[A-Za-z0-9+/]{16,}={0,2}\""),
    ("a PyPI token", r"\bpypi-AgE[A-Za-z0-9_-]{20,}"),
    ("a SendGrid key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("a Databricks token", r"\bdapi[0-9a-f]{32}\b"),
    ("an Azure account key", r"(?i:\b(?:AccountKey|SharedAccessKey)\s*=\s*[A-Za-z0-9+/]{16,}=*)"),
    # `curl -u user:pass`, `mysql -ppass`; not `docker run -u 1000:1000` (a uid and a gid)
    ("a password on a command line", r"(?:\s|^)(?:-u|--user)[ =](?!-)(?!\d+:\d+(?:\s|$))[^\s:@/]+:[^\s@/]{3,}(?=\s|$)"
                                     r"|\bmysql\b.*?\s-p[^\s-][^\s]{2,}"),
    ("an API key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}\b"),
    ("a JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("a bearer token", r"(?i:\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*)"),
    ("a password in a URL", r"(?i:\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@)"),
    ("a basic-auth credential", r"(?i:\bauthorization\s*:\s*basic\s+[A-Za-z0-9+/]{8,}=*)"),
    # The one rule of key = value secrets: a key that holds one of these words anywhere (`client_secret`,
    # `DB_PASSWORD`, `"access_token"`: no boundary before the word), followed by `_`- or `-`-joined parts
    # (`SECRET_KEY`, `token_value`; not `tokenizer`, nor `max_tokens`; `secrets` is plural too), then
    # `=` and a value of 3 characters or more, or `:` and one of 4 or more (`token: ok` is prose). Prose
    # about a token or a password reset has no `=` or `:` and a value right after the word.
    ("a password or secret", r"(?i:(?:password|passwd|passphrase|pwd|secrets?|token|credentials?|api[_-]?key"
                             r"|private[_-]?key|access[_-]?key)(?:[_-][a-z0-9]+)*"
                             r"[\"']?\s*(?:=\s*[\"']?[^\s\"']{3,}|:\s*[\"']?[^\s\"']{4,}))"),
)
_SECRET = LazyRe("|".join(f"(?:{pattern})" for _, pattern in _PATTERNS))


# What a reader does not see (the text rule's invisible and bidi characters): removed before the scan, so
# that `password=` with a zero-width space inside is the `password=` it displays as.
_UNSEEN = LazyRe(f"[{BIDI}{INVISIBLE}]")


def _folded(text: str) -> str:
    """`text` as the patterns see it: without the characters a reader does not see, then after NFKC (a
    full-width `ｇｈｐ_…` is the `ghp_…` it displays as)."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFKC", str(_UNSEEN.sub("", text)))


def checked(field: str, value: str, *, source: str | None = None, hint: str) -> str:
    """`value` when it is a one-line field (the text rule) that carries no secret, else a refusal (exit
    10) naming the field, its source and the kind: an owner is stored in every record and synced."""
    from majordomus.lite import textrules

    textrules.checked(field, value, source=source, hint=hint)
    what = looks_secret(value)
    if what is None:
        return value
    from majordomus.errors import Refused

    where = f" (from {source})" if source else ""
    raise Refused(f"the {field}{where} looks like it carries a secret ({what}); nothing was written",
                  f"the {field} is stored in every record and goes out with `sync push`: never a secret; {hint}")


def looks_secret(text: str) -> str | None:
    """What kind of secret `text` seems to hold (`an AWS access key`, …), or None."""
    text = _folded(text)
    if not _SECRET.search(text):
        return None
    import re

    for what, pattern in _PATTERNS:
        if re.search(pattern, text):
            return what
    return "a secret"


def first_secret_line(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line number from 1, kind) of the first line of a body that looks like it carries a secret, or None.
    One pass over the whole text decides the common case; only a body that matches is walked line by line."""
    if not _SECRET.search(_folded("\n".join(lines))):
        return None
    for number, line in enumerate(lines, 1):
        what = looks_secret(line)
        if what is not None:
            return number, what
    return None


# A PEM private-key block, `-----BEGIN … PRIVATE KEY-----` to `-----END … PRIVATE KEY-----`, or an
# OpenPGP one (`-----BEGIN PGP PRIVATE KEY BLOCK-----` … `-----END PGP PRIVATE KEY BLOCK-----`).
_KEY_EDGE = LazyRe(r"-----(BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
REDACTED = "[redacted]"


def key_open_after(data: bytes, inside: bool) -> bool:
    """Whether a private-key block is still open after `data`, given whether one was open before it: the
    state a stream of output carries past the lines it does not keep."""
    edges = _KEY_EDGE.findall(data.decode("latin-1"))  # the markers are ASCII: any byte maps to one character
    return (edges[-1] == "BEGIN") if edges else inside


def redact_key_blocks(lines: Sequence[str], inside: bool = False) -> list[str]:
    """`lines` with every line of a private-key block, from its BEGIN line to its END line, replaced by
    `[redacted]` — a block that began before the first line (`inside`) or never ends included."""
    out = []
    for line in lines:
        edges = _KEY_EDGE.findall(line)
        if edges:
            inside = edges[-1] == "BEGIN"
            out.append(REDACTED)
        else:
            out.append(REDACTED if inside else line)
    return out
