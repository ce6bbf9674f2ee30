/**
 * What a person reads for each provider the wire names by its role. The API's paths and
 * enum values stay as the spec has them (`chatA`, `engineA`…); every message, log line,
 * console label and doc says the product's name from here. No imports: the web app reads
 * this file too.
 */
export const PROVIDER_LABEL = {
  chatA: 'Slack',
  chatB: 'Discord',
  engineA: 'Inngest',
  engineB: 'Temporal',
  trigger: 'Trigger.dev',
  bundled: 'the bundled engine',
} as const;
export type LabelledProvider = keyof typeof PROVIDER_LABEL;

/** Labels for every channel an approver can be reached on (the approver form's list). */
export const CHANNEL_LABEL = {
  email: 'Email',
  chatA: PROVIDER_LABEL.chatA,
  chatB: PROVIDER_LABEL.chatB,
  sms: 'SMS',
  phone: 'Phone call',
  webhook: 'Webhook',
} as const;

/** A provider's name for people: `Slack` for `chatA`; anything not in the map as given. */
export function providerLabel(id: string): string {
  return (PROVIDER_LABEL as Record<string, string>)[id] ?? id;
}
