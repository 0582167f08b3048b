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
  // Each test file leaves 50-100 MB in its worker (modules held past the file by native and
  // global state); a worker past 1 GB after a file is replaced, instead of running out of heap
  // at 4 GB some eighty files in (the CI run of 892db1d).
  workerIdleMemoryLimit: '1GB',
};
