/**
 * An enriched `context.data` value `{value, src}`: the contract and the floor see its
 * `value`, reviewers see the value and where it came from. No imports: the web app
 * bundles this file (through decision-content.ts).
 */
export function isEnriched(v: unknown): v is { value: unknown; src: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'value' in v && 'src' in v && Object.keys(v).length === 2;
}
