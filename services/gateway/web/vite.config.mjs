import { createRequire } from 'node:module';
import { join } from 'node:path';
import { defineConfig } from 'vite';

const require = createRequire(import.meta.url);

/**
 * `virtual:policy-body`: the policy body's JSON Schema exactly as the API serves it
 * (`/openapi.json` → `components.schemas.PolicyBody`, generated from the zod contract) and
 * its validator, compiled here by Ajv (draft 2020-12) into plain code. The app's CSP has no
 * `unsafe-eval`, so Ajv cannot compile in the browser; its standalone output runs there
 * instead. Needs the gateway built (`tsc -b`), which `npm run build` and `npm start` do first;
 * a contract change reaches shared/client/src/openapi.ts (its drift test), which rebuilds the app.
 */
function policyBody() {
  const id = 'virtual:policy-body';
  return {
    name: 'policy-body',
    resolveId: (source) => (source === id ? `\0${id}` : null),
    load(resolved) {
      if (resolved !== `\0${id}`) return null;
      let doc;
      try {
        doc = require(join(import.meta.dirname, '..', 'dist', 'http', 'openapi.js')).routeTableDocument();
      } catch (err) {
        throw new Error(`the web app needs the gateway built first (npm run build): ${err.message}`);
      }
      const schema = doc.components.schemas.PolicyBody;
      const Ajv2020 = require('ajv/dist/2020').default;
      const standalone = require('ajv/dist/standalone').default;
      // Formats (email) are the server's to check: Preview and Save answer them with their path.
      const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false, code: { source: true, esm: true } });
      let code = standalone(ajv, ajv.compile(schema));
      // Ajv's runtime helpers are CommonJS requires even in its ESM output: make them imports.
      let n = 0;
      const imports = [];
      code = code.replace(/require\("(ajv\/dist\/runtime\/[a-z0-9_]+)"\)\.default/g, (_m, mod) => {
        const name = `ajvRuntime${n++}`;
        imports.push(`import ${name} from ${JSON.stringify(`${mod}.js`)};`);
        return name;
      });
      return `${imports.join('\n')}\n${code}\nexport const policyBodySchema = ${JSON.stringify(schema)};\n`;
    },
  };
}

// The web app is served by the gateway at /app/ (services/gateway/src/http/web-app.ts).
// No React plugin: esbuild compiles the TSX (automatic JSX runtime).
export default defineConfig({
  root: import.meta.dirname,
  base: '/app/',
  logLevel: 'warn',
  plugins: [policyBody()],
  esbuild: { jsx: 'automatic' },
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets', sourcemap: false, target: 'es2022', reportCompressedSize: false },
});
