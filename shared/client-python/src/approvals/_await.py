"""``await_approval`` for a workflow step and ``verify_and_consume`` right before acting
(the TypeScript client's ``awaitApproval`` and ``verifyAndConsume``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, TypeVar

from ._client import Client, decision_body, resolve_facts_hash, retry_delay
from ._errors import ApprovalRefusedError, ApprovalsError

__all__ = ["Verdict", "await_approval", "verify_and_consume"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Verdict:
    """The outcome of ``await_approval``.

    ``approved`` is true only for APPROVED (or when no approval was needed); REJECTED,
    EXPIRED and CANCELLED are false. ``approval_needed`` is false when the policy gate
    answered that no approval is needed: then there is no decision (``decision_id`` and
    ``status`` are None) and nothing to consume.
    """

    approved: bool
    decision_id: Optional[str]
    decided_by: Optional[str]
    note: Optional[str]
    status: Optional[str]
    #: The approved text: the reviewer's edit if any, otherwise the proposed output.
    output: Any = None
    #: A typed answer (select, text), when the decision asked for one.
    response_value: Any = None
    approval_needed: bool = True
    #: The decision as last read back (``None`` when no approval was needed).
    decision: Optional[Dict[str, Any]] = None

    def __bool__(self) -> bool:
        return self.approved


def _retrier(initial: float, cap: float, max_attempts: Optional[int]) -> Callable[[Callable[[], _T]], _T]:
    def run(fn: Callable[[], _T]) -> _T:
        attempt = 1
        while True:
            try:
                return fn()
            except ApprovalsError as err:
                if not err.retryable or (max_attempts is not None and attempt >= max_attempts):
                    raise
                time.sleep(retry_delay(attempt, initial, cap, err.retry_after))
                attempt += 1

    return run


def await_approval(
    client: Client,
    *,
    external_run_id: str,
    step_ref: str,
    poll_seconds: float = 30,
    on_opened: Optional[Callable[[Dict[str, Any]], None]] = None,
    max_attempts: Optional[int] = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    **props: Any,
) -> Verdict:
    """Opens a decision for a workflow step and blocks until its verdict.

    ``props`` are the other request properties in snake case: ``policy`` (the policy
    then owns approvers, quorum and expiry), or ``approvers`` (+ ``timeout_sec``) for an
    ad-hoc decision; ``context``, ``facts`` (sent as ``facts_hash(facts)``) or
    ``facts_hash``, ``workflow_ref``, ``proposed_output``, ``response_spec``, ...;
    ``engine`` defaults to ``api``.

    * Idempotent: the same ``external_run_id`` + ``step_ref`` is the same decision, so a
      worker that crashed and runs the step again resumes waiting on it.
    * Long-polls (``poll_seconds`` per request, 1 to 120) until it is no longer PENDING.
    * Retryable failures (429, 502, 503, 504, lost connections, timeouts) are retried
      with capped exponential backoff (``initial_delay``, ``max_delay``; without end
      unless ``max_attempts``); any other 4xx (``unknown_policy``,
      ``field_owned_by_policy``, 401, 403, ...) is a configuration error, raised at once.
    * The same run/step opened earlier for other facts raises ``ApprovalsError``
      ``facts_mismatch``: use a new ``step_ref`` for an edited action.

    ``on_opened(reply)`` is called once the decision is open (or found), before waiting.
    """
    if not external_run_id or not step_ref:
        raise TypeError("await_approval: external_run_id and step_ref are required")
    body = decision_body(dict(props, external_run_id=external_run_id, step_ref=step_ref), who="await_approval")
    expected = body.get("factsHash")
    retry = _retrier(initial_delay, max_delay, max_attempts)
    opened = retry(lambda: client._create(body, retry=False))
    if on_opened is not None:
        on_opened(opened)
    if not opened.get("approvalNeeded") or not opened.get("decisionId"):
        return Verdict(approved=True, decision_id=None, decided_by=None, note=None, status=None, approval_needed=False)
    decision_id: str = opened["decisionId"]
    while True:
        d = retry(lambda: client._wait(decision_id, poll_seconds, retry=False))
        if expected is not None and d.get("factsHash") is not None and d.get("factsHash") != expected:
            # The same run/step was opened earlier for other facts: this approval is not for them.
            raise ApprovalsError(
                "decision %s (run %s, step %s) was opened for other facts; use a new step_ref or external_run_id for the edited action"
                % (decision_id, external_run_id, step_ref),
                status=409,
                code="facts_mismatch",
                body={"decisionId": decision_id, "factsHash": d.get("factsHash"), "expected": expected},
                retryable=False,
            )
        if d.get("status") != "PENDING":
            return Verdict(
                approved=d.get("status") == "APPROVED",
                decision_id=d.get("id", decision_id),
                decided_by=d.get("decidedBy"),
                note=d.get("note"),
                status=d.get("status"),
                output=d.get("output"),
                response_value=d.get("responseValue"),
                approval_needed=True,
                decision=d,
            )


def verify_and_consume(
    client: Client,
    decision_id: str,
    *,
    consumer: str,
    facts: Any = None,
    facts_hash: Optional[str] = None,
    workflow_ref: Optional[str] = None,
    step_ref: Optional[str] = None,
) -> Dict[str, Any]:
    """Right before acting: verifies the approval against the action's ``facts`` (and
    workflow and step, when given) and consumes it for ``consumer``.

    Returns the consume answer ``{consumed: True, consumer, consumedAt, ...}`` (with
    ``alreadyConsumed: True`` on a retry by the same consumer) only when the approval is
    spent for this consumer. Otherwise raises ``ApprovalRefusedError`` (an
    ``ApprovalsError``) with ``reason``: ``not_approved``, ``facts_mismatch``,
    ``workflow_mismatch``, ``step_mismatch``, ``consumed`` (by another consumer) or
    ``not_found`` — then do not act.
    """
    h = resolve_facts_hash(facts, facts_hash, "verify_and_consume")
    refs: Dict[str, Any] = {"facts_hash": h, "workflow_ref": workflow_ref, "step_ref": step_ref}
    v = client.verify(decision_id, **refs)
    # `consumed` may be this consumer's own earlier consume (a retry): consume tells.
    if not v.get("valid") and v.get("reason") != "consumed":
        reason = v.get("reason") or "not_approved"
        raise ApprovalRefusedError(decision_id, reason, status=404 if reason == "not_found" else 409, body=v, message=v.get("message"))
    c = client.consume(decision_id, consumer, **refs)
    if not c.get("consumed"):
        reason = c.get("reason") or "not_approved"
        raise ApprovalRefusedError(decision_id, reason, status=404 if reason == "not_found" else 409, body=c, message=c.get("message"))
    return c
