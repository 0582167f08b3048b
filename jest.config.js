/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The chaos run has its own config (jest.chaos.config.js), run after this suite.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/chaos/'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  // PostgreSQL and the Temporal server start once per run; test files share them,
  // isolated by task queue and by the merchants they create.
  globalSetup: '<rootDir>/test/setup/globalSetup.ts',
  globalTeardown: '<rootDir>/test/setup/globalTeardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
};
