"""The client's HTTP behaviour against a small local server started by the test: retries
of idempotent calls on 429/503 and lost connections, errors, and the request it sends."""

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

from approvals import ApprovalRefusedError, ApprovalsError, Client, Retry, await_approval, facts_hash, verify_and_consume

#: An answer: (status, headers, body), or None to drop the connection without one.
Answer = Optional[Tuple[int, Dict[str, str], Any]]


class ScriptedServer:
    """Answers each request with the next scripted answer (the last one repeats), and
    records what it received."""

    def __init__(self, script: List[Answer]) -> None:
        self.script = list(script)
        self.seen: List[Dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                owner.seen.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": json.loads(raw) if raw else None}
                )
                answer = owner.script.pop(0) if len(owner.script) > 1 else owner.script[0]
                if answer is None:
                    self.close_connection = True
                    self.connection.close()  # a lost connection: no status line at all
                    return
                status, headers, body = answer
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


FAST = Retry(max_attempts=4, initial_delay=0.01, max_delay=0.05)
DECISION = {"id": "dec_1", "status": "PENDING", "factsHash": None}


class TransportTest(unittest.TestCase):
    def serve(self, *script: Answer) -> Tuple[ScriptedServer, Client]:
        server = ScriptedServer(list(script))
        self.addCleanup(server.close)
        return server, Client(server.url, "ak_test", retry=FAST)

    def test_a_503_then_200_is_retried_and_answers_the_200(self) -> None:
        server, client = self.serve((503, {}, {"error": "unavailable", "message": "restarting"}), (200, {}, DECISION))
        self.assertEqual(client.get("dec_1"), DECISION)
        self.assertEqual([s["path"] for s in server.seen], ["/v1/worker/decisions/dec_1"] * 2)

    def test_429_with_retry_after_is_retried_and_the_error_carries_retry_after(self) -> None:
        server, client = self.serve((429, {"Retry-After": "0"}, {"error": "rate_limited", "message": "slow down"}), (200, {}, DECISION))
        self.assertEqual(client.get("dec_1")["id"], "dec_1")
        self.assertEqual(len(server.seen), 2)

        server2, once = self.serve((429, {"Retry-After": "7"}, {"error": "rate_limited", "message": "slow down"}))
        once.retry = None
        with self.assertRaises(ApprovalsError) as caught:
            once.get("dec_1")
        err = caught.exception
        self.assertEqual((err.status, err.code, err.retry_after, err.retryable, str(err)), (429, "rate_limited", 7.0, True, "slow down"))
        self.assertEqual(len(server2.seen), 1)

    def test_a_lost_connection_is_retried_for_an_idempotent_call(self) -> None:
        server, client = self.serve(None, (201, {}, {"approvalNeeded": True, "decisionId": "dec_1", "reason": "created"}))
        reply = client.request_decision(external_run_id="run-1", step_ref="s", approvers=["a@example.com"])
        self.assertEqual((reply["decisionId"], reply["httpStatus"]), ("dec_1", 201))
        self.assertEqual(len(server.seen), 2)

    def test_gives_up_after_max_attempts_with_the_last_failure(self) -> None:
        server, client = self.serve((503, {}, {"error": "unavailable", "message": "down"}))
        with self.assertRaises(ApprovalsError) as caught:
            client.get("dec_1")
        self.assertEqual((caught.exception.status, caught.exception.code), (503, "unavailable"))
        self.assertEqual(len(server.seen), FAST.max_attempts)

    def test_a_call_that_is_not_idempotent_is_never_retried(self) -> None:
        server, client = self.serve((503, {}, {"error": "unavailable", "message": "down"}), (200, {}, {"cancelled": True}))
        with self.assertRaises(ApprovalsError):
            client.cancel("dec_1", "no longer needed")
        self.assertEqual(len(server.seen), 1)

    def test_a_4xx_is_raised_at_once_with_code_status_and_body(self) -> None:
        body = {"error": "unknown_policy", "message": "no policy refunds", "key": "refunds"}
        server, client = self.serve((422, {}, body))
        with self.assertRaises(ApprovalsError) as caught:
            client.request_decision(external_run_id="r", step_ref="s", policy="refunds")
        err = caught.exception
        self.assertEqual((err.status, err.code, err.body, err.retryable, err.is_configuration_error), (422, "unknown_policy", body, False, True))
        self.assertEqual(len(server.seen), 1)

    def test_no_server_at_all_is_a_retryable_network_error(self) -> None:
        server = ScriptedServer([(200, {}, {})])
        url = server.url
        server.close()
        with self.assertRaises(ApprovalsError) as caught:
            Client(url, "ak_test", retry=False).get("dec_1")
        self.assertEqual((caught.exception.status, caught.exception.code, caught.exception.retryable), (0, "network_error", True))

    def test_the_request_it_sends(self) -> None:
        facts = {"amount": 120, "to": "cus_42"}
        server, client = self.serve((201, {}, {"approvalNeeded": True, "decisionId": "dec_1", "reason": "created"}))
        client.request_decision(
            external_run_id="run-1",
            step_ref="refund",
            approvers=["a@example.com"],
            timeout_sec=600,
            facts=facts,
            context={"title": "Refund", "ai_reasoning": "asked", "data": {"customer_id": "c_1"}},
        )
        sent = server.seen[0]
        self.assertEqual((sent["method"], sent["path"]), ("POST", "/v1/worker/decisions"))
        self.assertEqual(sent["headers"]["Authorization"], "Bearer ak_test")
        self.assertEqual(sent["headers"]["Content-Type"], "application/json")
        self.assertTrue(sent["headers"]["User-Agent"].startswith("approvals-client-python/"))
        self.assertEqual(
            sent["body"],
            {
                "engine": "api",
                "externalRunId": "run-1",
                "stepRef": "refund",
                "approvers": ["a@example.com"],
                "timeoutSec": 600,
                "factsHash": facts_hash(facts),
                # The request's own fields are renamed; the caller's data is sent as given.
                "context": {"title": "Refund", "aiReasoning": "asked", "data": {"customer_id": "c_1"}},
            },
        )
        with self.assertRaises(TypeError):
            client.request_decision(external_run_id="r", step_ref="s", facts=facts, facts_hash=facts_hash(facts))

    def test_consume_refusals_are_values_and_verify_and_consume_raises_them(self) -> None:
        refusal = {"error": "consumed", "message": "spent by worker-2", "consumed": False, "reason": "consumed", "decisionId": "dec_1"}
        server, client = self.serve((409, {}, refusal))
        out = client.consume("dec_1", "worker-1", facts={"a": 1})
        self.assertEqual(out, {"consumed": False, "reason": "consumed", "decisionId": "dec_1", "message": "spent by worker-2"})
        self.assertEqual(server.seen[0]["body"], {"consumer": "worker-1", "factsHash": facts_hash({"a": 1})})

        _, client2 = self.serve((200, {}, {"valid": True, "reason": None}), (409, {}, refusal))
        with self.assertRaises(ApprovalRefusedError) as caught:
            verify_and_consume(client2, "dec_1", consumer="worker-1", facts={"a": 1})
        self.assertEqual((caught.exception.reason, caught.exception.code, caught.exception.status), ("consumed", "consumed", 409))
        self.assertIsInstance(caught.exception, ApprovalsError)

    def test_await_approval_retries_through_outages_while_it_waits(self) -> None:
        approved = {"id": "dec_1", "status": "APPROVED", "decidedBy": "a@example.com", "note": "ok", "factsHash": None}
        server, client = self.serve(
            (503, {}, {"error": "unavailable", "message": "down"}),
            (201, {}, {"approvalNeeded": True, "decisionId": "dec_1", "reason": "created"}),
            (502, {}, {"error": "bad_gateway", "message": "down"}),
            None,
            (200, {}, approved),
        )
        opened: List[Dict[str, Any]] = []
        verdict = await_approval(
            client, external_run_id="run-1", step_ref="s", approvers=["a@example.com"], poll_seconds=5, initial_delay=0.01, on_opened=opened.append
        )
        self.assertEqual(
            (verdict.approved, verdict.decision_id, verdict.decided_by, verdict.note, verdict.status), (True, "dec_1", "a@example.com", "ok", "APPROVED")
        )
        self.assertEqual(opened[0]["decisionId"], "dec_1")
        self.assertEqual([s["path"].split("?")[0] for s in server.seen][-1], "/v1/worker/decisions/dec_1/wait")
        self.assertIn("timeoutSec=5", server.seen[-1]["path"])

    def test_await_approval_does_not_retry_a_configuration_error(self) -> None:
        server, client = self.serve((403, {}, {"error": "forbidden", "message": "no"}))
        with self.assertRaises(ApprovalsError) as caught:
            await_approval(client, external_run_id="r", step_ref="s", approvers=["a@example.com"])
        self.assertEqual(caught.exception.status, 403)
        self.assertEqual(len(server.seen), 1)


if __name__ == "__main__":
    unittest.main()
