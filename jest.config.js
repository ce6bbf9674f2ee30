/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/shared', '<rootDir>/services', '<rootDir>/test'],
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
    // OpenTelemetry's exporter and resource detectors load Node modules with a native
    // `import()`, which jest's module sandbox refuses: compiled to `require` for the tests.
    '/node_modules/@opentelemetry/.+\\.js$': ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!@opentelemetry/)'],
  moduleNameMapper: {
    '^@approvals/shared$': '<rootDir>/shared/src/index.ts',
    '^@approvals/client$': '<rootDir>/shared/client/src/index.ts',
    '^@approvals/client/(jcs|mcp)$': '<rootDir>/shared/client/src/$1.ts',
    '^@approvals/shared/(testing|infra)$': '<rootDir>/shared/src/$1/index.ts',
  },
  testTimeout: 60000,
  maxWorkers: 2,
  verbose: false,
};
