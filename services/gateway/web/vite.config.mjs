import { defineConfig } from 'vite';

// The web app is served by the gateway at /app/ (services/gateway/src/http/web-app.ts).
// No React plugin: esbuild compiles the TSX (automatic JSX runtime).
export default defineConfig({
  root: import.meta.dirname,
  base: '/app/',
  logLevel: 'warn',
  esbuild: { jsx: 'automatic' },
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets', sourcemap: false, target: 'es2022', reportCompressedSize: false },
});
