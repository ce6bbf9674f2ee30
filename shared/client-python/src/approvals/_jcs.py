"""RFC 8785 (JCS) canonical JSON and ``facts_hash``, byte for byte as the TypeScript
client and the server compute them (``shared/client/src/jcs.ts``).

Python and JavaScript disagree on JSON in three places, and each is settled the
JavaScript way, because the server is JavaScript and a hash must not depend on the
language that computed it:

* **Numbers.** JavaScript has one number type, the IEEE double. An ``int`` is converted
  to the nearest double first (``2**53 + 1`` hashes as ``2**53``, like
  ``JSON.parse("9007199254740993")``), then every number is written as ECMAScript's
  ``Number.prototype.toString`` writes it: ``1e+21`` but ``100000000000000000000``,
  ``1e-7`` but ``0.000001``, ``1`` for ``1.0``, ``0`` for ``-0.0``.
* **Key order.** Keys are sorted by UTF-16 code units, not by code points: a key with an
  emoji (a surrogate pair starting 0xD83D) sorts before U+FB33.
* **Strings.** Escaped as ``JSON.stringify`` escapes them (``\\n``, ``\\u001f``,
  non-ASCII as is); a lone surrogate is refused (RFC 8785 needs well-formed Unicode).

What JSON cannot carry is refused with ``TypeError`` or ``ValueError`` rather than
guessed: NaN and infinities, ints beyond the double range, non-string keys, and values
that are not ``None``, ``bool``, ``int``, ``float``, ``str``, a list, a tuple or a mapping.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any, List, Mapping, Set

__all__ = ["canonicalize", "facts_hash", "FACTS_HASH_PATTERN", "number_to_string"]

#: 64 lowercase hex characters: the shape of a facts hash.
FACTS_HASH_PATTERN = re.compile(r"^[0-9a-f]{64}$")

#: Far deeper than any facts object (as the TypeScript client); cycles are refused apart.
_MAX_DEPTH = 1000

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_char(m: "re.Match[str]") -> str:
    c = m.group(0)
    return _ESCAPES.get(c) or "\\u%04x" % ord(c)


def _string(s: str) -> str:
    # A Python str holds code points; a surrogate in it is always a lone one (a pair
    # decoded from JSON is already one code point), which UTF-8 cannot even encode.
    if _SURROGATE.search(s):
        raise ValueError("canonicalize: string has a lone surrogate (RFC 8785 requires well-formed Unicode)")
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def _utf16_key(s: str) -> bytes:
    # Big-endian UTF-16 compares byte for byte in the order of its 16-bit code units.
    return s.encode("utf-16-be")


def number_to_string(x: "int | float") -> str:
    """``Number.prototype.toString`` of the double nearest to ``x`` (ECMA-262 Number::toString)."""
    if isinstance(x, bool):
        raise TypeError("canonicalize: a bool is not a number")
    try:
        f = float(x)
    except OverflowError:
        raise ValueError("canonicalize: integer too large for a JSON number (beyond the double range)") from None
    if not math.isfinite(f):
        raise ValueError("canonicalize: non-finite number")
    if f == 0:
        return "0"  # and -0 too
    if f < 0:
        return "-" + number_to_string(-f)
    # repr gives the shortest digits that round-trip (as ECMAScript asks for), nearest
    # to the value among those; only the layout differs from JavaScript's.
    r = repr(f)
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    digits = ip + fp
    n = len(ip) + (int(exp) if exp else 0)  # the value is 0.digits × 10^n
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = digits[0] if k == 1 else digits[0] + "." + digits[1:]
    return head + "e" + sign + str(abs(e))


def _write(value: Any, out: List[str], depth: int, path: Set[int]) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("canonicalize: nested deeper than %d levels" % _MAX_DEPTH)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (int, float)):
        out.append(number_to_string(value))
    elif isinstance(value, Mapping):
        _enter(value, path)
        for k in value:
            if not isinstance(k, str):
                raise TypeError("canonicalize: object keys must be str, not %s" % type(k).__name__)
        out.append("{")
        for i, k in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(value[k], out, depth + 1, path)
        out.append("}")
        path.discard(id(value))
    elif isinstance(value, (list, tuple)):
        _enter(value, path)
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _write(v, out, depth + 1, path)
        out.append("]")
        path.discard(id(value))
    else:
        raise TypeError("canonicalize: %s is not JSON" % type(value).__name__)


def _enter(container: Any, path: Set[int]) -> None:
    if id(container) in path:
        raise ValueError("canonicalize: the value contains itself (cyclic)")
    path.add(id(container))


def canonicalize(value: Any) -> str:
    """The RFC 8785 canonical JSON text of ``value`` (keys sorted at every level, no white space)."""
    out: List[str] = []
    try:
        _write(value, out, 0, set())
    except RecursionError:
        raise ValueError("canonicalize: nested too deep for this interpreter's recursion limit") from None
    return "".join(out)


def facts_hash(facts: Any) -> str:
    """SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of ``facts``: the value a
    decision is bound to when opening, verifying and consuming it."""
    return hashlib.sha256(canonicalize(facts).encode("utf-8")).hexdigest()
