"""``Client``: the worker routes of the approvals API over the standard library's HTTP.

The same behaviour as the TypeScript ``ApprovalsClient`` (``shared/client/src/client.ts``):
an API key as bearer token, JSON in and out, ``ApprovalsError`` for every non-2xx answer,
and retries with capped exponential backoff of the idempotent calls after a 429, 502,
503, 504, a lost connection or a timeout.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, TypeVar, Union

from ._errors import ApprovalsError
from ._jcs import FACTS_HASH_PATTERN, facts_hash as _hash

__all__ = ["Client", "Retry", "VERSION"]

VERSION = "0.1.0"

_T = TypeVar("_T")
JSON = Dict[str, Any]

_DEFAULT_TIMEOUT = 30.0
#: After the wait route answered 501/404, poll instead for this long before probing it again.
_WAIT_ROUTE_RETRY_S = 300.0
_WAIT_FALLBACK_POLL_S = 1.0


@dataclass(frozen=True)
class Retry:
    """Retries of idempotent calls (reads, create, wait, verify, consume) after a 429, 502,
    503, 504, a lost connection or a timeout, honouring ``Retry-After``."""

    #: Attempts in all, the first included.
    max_attempts: int = 6
    #: First backoff delay in seconds, doubling per attempt, half of it random.
    initial_delay: float = 0.25
    #: Cap of one delay, in seconds.
    max_delay: float = 5.0
    #: No retry starts once this many seconds have passed since the first attempt.
    max_elapsed: float = 30.0


def retry_delay(attempt: int, initial: float, cap: float, retry_after: Optional[float] = None) -> float:
    """The one backoff: exponential from ``initial`` (attempt 1 is the first retry), capped,
    half of it random so many clients do not retry in step; never shorter than the
    server's ``Retry-After`` (itself capped)."""
    backoff = min(cap, initial * 2 ** max(0, attempt - 1))
    return max(backoff / 2 + random.random() * (backoff / 2), min(retry_after or 0.0, cap))


def _parse_retry_after(v: Optional[str]) -> Optional[float]:
    if not v:
        return None
    try:
        s = float(v)
        return s if s >= 0 else None
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - time.time())


# Snake-case names of the request's own fields (never of the caller's data inside
# context.data, payload, extra or a tool call's args, which are sent as given).
_CONTEXT_KEYS = {"ai_reasoning": "aiReasoning", "source_url": "sourceUrl"}
_BLOCK_KEYS = {"cost_usd": "costUsd"}
_ESIGN_KEYS = {"envelope_id": "envelopeId", "account_id": "accountId", "document_url": "documentUrl"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _rename(obj: Any, table: Mapping[str, str]) -> Any:
    if not isinstance(obj, Mapping):
        return obj
    return {table.get(k, k): v for k, v in obj.items()}


def decision_body(props: Mapping[str, Any], *, who: str = "request_decision") -> JSON:
    """The body of ``POST /v1/worker/decisions`` from snake-case properties; ``facts``
    is sent as its ``facts_hash``."""
    props = dict(props)
    hashed = resolve_facts_hash(props.pop("facts", None), props.pop("facts_hash", None), who)
    body: JSON = {}
    for k, v in props.items():
        if v is None:
            continue
        body[_camel(k)] = v
    if isinstance(body.get("context"), Mapping):
        ctx = _rename(body["context"], _CONTEXT_KEYS)
        if isinstance(ctx.get("blocks"), list):
            ctx["blocks"] = [_rename(b, _BLOCK_KEYS) for b in ctx["blocks"]]
        body["context"] = ctx
    if "esign" in body:
        body["esign"] = _rename(body["esign"], _ESIGN_KEYS)
    body.setdefault("engine", "api")
    if hashed is not None:
        body["factsHash"] = hashed
    return body


def resolve_facts_hash(facts: Any, given: Optional[str], who: str) -> Optional[str]:
    if facts is not None and given is not None:
        raise TypeError("%s: pass facts or facts_hash, not both" % who)
    if facts is not None:
        return _hash(facts)
    if given is not None and not FACTS_HASH_PATTERN.match(given):
        raise ValueError("%s: facts_hash must be 64 lowercase hex characters" % who)
    return given


class Client:
    """Typed client for the worker routes (``/v1/worker/…``, authenticated by an API key).

    ``Client(base_url, api_key)``; options: ``timeout`` (seconds per request, default 30;
    long polls add their own wait on top), ``headers`` (sent with every request) and
    ``retry`` (a ``Retry``, or ``False`` for one attempt only).

    Every method returns the API's JSON as a ``dict`` (keys as the API spells them,
    ``camelCase``) and raises ``ApprovalsError`` for a non-2xx answer, except consume
    refusals, which come back as ``{"consumed": False, "reason": ...}``.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = _DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
        retry: Union[Retry, bool] = True,
    ) -> None:
        if not isinstance(base_url, str) or not base_url:
            raise TypeError("Client: base_url is required")
        if not isinstance(api_key, str) or not api_key:
            raise TypeError("Client: api_key is required")
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("Client: base_url is not an http(s) URL: %s" % base_url)
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self._headers = dict(headers or {})
        self.retry: Optional[Retry] = None if retry is False else (Retry() if retry is True else retry)
        # Until when (time.monotonic) the long-poll route is taken to be missing (an older server).
        self._wait_route_missing_until = 0.0

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

    # ------------------------------------------------------------ decisions

    def request_decision(self, **props: Any) -> JSON:
        """``POST /v1/worker/decisions``: open a decision, idempotent on
        ``external_run_id`` + ``step_ref``.

        ``props`` are the request's properties in snake case (``external_run_id``,
        ``step_ref``, ``policy``, ``approvers``, ``context``, ``facts`` or ``facts_hash``,
        ``workflow_ref``, ``timeout_sec``, ``proposed_output``, ...); ``facts`` is sent as
        ``facts_hash(facts)``; ``engine`` defaults to ``api``. Answers
        ``{approvalNeeded, decisionId, reason, status, ..., httpStatus}`` (201 created,
        200 existing)."""
        return self._create(decision_body(props))

    def _create(self, body: JSON, *, retry: bool = True) -> JSON:
        # Idempotent on (externalRunId, stepRef): a retry finds the decision the first attempt made.
        status, reply, _ = self._request("POST", "/v1/worker/decisions", body=body, idempotent=True, retry=retry)
        out = dict(reply) if isinstance(reply, dict) else {}
        out["httpStatus"] = status
        return out

    def get(self, decision_id: str) -> JSON:
        """``GET /v1/worker/decisions/{id}``: the decision as read back."""
        return self._json("GET", "/v1/worker/decisions/%s" % _seg(decision_id))

    def list(self, *, status: Optional[str] = None, limit: Optional[int] = None) -> List[JSON]:
        """``GET /v1/worker/decisions``: the agent's inbox, newest first."""
        reply = self._json("GET", "/v1/worker/decisions", query={"status": status, "limit": limit})
        decisions: List[JSON] = reply.get("decisions", [])
        return decisions

    def wait(self, decision_id: str, max_wait_s: float = 30) -> JSON:
        """``GET /v1/worker/decisions/{id}/wait``: a long poll that answers with the decision
        as soon as it is no longer PENDING, or when ``max_wait_s`` (1 to 120) has passed
        (then still PENDING: call again). Against a server without the route (501 or 404)
        it polls ``get`` every second until the same deadline instead."""
        return self._wait(decision_id, max_wait_s)

    def _wait(self, decision_id: str, max_wait_s: float, *, retry: bool = True) -> JSON:
        wait_s = min(120, max(1, int(round(max_wait_s))))
        deadline = time.monotonic() + wait_s
        if time.monotonic() >= self._wait_route_missing_until:
            try:
                _, reply, _ = self._request(
                    "GET",
                    "/v1/worker/decisions/%s/wait" % _seg(decision_id),
                    query={"timeoutSec": wait_s},
                    timeout=wait_s + self.timeout,
                    retry=retry,
                )
                self._wait_route_missing_until = 0.0
                return dict(reply)
            except ApprovalsError as err:
                if err.status not in (501, 404):
                    raise
                # 501: the server has no long poll. 404: the route or the decision is
                # missing; the plain read tells which (it raises if the decision is).
                d = self._json("GET", "/v1/worker/decisions/%s" % _seg(decision_id), retry=retry)
                self._wait_route_missing_until = time.monotonic() + _WAIT_ROUTE_RETRY_S
                if d.get("status") != "PENDING":
                    return d
        while True:
            d = self._json("GET", "/v1/worker/decisions/%s" % _seg(decision_id), retry=retry)
            left = deadline - time.monotonic()
            if d.get("status") != "PENDING" or left <= 0:
                return d
            time.sleep(min(_WAIT_FALLBACK_POLL_S, left))

    def verify(
        self,
        decision_id: str,
        *,
        facts: Any = None,
        facts_hash: Optional[str] = None,
        workflow_ref: Optional[str] = None,
        step_ref: Optional[str] = None,
    ) -> JSON:
        """``GET /v1/worker/decisions/{id}/verify``: a read-only check against the action's
        facts; always ``{valid, reason, status, ...}``, never raises for a mismatch."""
        h = resolve_facts_hash(facts, facts_hash, "verify")
        return self._json(
            "GET",
            "/v1/worker/decisions/%s/verify" % _seg(decision_id),
            query={"factsHash": h, "workflowRef": workflow_ref, "stepRef": step_ref},
        )

    def consume(
        self,
        decision_id: str,
        consumer: str,
        *,
        facts: Any = None,
        facts_hash: Optional[str] = None,
        workflow_ref: Optional[str] = None,
        step_ref: Optional[str] = None,
    ) -> JSON:
        """``POST /v1/worker/decisions/{id}/consume``: spend the approval once. Answers
        ``{consumed: True, consumer, consumedAt, alreadyConsumed?}``; a refusal (409, or
        404 ``not_found``) answers ``{consumed: False, reason, ...}`` instead of raising."""
        h = resolve_facts_hash(facts, facts_hash, "consume")
        body = {k: v for k, v in {"consumer": consumer, "factsHash": h, "workflowRef": workflow_ref, "stepRef": step_ref}.items() if v is not None}
        path = "/v1/worker/decisions/%s/consume" % _seg(decision_id)
        # Idempotent by consumer: a retry of the same consumer answers alreadyConsumed.
        status, reply, headers = self._request("POST", path, body=body, idempotent=True, accept=(404, 409))
        if status == 200 and isinstance(reply, dict):
            return dict(reply)
        if isinstance(reply, dict) and reply.get("consumed") is False and isinstance(reply.get("reason"), str):
            out: JSON = {"consumed": False, "reason": reply["reason"]}
            for k in ("decisionId", "status", "message"):
                if isinstance(reply.get(k), str):
                    out[k] = reply[k]
            return out
        raise _to_error("POST", path, status, reply, headers)

    def cancel(self, decision_id: str, note: Optional[str] = None) -> JSON:
        """``POST /v1/worker/decisions/{id}/cancel``: cancel a PENDING decision (a resolved
        one answers ``cancelled: False``). Not retried: it is not idempotent."""
        return self._json("POST", "/v1/worker/decisions/%s/cancel" % _seg(decision_id), body=None if note is None else {"note": note})

    def receipt(self, decision_id: str) -> str:
        """The signed receipt of an ended decision: a compact JWS to keep and check with
        ``verify_receipt``. A PENDING decision raises 409 ``not_resolved``."""
        reply = self._json("GET", "/v1/worker/decisions/%s/receipt" % _seg(decision_id))
        jws: str = reply["receipt"]
        return jws

    def jwks(self) -> JSON:
        """``GET /.well-known/jwks.json``: the deployment's receipt keys (keep a copy to
        check receipts offline)."""
        return self._json("GET", "/.well-known/jwks.json")

    # ------------------------------------------------------------ transport

    def _json(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None, retry: bool = True) -> JSON:
        _, reply, _ = self._request(method, path, query=query, body=body, retry=retry)
        return dict(reply) if isinstance(reply, dict) else {}

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        accept: tuple = (),
        idempotent: Optional[bool] = None,
        timeout: Optional[float] = None,
        retry: bool = True,
    ) -> "tuple[int, Any, http.client.HTTPMessage]":
        """One call with the API key; retried when idempotent (GET unless told) and the
        failure is retryable."""
        if idempotent is None:
            idempotent = method == "GET"
        attempt_once: Callable[[], "tuple[int, Any, http.client.HTTPMessage]"] = lambda: self._attempt(method, path, query, body, accept, timeout)
        r = self.retry
        if r is None or not idempotent or not retry:
            return attempt_once()
        started = time.monotonic()
        attempt = 1
        while True:
            try:
                return attempt_once()
            except ApprovalsError as err:
                if not err.retryable or attempt >= r.max_attempts or time.monotonic() - started >= r.max_elapsed:
                    raise
                time.sleep(retry_delay(attempt, r.initial_delay, r.max_delay, err.retry_after))
                attempt += 1

    def _attempt(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]],
        body: Any,
        accept: tuple,
        timeout: Optional[float],
    ) -> "tuple[int, Any, http.client.HTTPMessage]":
        url = self.base_url + path
        q = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        headers = {
            "Accept": "application/json",
            "User-Agent": "approvals-client-python/%s" % VERSION,
            **self._headers,
            "Authorization": "Bearer %s" % self._api_key,
        }
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        limit = self.timeout if timeout is None else timeout
        try:
            with urllib.request.urlopen(req, timeout=limit) as res:
                status, raw, res_headers = res.status, res.read(), res.headers
        except urllib.error.HTTPError as err:
            status, res_headers = err.code, err.headers
            try:
                raw = err.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                err.close()
        except (socket.timeout, TimeoutError) as err:
            raise _timeout(method, path, limit) from err
        except urllib.error.URLError as err:
            if isinstance(err.reason, (socket.timeout, TimeoutError)):
                raise _timeout(method, path, limit) from err
            raise ApprovalsError("%s %s: %s" % (method, path, err.reason), status=0, code="network_error", method=method, path=path) from err
        except (OSError, http.client.HTTPException) as err:
            # A connection reset or closed mid-answer: the outcome is unknown.
            raise ApprovalsError("%s %s: %s" % (method, path, err or type(err).__name__), status=0, code="network_error", method=method, path=path) from err
        reply: Any = None
        if raw:
            text = raw.decode("utf-8", errors="replace")
            try:
                reply = json.loads(text)
            except ValueError:
                reply = text
        if 200 <= status < 300 or status in accept:
            return status, reply, res_headers
        raise _to_error(method, path, status, reply, res_headers)


def _timeout(method: str, path: str, limit: float) -> ApprovalsError:
    return ApprovalsError("%s %s: no answer within %g s" % (method, path, limit), status=0, code="timeout", method=method, path=path)


def _to_error(method: str, path: str, status: int, reply: Any, headers: Any) -> ApprovalsError:
    obj = reply if isinstance(reply, dict) else {}
    code = obj["error"] if isinstance(obj.get("error"), str) else "http_%d" % status
    if isinstance(obj.get("message"), str):
        message = obj["message"]
    elif isinstance(reply, str) and reply:
        message = "%s %s: HTTP %d: %s" % (method, path, status, reply[:500])
    else:
        message = "%s %s: HTTP %d" % (method, path, status)
    retry_after = _parse_retry_after(headers.get("Retry-After") if headers is not None else None)
    return ApprovalsError(message, status=status, code=code, body=reply, retry_after=retry_after, method=method, path=path)


def _seg(s: str) -> str:
    return urllib.parse.quote(str(s), safe="")


def _query_value(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)
