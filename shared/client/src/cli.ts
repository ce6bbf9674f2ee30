#!/usr/bin/env node
import { readFile, stat } from 'node:fs/promises';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ApprovalsClient, CLIENT_VERSION } from './client';
import { ApprovalsError } from './errors';
import { createApprovalsMcpServer } from './mcp';
import { applyPolicies } from './policies-apply';
import { verifyReceipt, ReceiptVerificationError } from './receipt';

const USAGE = `approvals ${CLIENT_VERSION}

Usage:
  approvals mcp                                  run the MCP server (agent tools) over stdio
  approvals policies apply <folder> [--dry-run]  preview, then upsert every *.json policy in <folder>
  approvals receipt verify <file|-> [--jwks <url|file>] [--facts-hash <hex>]
                                                 check a signed receipt (a JWS, or {"receipt": …});
                                                 prints its payload; exit 1 when refused. Keys:
                                                 --jwks, else $APPROVALS_URL/.well-known/jwks.json

Environment:
  APPROVALS_URL      base URL of the approvals API (for example http://localhost:8080)
  APPROVALS_API_KEY  an API key (ak_…); policies apply needs one with policies:write
`;

class UsageError extends Error {}
/** A configuration the command cannot start with (exit 1, the message alone). */
class StartError extends Error {}

function clientFromEnv(command: string): ApprovalsClient {
  const missing = ['APPROVALS_URL', 'APPROVALS_API_KEY'].filter((v) => !process.env[v]);
  if (missing.length) {
    throw new UsageError(
      `approvals ${command}: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set.\n` +
        'Set APPROVALS_URL to the base URL of the approvals API (for example http://localhost:8080)\n' +
        'and APPROVALS_API_KEY to an API key (ak_…) of your organisation.',
    );
  }
  try {
    return new ApprovalsClient({ baseUrl: process.env.APPROVALS_URL!, apiKey: process.env.APPROVALS_API_KEY! });
  } catch (err) {
    throw new UsageError(`approvals ${command}: ${(err as Error).message}`);
  }
}

/**
 * One authenticated call before serving: an agent host starts `approvals mcp` and shows
 * little of what it prints, so a wrong key or URL must end the process at once with a
 * message, not surface later as a failing tool call.
 */
async function checkKey(client: ApprovalsClient): Promise<void> {
  try {
    await client.listDecisions({ limit: 1 }, { retry: false, timeoutMs: 15_000 });
  } catch (err) {
    if (!(err instanceof ApprovalsError)) throw err;
    let why: string;
    if (err.status === 401) why = `the API key in APPROVALS_API_KEY was refused (401 ${err.code}): check that it is a current key (ak_…) of your organisation`;
    else if (err.status === 403) why = `the API key in APPROVALS_API_KEY may not use the worker API (403 ${err.code}): use an API key, not a session token`;
    else if (err.status === 0) why = `cannot reach APPROVALS_URL ${client.baseUrl} (${err.message}): check the URL and that the service is running`;
    else if (err.status === 404) why = `APPROVALS_URL ${client.baseUrl} does not look like the approvals API (404 on /v1/worker/decisions): check the URL`;
    else why = `${client.baseUrl} answered ${err.status} ${err.code}: ${err.message}`;
    throw new StartError(`approvals mcp: ${why}`);
  }
}

async function runMcp(): Promise<void> {
  const client = clientFromEnv('mcp');
  await checkKey(client);
  const server = createApprovalsMcpServer(client);
  const transport = new StdioServerTransport();
  let closing = false;
  const close = (code: number) => {
    if (closing) return;
    closing = true;
    server.close().finally(() => process.exit(code));
  };
  process.stdin.on('end', () => close(0));
  process.stdin.on('close', () => close(0));
  process.on('SIGINT', () => close(0));
  process.on('SIGTERM', () => close(0));
  await server.connect(transport);
  // stdout carries the protocol: diagnostics go to stderr only.
  process.stderr.write(`approvals mcp: serving ${client.baseUrl} over stdio\n`);
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(USAGE);
    return cmd ? 0 : 2;
  }
  if (cmd === '--version' || cmd === '-v') {
    process.stdout.write(`${CLIENT_VERSION}\n`);
    return 0;
  }
  if (cmd === 'mcp') {
    if (rest.length) throw new UsageError(`approvals mcp takes no arguments (got ${rest.join(' ')})`);
    await runMcp();
    return -1; // keep running
  }
  if (cmd === 'policies' && rest[0] === 'apply') {
    const args = rest.slice(1);
    const dryRun = args.includes('--dry-run');
    const unknown = args.filter((a) => a.startsWith('-') && a !== '--dry-run');
    const positional = args.filter((a) => !a.startsWith('-'));
    if (unknown.length) throw new UsageError(`approvals policies apply: unknown option ${unknown.join(', ')}`);
    if (positional.length !== 1) throw new UsageError('approvals policies apply: give exactly one folder');
    const folder = positional[0]!;
    const isFolder = await stat(folder).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isFolder) throw new UsageError(`approvals policies apply: ${folder} is not a folder`);
    const client = clientFromEnv('policies apply');
    const result = await applyPolicies(client, folder, { dryRun });
    return result.ok ? 0 : 1;
  }
  if (cmd === 'receipt' && rest[0] === 'verify') return receiptVerify(rest.slice(1));
  throw new UsageError(`approvals: unknown command "${argv.join(' ')}"`);
}

/** `approvals receipt verify <file|-> [--jwks <url|file>] [--facts-hash <hex>]`. */
async function receiptVerify(args: string[]): Promise<number> {
  const opts: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--jwks' || a === '--facts-hash') {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`approvals receipt verify: ${a} needs a value`);
      opts[a] = v;
    } else if (a.startsWith('-') && a !== '-') throw new UsageError(`approvals receipt verify: unknown option ${a}`);
    else positional.push(a);
  }
  if (positional.length !== 1) throw new UsageError('approvals receipt verify: give one file holding the receipt, or - for standard input');
  const source = positional[0]!;
  const text = (source === '-' ? await readStdin() : await readFile(source, 'utf8')).trim();
  // A saved answer of the receipt route (`{"receipt": …}`) or the bare JWS.
  let jws = text;
  if (text.startsWith('{')) {
    const held = (JSON.parse(text) as { receipt?: unknown }).receipt;
    if (typeof held !== 'string') throw new UsageError('approvals receipt verify: the JSON holds no "receipt" string');
    jws = held;
  }
  const keys = opts['--jwks'] ?? (process.env.APPROVALS_URL ? new URL('/.well-known/jwks.json', process.env.APPROVALS_URL).toString() : undefined);
  if (!keys) throw new UsageError('approvals receipt verify: give --jwks <url|file>, or set APPROVALS_URL');
  const where = /^https?:\/\//i.test(keys) ? { jwksUrl: keys } : { jwks: JSON.parse(await readFile(keys, 'utf8')) as { keys: [] } };
  try {
    const payload = await verifyReceipt(jws, { ...where, factsHash: opts['--facts-hash'] });
    process.stdout.write(`${JSON.stringify(payload, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof ReceiptVerificationError)) throw err;
    process.stderr.write(`approvals receipt verify: refused (${err.code}): ${err.message}\n`);
    return 1;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    if (err instanceof StartError) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    const e = err as NodeJS.ErrnoException;
    process.stderr.write(`approvals: ${e.code === 'ENOENT' || e.code === 'ENOTDIR' ? e.message : (e.stack ?? String(e))}\n`);
    process.exitCode = 1;
  },
);
