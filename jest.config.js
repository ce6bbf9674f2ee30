/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/shared', '<rootDir>/services', '<rootDir>/test'],
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
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
