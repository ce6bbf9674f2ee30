"""The errors the client raises: one ``ApprovalsError`` for every failed call."""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["ApprovalsError", "ApprovalRefusedError", "ReceiptVerificationError", "RETRYABLE_STATUSES"]

#: HTTP statuses worth retrying: rate limit and gateway/service unavailability.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


class ApprovalsError(Exception):
    """A non-2xx answer (or no answer at all) from the approvals API.

    ``status`` is the HTTP status, 0 when no answer came back (``code`` is then
    ``network_error`` or ``timeout``); ``code`` is the API's ``error`` code
    (``unknown_policy``, ``not_found``, ...); ``body`` the parsed error body;
    ``retry_after`` the server's ``Retry-After`` in seconds, when it sent one.
    ``retryable`` is true for 429, 502, 503, 504, network errors and timeouts; any other
    4xx is a request or configuration problem the same request will hit again.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        body: Any = None,
        retryable: Optional[bool] = None,
        retry_after: Optional[float] = None,
        method: Optional[str] = None,
        path: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.body = body
        self.retryable = (status == 0 or status in RETRYABLE_STATUSES) if retryable is None else retryable
        self.retry_after = retry_after
        self.method = method
        self.path = path

    @property
    def is_configuration_error(self) -> bool:
        """A 4xx other than 408/429: the request or the setup is wrong; retrying will not help."""
        return 400 <= self.status < 500 and self.status not in (408, 429)

    def __repr__(self) -> str:
        return "%s(status=%d, code=%r, message=%r)" % (type(self).__name__, self.status, self.code, self.message)


class ApprovalRefusedError(ApprovalsError):
    """verify/consume refused the approval: the caller must not act.

    ``reason`` (also ``code``): ``not_approved``, ``facts_mismatch``,
    ``workflow_mismatch``, ``step_mismatch``, ``consumed`` (spent by another consumer),
    ``facts_required`` or ``not_found``.
    """

    def __init__(self, decision_id: str, reason: str, *, status: int, body: Any = None, message: Optional[str] = None) -> None:
        super().__init__(
            message or "approval %s refused: %s" % (decision_id, reason),
            status=status,
            code=reason,
            body=body,
            retryable=False,
        )
        self.reason = reason
        self.decision_id = decision_id


class ReceiptVerificationError(Exception):
    """A receipt was refused. ``code``: ``invalid_signature``, ``unknown_key``,
    ``malformed``, ``facts_mismatch``, ``wrong_issuer`` or ``keys_unavailable``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
