// @ts-check
// The architecture, checked by `npm run lint:architecture` (part of `npm run lint`, so of `npm test`). README "Layout"
// says the same in words: what each folder holds and what it may import.
//
//   src/rules      pure rules (money, plans and periods, summaries, marks): imports nothing else
//   workflows      deterministic: src/rules, message definitions (workflows/), activities as types
//   activities     may use the product (domain, db, providers, mail), never workflows or src/api
//   src/domain     the product's rules over records (create-or-find, conflicts, settlements): never
//                  HTTP, never Temporal; of workflows/ only the message definitions' types
//   src/temporal   one gateway per workflow (start, Update-with-Start, messages): never HTTP
//   src/app        use cases that combine the domain and a gateway: never HTTP
//   src/api        HTTP: routes parse, authorize, call one domain, use-case or gateway function, answer
//   dev            development tooling (stack, chaos, embedded servers, sandbox): the product never imports it
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import circle, type-only imports included: each folder can be read from the bottom up.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'product-not-tooling',
      severity: 'error',
      comment: 'The product (src, activities, workflows) never imports development tooling, tests or benches.',
      from: { path: '^(src|activities|workflows)/' },
      to: { path: '^(dev|test|bench|scripts)/' },
    },
    {
      name: 'rules-are-pure',
      severity: 'error',
      comment: 'src/rules is what workflows may import: nothing from outside it, no package, no Node built-in.',
      from: { path: '^src/rules/' },
      to: { pathNot: '^src/rules/' },
    },
    {
      name: 'workflows-are-deterministic',
      severity: 'error',
      comment:
        'Workflow code is replayed: it imports other workflow code, the pure rules, the Temporal workflow SDK, and activities as types only.',
      from: { path: '^workflows/' },
      to: {
        pathNot: ['^workflows/', '^src/rules/', '^activities/', '^node_modules/@temporalio/(workflow|common)/'],
      },
    },
    {
      name: 'workflows-import-activities-as-types',
      severity: 'error',
      comment: 'Activities run in the worker, not in the workflow sandbox: import them as types (proxyActivities).',
      from: { path: '^workflows/' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'activities-not-workflows-or-http',
      severity: 'error',
      comment:
        'Activities are called by workflows; they start workflows only through the gateways handed to them (activities/deps.ts).',
      from: { path: '^activities/' },
      to: { path: '^(workflows/|src/api/|src/temporal/[^/]*Gateway)' },
    },
    {
      name: 'domain-not-http-or-temporal',
      severity: 'error',
      comment:
        'The domain names no HTTP status and starts no workflow: the use cases (src/app) and the gateways call it.',
      from: { path: '^src/(domain|db|providers|rules)/' },
      to: {
        path: '^(src/api/|src/app/|src/temporal/|activities/|node_modules/(koa|@koa|@temporalio)/)',
      },
    },
    {
      name: 'domain-reads-message-definitions-as-types',
      severity: 'error',
      comment:
        'Of workflows/, the domain may name only the shared message definitions (workflows/*Api.ts), and only as types.',
      from: { path: '^src/(domain|db|providers)/' },
      to: { path: '^workflows/', pathNot: '^workflows/[^/]+Api\\.ts$' },
    },
    {
      name: 'domain-message-definitions-types-only',
      severity: 'error',
      comment: 'The message definitions import the workflow SDK: the domain reads their types only.',
      from: { path: '^src/(domain|db|providers)/' },
      to: { path: '^workflows/[^/]+Api\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'api-through-gateways',
      severity: 'error',
      comment:
        'The API starts and messages workflows only through the gateways (src/temporal); of workflows/ it may read the shared message definitions (workflows/*Api.ts).',
      from: { path: '^src/(api|app)/' },
      to: { path: '^(workflows/|activities/)', pathNot: '^workflows/[^/]+Api\\.ts$' },
    },
    {
      name: 'routes-not-orm',
      severity: 'error',
      comment: 'Routes parse, authorize, call one domain, use-case or gateway function, and answer: no ORM.',
      from: { path: '^src/api/routes/' },
      // Types (EntityManager handed on, a status list) are words; calls are the domain's.
      to: { path: '^(node_modules/@mikro-orm/|src/db/orm\\.ts$)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'use-cases-not-http',
      severity: 'error',
      comment: 'Use cases (src/app) are called by the routes; they never reach back into HTTP.',
      from: { path: '^src/app/' },
      to: { path: '^(src/api/|node_modules/(koa|@koa)/)' },
    },
    {
      name: 'temporal-not-http',
      severity: 'error',
      comment: 'Gateways turn Temporal answers into outcomes; the API maps outcomes to HTTP.',
      from: { path: '^src/temporal/' },
      to: { path: '^(src/api/|node_modules/(koa|@koa)/)' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'Every import resolves.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|coverage|bench/\\.out|test/replay)/' },
    // Type-only imports count: a circle through types is still a circle a reader must untangle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
