import { AppError, OutboundError, SecretBox, llmKeyContext, type OutboundClient, type OutboundResponse } from '@approvals/shared';

/** The model may take a while to write a draft. */
const MODEL_TIMEOUT_MS = 60_000;

export interface ModelTarget {
  baseUrl: string;
  model: string;
  apiKey?: string;
}

/** Opens the org's sealed model key at the moment of the call. */
export function openModelKey(secrets: SecretBox, sealed: string, org: string): string {
  // A row from before keys were sealed (the gateway seals those at start) still works.
  if (!SecretBox.isSealed(sealed)) return sealed;
  try {
    return secrets.open(sealed, llmKeyContext(org));
  } catch (err) {
    throw new AppError('model_not_configured', `the stored model API key cannot be opened (${(err as Error).message}); set it again with PUT /v1/settings/llm`);
  }
}

/**
 * Asks an OpenAI-compatible chat-completions endpoint for a revised draft. The baseUrl is
 * tenant-set: the call goes through the guarded outbound client.
 */
export async function reviseDraft(http: OutboundClient, llm: ModelTarget, req: { title: string | null; draft: string; feedback: string }): Promise<string> {
  let res: OutboundResponse;
  try {
    res = await http.send(`${llm.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {}) },
      body: JSON.stringify({
        model: llm.model,
        messages: [
          { role: 'system', content: 'You revise a draft that a human reviewer will approve. Apply the feedback. Answer with the revised draft only.' },
          { role: 'user', content: `${req.title ? `Task: ${req.title}\n\n` : ''}Draft:\n${req.draft}\n\nFeedback:\n${req.feedback}` },
        ],
      }),
      timeoutMs: MODEL_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof OutboundError && (err.kind === 'blocked' || err.kind === 'invalid_url')) {
      // Say why, never what an internal address answered.
      throw new AppError('target_not_allowed', `the model baseUrl may not be called: ${err.message}`);
    }
    throw new AppError('upstream_error', `the model endpoint did not answer: ${(err as Error).message}`);
  }
  if (res.status < 200 || res.status >= 300) throw new AppError('upstream_error', `the model endpoint answered ${res.status}`);
  const body = res.json<{ choices?: Array<{ message?: { content?: string } }> }>() ?? {};
  const content = body.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || !content.trim()) throw new AppError('upstream_error', 'the model returned no draft');
  return content;
}
