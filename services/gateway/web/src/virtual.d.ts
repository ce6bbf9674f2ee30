/** The policy body's schema as the API serves it, and its validator (vite.config.mjs builds both). */
declare module 'virtual:policy-body' {
  export interface ValidationError {
    instancePath: string;
    keyword: string;
    params: Record<string, unknown>;
    message?: string;
  }
  interface Validate {
    (data: unknown): boolean;
    errors?: ValidationError[] | null;
  }
  const validate: Validate;
  export default validate;
  export const policyBodySchema: { properties: Record<string, unknown>; [k: string]: unknown };
}
