"""Python client for the approvals control plane.

``Client`` for the worker routes, ``await_approval`` for a workflow step,
``facts_hash`` and ``verify_and_consume`` to bind an approval to one action, and
``verify_receipt`` to check a signed receipt offline. Standard library only, except
``verify_receipt`` (the ``receipts`` extra: ``cryptography``). See README.md.
"""

from ._await import Verdict, await_approval, verify_and_consume
from ._client import VERSION, Client, Retry
from ._errors import RETRYABLE_STATUSES, ApprovalRefusedError, ApprovalsError, ReceiptVerificationError
from ._jcs import FACTS_HASH_PATTERN, canonicalize, facts_hash
from ._receipt import RECEIPT_TYP, verify_receipt

__version__ = VERSION

__all__ = [
    "Client",
    "Retry",
    "Verdict",
    "await_approval",
    "verify_and_consume",
    "facts_hash",
    "canonicalize",
    "FACTS_HASH_PATTERN",
    "verify_receipt",
    "RECEIPT_TYP",
    "ApprovalsError",
    "ApprovalRefusedError",
    "ReceiptVerificationError",
    "RETRYABLE_STATUSES",
    "VERSION",
    "__version__",
]
