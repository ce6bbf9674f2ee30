"""The same API for asyncio code: each call runs the synchronous client in a worker
thread (``asyncio.to_thread``), so an event loop is never blocked by a long poll.

Cancelling a task stops waiting for its answer; the HTTP request already sent finishes
in its thread (a long poll ends within its ``max_wait_s``/``poll_seconds``). The decision
stays open either way, and calling ``await_approval`` again resumes it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

from ._await import Verdict
from ._await import await_approval as _await_approval
from ._await import verify_and_consume as _verify_and_consume
from ._client import Client

__all__ = ["AsyncClient", "await_approval", "verify_and_consume"]


class AsyncClient:
    """``Client`` with ``async`` methods. ``AsyncClient(base_url, api_key, **options)``
    takes the options of ``Client``; ``.sync`` is the underlying ``Client``."""

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        self.sync = Client(base_url, api_key, **options)

    async def request_decision(self, **props: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(lambda: self.sync.request_decision(**props))

    async def get(self, decision_id: str) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.get, decision_id)

    async def list(self, *, status: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return await asyncio.to_thread(lambda: self.sync.list(status=status, limit=limit))

    async def wait(self, decision_id: str, max_wait_s: float = 30) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.wait, decision_id, max_wait_s)

    async def verify(self, decision_id: str, **refs: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(lambda: self.sync.verify(decision_id, **refs))

    async def consume(self, decision_id: str, consumer: str, **refs: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(lambda: self.sync.consume(decision_id, consumer, **refs))

    async def cancel(self, decision_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.cancel, decision_id, note)

    async def receipt(self, decision_id: str) -> str:
        return await asyncio.to_thread(self.sync.receipt, decision_id)

    async def jwks(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.jwks)


async def await_approval(client: AsyncClient, *, external_run_id: str, step_ref: str, **options: Any) -> Verdict:
    """``approvals.await_approval`` for asyncio (same arguments)."""
    return await asyncio.to_thread(lambda: _await_approval(client.sync, external_run_id=external_run_id, step_ref=step_ref, **options))


async def verify_and_consume(client: AsyncClient, decision_id: str, *, consumer: str, **refs: Any) -> Dict[str, Any]:
    """``approvals.verify_and_consume`` for asyncio (same arguments)."""
    return await asyncio.to_thread(lambda: _verify_and_consume(client.sync, decision_id, consumer=consumer, **refs))
