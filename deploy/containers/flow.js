'use strict';
/**
 * The container test's walk through the front door (BASE_URL): create a decision with the
 * API key, the approver's vote with their session, verify and consume with the facts, and
 * a second consumer refused. Uses the built client (shared/client/dist). Exits 1 on any
 * unexpected answer.
 *   node deploy/containers/flow.js <baseUrl> <apiKey> <approver session token> <approver email>
 */
const { ApprovalsClient, factsHash } = require('../../shared/client/dist');

async function main() {
  const [baseUrl, apiKey, approverToken, approver] = process.argv.slice(2);
  const client = new ApprovalsClient({ baseUrl, apiKey });
  const facts = { refund: { order: 'ord_ci', amountCents: 1250 } };
  const run = `ci-${Date.now()}`;
  const created = await client.createDecision({ externalRunId: run, stepRef: 'refund', engine: 'api', approvers: [approver], factsHash: factsHash(facts) });
  const id = created.decisionId;
  if (!id) throw new Error(`create answered no decision id: ${JSON.stringify(created)}`);
  const vote = await fetch(`${baseUrl}/v1/decisions/${id}/decide`, {
    method: 'POST',
    headers: { authorization: `Bearer ${approverToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  if (vote.status !== 200) throw new Error(`vote: ${vote.status} ${await vote.text()}`);
  const verified = await client.verify(id, { factsHash: factsHash(facts) });
  if (verified.valid !== true) throw new Error(`verify: ${JSON.stringify(verified)}`);
  const consumed = await client.consume(id, { consumer: 'ci-worker', factsHash: factsHash(facts) });
  if (consumed.consumed !== true) throw new Error(`consume: ${JSON.stringify(consumed)}`);
  const again = await client.consume(id, { consumer: 'another-worker', factsHash: factsHash(facts) });
  if (again.consumed !== false || again.reason !== 'consumed') throw new Error(`second consumer: ${JSON.stringify(again)}`);
  process.stdout.write(`[flow] ${id}: created, approved, verified, consumed once\n`);
}

main().catch((err) => {
  console.error(`[flow] ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});
