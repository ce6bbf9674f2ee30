import type { Express, Request, Response } from 'express';
import express from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ApprovalsClient, createApprovalsMcpServer } from '@approvals/client';
import { AppError, type Logger } from '@approvals/shared';
import type { Authenticate } from '../auth/authenticate';

/**
 * MCP over Streamable HTTP at /mcp, stateless (a server and transport per request), for
 * agents with an API key. The tools are the client package's, talking to this gateway's
 * own worker API with the caller's key: one implementation for MCP over HTTP, MCP over
 * stdio and REST, with the same authorization on every path.
 */
export function mountMcp(app: Express, deps: { authenticate: Authenticate; selfUrl: () => string; log: Logger; bodyLimitBytes: number }) {
  const handle = async (req: Request, res: Response) => {
    const auth = await deps.authenticate(req.header('authorization'));
    if (auth.principal.kind !== 'apiKey') throw new AppError('forbidden', 'the MCP endpoint takes an API key, not a session');
    const token = /^Bearer\s+(\S+)/i.exec(req.header('authorization') ?? '')![1];
    const server = createApprovalsMcpServer(new ApprovalsClient({ baseUrl: deps.selfUrl(), apiKey: token }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };
  app.post('/mcp', express.json({ limit: deps.bodyLimitBytes }), handle);
  // Stateless: no server-initiated stream and no sessions to end.
  const notAllowed = (_req: Request, res: Response) => {
    res.status(405).setHeader('Allow', 'POST').json({ error: 'method_not_allowed', message: 'the MCP endpoint is stateless: use POST' });
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
}
