"""``verify_receipt``: check a signed receipt offline (EdDSA / Ed25519 compact JWS against
the deployment's JWKS), as the TypeScript client's ``verifyReceipt`` does.

Needs the optional ``cryptography`` package (``pip install 'approvals-client[receipts]'``);
the rest of the client runs on the standard library alone.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Union

from ._errors import ReceiptVerificationError

__all__ = ["verify_receipt", "RECEIPT_TYP"]

#: The JWS header ``typ`` of a receipt.
RECEIPT_TYP = "approval-receipt+jwt"

_STATUSES = ("APPROVED", "REJECTED", "EXPIRED", "CANCELLED")


def _b64url(part: str, what: str) -> bytes:
    if not part or any(c in part for c in "+/="):
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: %s is not base64url" % what)
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: %s is not base64url" % what) from None


def _load_keys(jwks: Union[Mapping[str, Any], str, bytes, None], jwks_url: Optional[str]) -> List[Mapping[str, Any]]:
    if jwks is None and jwks_url is None:
        raise TypeError("verify_receipt: give jwks (the public keys) or jwks_url")
    if jwks is None:
        try:
            with urllib.request.urlopen(urllib.request.Request(str(jwks_url), headers={"Accept": "application/json"}), timeout=30) as res:
                jwks = json.loads(res.read().decode("utf-8"))
        except (OSError, ValueError) as err:
            raise ReceiptVerificationError("keys_unavailable", "the signing keys could not be fetched: %s" % err) from err
    if isinstance(jwks, (str, bytes)):
        jwks = json.loads(jwks)
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(keys, list):
        raise ReceiptVerificationError("keys_unavailable", "the keys are not a JWKS ({\"keys\": [...]})")
    return [k for k in keys if isinstance(k, Mapping)]


def _check_payload(p: Any) -> Dict[str, Any]:
    problems: List[str] = []

    def need(key: str, ok: bool) -> None:
        if not ok:
            problems.append(key)

    if not isinstance(p, dict):
        raise ReceiptVerificationError("malformed", "the receipt's payload is not a receipt: payload")
    for k in ("iss", "sub", "org", "createdAt", "resolvedAt"):
        need(k, isinstance(p.get(k), str))
    need("status", p.get("status") in _STATUSES)
    need("factsHash", p.get("factsHash") is None or isinstance(p.get("factsHash"), str))
    need("requestedBy", "requestedBy" in p and (p["requestedBy"] is None or isinstance(p["requestedBy"], str)))
    need("consumedBy", "consumedBy" not in p or isinstance(p["consumedBy"], str))
    need("iat", isinstance(p.get("iat"), int) and not isinstance(p.get("iat"), bool))
    pol = p.get("policy", "missing")
    need(
        "policy",
        pol is None
        or (isinstance(pol, dict) and isinstance(pol.get("key"), str) and isinstance(pol.get("version"), int) and isinstance(pol.get("versionId"), str)),
    )
    votes = p.get("votes")
    need("votes", isinstance(votes, list))
    for i, v in enumerate(votes if isinstance(votes, list) else []):
        ok = (
            isinstance(v, dict)
            and isinstance(v.get("voter"), str)
            and v.get("decision") in ("approve", "reject")
            and isinstance(v.get("surface"), str)
            and isinstance(v.get("at"), str)
            and ("note" not in v or isinstance(v["note"], str))
        )
        need("votes.%d" % i, ok)
    if problems:
        raise ReceiptVerificationError("malformed", "the receipt's payload is not a receipt: %s" % ", ".join(problems))
    return p


def verify_receipt(
    jws: str,
    jwks: Union[Mapping[str, Any], str, bytes, None] = None,
    *,
    jwks_url: Optional[str] = None,
    facts_hash: Optional[str] = None,
    issuer: Optional[str] = None,
) -> Dict[str, Any]:
    """Checks a receipt and returns its payload ``{iss, sub, org, status, factsHash,
    policy, votes, requestedBy, createdAt, resolvedAt, consumedBy?, iat}``.

    ``jwks`` is the signer's public keys (a copy of ``/.well-known/jwks.json``, as a dict
    or JSON text): fully offline; or give ``jwks_url`` to fetch them. Checks EdDSA only,
    ``typ`` approval-receipt+jwt, a ``kid`` found in the keys, the Ed25519 signature and
    the payload's shape; with ``facts_hash``, that it is the receipt for those facts; with
    ``issuer``, the deployment. No expiry: a receipt is a record. Raises
    ``ReceiptVerificationError`` with ``code`` ``invalid_signature``, ``unknown_key``,
    ``malformed``, ``facts_mismatch``, ``wrong_issuer`` or ``keys_unavailable``.
    """
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("verify_receipt needs the cryptography package: pip install 'approvals-client[receipts]'") from err

    keys = _load_keys(jwks, jwks_url)
    parts = jws.strip().split(".") if isinstance(jws, str) else []
    if len(parts) != 3:
        raise ReceiptVerificationError("malformed", "the receipt is not a compact JWS (three dot-separated parts)")
    h64, p64, s64 = parts
    try:
        header = json.loads(_b64url(h64, "the header").decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: the header is not JSON") from None
    if not isinstance(header, dict):
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: the header is not an object")
    if header.get("alg") != "EdDSA":
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: alg %r is not EdDSA" % header.get("alg"))
    typ = str(header.get("typ", "")).lower()
    if typ.startswith("application/"):
        typ = typ[len("application/") :]
    if typ != RECEIPT_TYP:
        raise ReceiptVerificationError("malformed", "the receipt is not a receipt: typ %r is not %s" % (header.get("typ"), RECEIPT_TYP))
    if header.get("crit") is not None:
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: unsupported crit header")
    kid = header.get("kid")
    candidates = [
        k
        for k in keys
        if k.get("kty") == "OKP"
        and k.get("crv") == "Ed25519"
        and k.get("alg", "EdDSA") == "EdDSA"
        and k.get("use", "sig") == "sig"
        and (kid is None or k.get("kid") == kid)
    ]
    if not candidates:
        raise ReceiptVerificationError("unknown_key", "the receipt was signed with a key not in the given keys")
    signature = _b64url(s64, "the signature")
    signed = (h64 + "." + p64).encode("ascii")
    for k in candidates:
        try:
            public = Ed25519PublicKey.from_public_bytes(_b64url(str(k.get("x", "")), "the key"))
            public.verify(signature, signed)
            break
        except (InvalidSignature, ValueError, ReceiptVerificationError):
            continue
    else:
        raise ReceiptVerificationError("invalid_signature", "the receipt signature does not verify")
    try:
        payload = json.loads(_b64url(p64, "the payload").decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ReceiptVerificationError("malformed", "the receipt is not a valid JWS: the payload is not JSON") from None
    if issuer is not None and (not isinstance(payload, dict) or payload.get("iss") != issuer):
        got = payload.get("iss") if isinstance(payload, dict) else None
        raise ReceiptVerificationError("wrong_issuer", "the receipt was issued by another deployment (%s, not %s)" % (got, issuer))
    checked = _check_payload(payload)
    if facts_hash is not None and checked.get("factsHash") != facts_hash.lower():
        raise ReceiptVerificationError("facts_mismatch", "the receipt is for facts %s, not %s" % (checked.get("factsHash") or "(none)", facts_hash))
    return checked
