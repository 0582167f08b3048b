/**
 * The short chaos run of `npm test`: its own cluster (real Temporal server, API x2, worker x2),
 * run after the main suite so its load and kills never share the 2 cores with timing tests.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test/chaos'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  testTimeout: 20 * 60_000,
  maxWorkers: 1,
};
