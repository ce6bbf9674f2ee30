"""Against the real stack, started by the jest test that runs these
(shared/client-python/test/python-client.int.test.ts), through environment variables:
APPROVALS_TEST_URL, APPROVALS_TEST_API_KEY, APPROVALS_TEST_REVIEWER (an approver's email)
and APPROVALS_TEST_REVIEWER_TOKEN (that reviewer's session, to vote as a human would)."""

import asyncio
import json
import os
import threading
import time
import unittest
import urllib.request
import uuid
from typing import Any, Dict

from approvals import (
    ApprovalRefusedError,
    ApprovalsError,
    Client,
    ReceiptVerificationError,
    await_approval,
    facts_hash,
    verify_and_consume,
    verify_receipt,
)
from approvals.aio import AsyncClient

ENV = ("APPROVALS_TEST_URL", "APPROVALS_TEST_API_KEY", "APPROVALS_TEST_REVIEWER", "APPROVALS_TEST_REVIEWER_TOKEN")


def uniq(label: str) -> str:
    return "%s-%s" % (label, uuid.uuid4().hex[:12])


class LiveTest(unittest.TestCase):
    url: str
    key: str
    reviewer: str
    token: str
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        missing = [k for k in ENV if not os.environ.get(k)]
        if missing:
            raise RuntimeError("these tests run against the real stack: run them through `npm test -- client-python` (missing %s)" % ", ".join(missing))
        cls.url, cls.key, cls.reviewer, cls.token = (os.environ[k] for k in ENV)
        cls.client = Client(cls.url, cls.key)

    def vote(self, decision_id: str, decision: str, note: str) -> None:
        """A reviewer's vote through the reviewer route, as the inbox sends it."""
        req = urllib.request.Request(
            "%s/v1/decisions/%s/decide" % (self.url, decision_id),
            data=json.dumps({"decision": decision, "note": note}).encode(),
            headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as res:
            assert res.status == 200, res.status

    def vote_once_open(self, decision: str, note: str) -> Any:
        """An on_opened callback that votes from another thread while await_approval waits."""
        errors: list = []

        def on_opened(reply: Dict[str, Any]) -> None:
            def later() -> None:
                try:
                    time.sleep(0.2)
                    self.vote(reply["decisionId"], decision, note)
                except Exception as err:  # reported by the test below
                    errors.append(err)

            threading.Thread(target=later, daemon=True).start()

        return on_opened, errors

    def test_ask_wait_verify_consume_once_and_check_the_receipt(self) -> None:
        facts = {"action": "refund", "order": "ord_1", "amount": {"value": 1200.5, "currency": "EUR"}, "note": "Z\u00fcrich \u2713"}
        on_opened, errors = self.vote_once_open("approve", "go ahead")
        verdict = await_approval(
            self.client,
            external_run_id=uniq("run"),
            step_ref="approve-refund",
            approvers=[self.reviewer],
            facts=facts,
            workflow_ref="wf-refunds",
            context={"title": "Refund 1,200.50 EUR", "ai_reasoning": "The order arrived broken.", "data": {"order_id": "ord_1"}},
            poll_seconds=5,
            on_opened=on_opened,
        )
        self.assertEqual(errors, [])
        self.assertTrue(verdict)
        self.assertEqual((verdict.approved, verdict.decided_by, verdict.note, verdict.status), (True, self.reviewer, "go ahead", "APPROVED"))
        decision_id = verdict.decision_id
        assert decision_id is not None

        d = self.client.get(decision_id)
        self.assertEqual(d["factsHash"], facts_hash(facts))
        self.assertEqual(d["context"]["aiReasoning"], "The order arrived broken.")
        self.assertEqual(d["context"]["data"], {"order_id": "ord_1"})

        # Edited facts are refused, and nothing is spent.
        self.assertEqual(self.client.verify(decision_id, facts={**facts, "amount": 9999})["reason"], "facts_mismatch")
        with self.assertRaises(ApprovalRefusedError) as edited:
            verify_and_consume(self.client, decision_id, consumer="refund-worker", facts={**facts, "amount": 9999})
        self.assertEqual(edited.exception.reason, "facts_mismatch")

        consumed = verify_and_consume(self.client, decision_id, consumer="refund-worker", facts=facts, workflow_ref="wf-refunds")
        self.assertTrue(consumed)
        self.assertEqual((consumed["consumed"], consumed["consumer"]), (True, "refund-worker"))
        # The same consumer again (a retry after a crash) is answered, not refused.
        again = verify_and_consume(self.client, decision_id, consumer="refund-worker", facts=facts)
        self.assertEqual((again["consumed"], again.get("alreadyConsumed")), (True, True))
        # Anyone else: refused, the approval is spent.
        with self.assertRaises(ApprovalRefusedError) as spent:
            verify_and_consume(self.client, decision_id, consumer="another-worker", facts=facts)
        self.assertEqual((spent.exception.reason, spent.exception.status), ("consumed", 409))
        self.assertEqual(self.client.consume(decision_id, "another-worker", facts=facts)["consumed"], False)

        jws = self.client.receipt(decision_id)
        jwks = self.client.jwks()
        payload = verify_receipt(jws, jwks, facts_hash=facts_hash(facts))
        self.assertEqual((payload["sub"], payload["status"], payload["factsHash"]), (decision_id, "APPROVED", facts_hash(facts)))
        self.assertEqual([(v["voter"], v["decision"]) for v in payload["votes"]], [(self.reviewer, "approve")])
        self.assertEqual(verify_receipt(jws, jwks_url=self.url + "/.well-known/jwks.json", issuer=payload["iss"]), payload)

        h, p, s = jws.split(".")
        i = len(p) // 2
        changed = ".".join([h, p[:i] + ("B" if p[i] == "A" else "A") + p[i + 1 :], s])
        refusals = {
            "invalid_signature": lambda: verify_receipt(changed, jwks),
            "facts_mismatch": lambda: verify_receipt(jws, jwks, facts_hash=facts_hash({**facts, "amount": 1})),
            "wrong_issuer": lambda: verify_receipt(jws, jwks, issuer="https://elsewhere.example"),
            "unknown_key": lambda: verify_receipt(jws, {"keys": []}),
            "malformed": lambda: verify_receipt("not.a.jws", jwks),
        }
        for code, call in refusals.items():
            with self.subTest(code):
                with self.assertRaises(ReceiptVerificationError) as refused:
                    call()
                self.assertEqual(refused.exception.code, code)

    def test_a_rejection_is_not_approved_and_cannot_be_consumed(self) -> None:
        on_opened, errors = self.vote_once_open("reject", "too much")
        verdict = await_approval(
            self.client, external_run_id=uniq("run"), step_ref="s", approvers=[self.reviewer], facts={"a": 1}, poll_seconds=5, on_opened=on_opened
        )
        self.assertEqual(errors, [])
        self.assertFalse(verdict)
        self.assertEqual((verdict.approved, verdict.status, verdict.note), (False, "REJECTED", "too much"))
        assert verdict.decision_id is not None
        with self.assertRaises(ApprovalRefusedError) as refused:
            verify_and_consume(self.client, verdict.decision_id, consumer="w", facts={"a": 1})
        self.assertEqual(refused.exception.reason, "not_approved")

    def test_the_long_poll_answers_pending_when_the_wait_ends_and_the_same_run_step_is_the_same_decision(self) -> None:
        run = uniq("run")
        first = self.client.request_decision(external_run_id=run, step_ref="s", approvers=[self.reviewer])
        self.assertEqual((first["approvalNeeded"], first["reason"], first["httpStatus"]), (True, "created", 201))
        again = self.client.request_decision(external_run_id=run, step_ref="s", approvers=[self.reviewer])
        self.assertEqual((again["decisionId"], again["reason"], again["httpStatus"]), (first["decisionId"], "existing", 200))
        self.assertEqual(self.client.wait(first["decisionId"], 1)["status"], "PENDING")
        with self.assertRaises(ApprovalsError) as pending:
            self.client.receipt(first["decisionId"])
        self.assertEqual((pending.exception.status, pending.exception.code), (409, "not_resolved"))

    def test_errors_carry_the_api_code_and_status(self) -> None:
        with self.assertRaises(ApprovalsError) as missing:
            self.client.get("dec_does_not_exist")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))
        with self.assertRaises(ApprovalsError) as unknown:
            self.client.request_decision(external_run_id=uniq("run"), step_ref="s", policy="no-such-policy")
        self.assertEqual((unknown.exception.status, unknown.exception.code, unknown.exception.retryable), (422, "unknown_policy", False))
        with self.assertRaises(ApprovalsError) as bad_key:
            Client(self.url, "ak_not_a_key").get("dec_1")
        self.assertEqual(bad_key.exception.status, 401)

    def test_the_asyncio_client(self) -> None:
        async def main() -> Dict[str, Any]:
            client = AsyncClient(self.url, self.key)
            opened = await client.request_decision(external_run_id=uniq("run"), step_ref="s", approvers=[self.reviewer])
            return await client.get(opened["decisionId"])

        self.assertEqual(asyncio.run(main())["status"], "PENDING")


if __name__ == "__main__":
    unittest.main()
