// eslint (flat config): the recommended rules of eslint and typescript-eslint over every
// TypeScript source and test, React's hook rules over the web app. `npm run lint` runs it
// and prettier's check; the suite runs both (test/structure/lint.test.ts). docs/libraries.md
// says what is checked and why the tests may use `any`.
import js from '@eslint/js';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.data/**', 'coverage/**', 'shared/client/src/openapi.ts', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // A leading underscore says "deliberately unused" (a rest sibling dropped, a callback's
      // position taken).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['services/gateway/web/src/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'warn' },
  },
  {
    // Tests, and the tools that drive the system over HTTP (bench, chaos, attack), read
    // answers whose shape they assert: `any` there is the assertion's business.
    files: ['**/test/**/*.ts', 'test/**/*.ts', 'deploy/src/{bench,chaos,attack}.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
