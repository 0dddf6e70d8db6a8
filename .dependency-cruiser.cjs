// dependency-cruiser 17. `npm run lint:deps` runs two passes over src/, both on every import, type-only ones
// included:
// - this file: rules on modules;
// - .dependency-cruiser.folders.cjs: no cycles between folders (a folder-scoped rule needs a pass of its own).
// Architecture rules for the library's own code in src/. Unit tests beside it (src/**/*.spec.ts) are left
// out: they are not part of the package, and a spec that wires several folders together is no layering.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules must not depend on themselves through a chain of imports (type-only imports included).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'redis-stays-in-src-redis',
      severity: 'error',
      comment:
        'Only src/redis/ may import src/redis/: the main entry (dist/index.js) must never load Redis code; ' +
        'hosts opt in through the "./redis" export.',
      from: { path: '^src/', pathNot: '^src/redis/' },
      to: { path: '^src/redis/' },
    },
    {
      name: 'testing-kit-stays-in-src-testing',
      severity: 'error',
      comment:
        'Only src/testing/ may import src/testing/ (and @nestjs/testing): the main entry must never load the testing kit; ' +
        'specs opt in through the "./testing" export.',
      from: { path: '^src/', pathNot: ['^src/testing/', '\\.spec\\.ts$'] },
      to: { path: ['^src/testing/', '(^|/)node_modules/@nestjs/testing/'] },
    },
    {
      name: 'terminus-stays-in-src-terminus',
      severity: 'error',
      comment:
        'Only src/terminus/ may import src/terminus/ and @nestjs/terminus (an optional peer): the main entry must never load ' +
        'terminus; hosts opt in through the "./terminus" export. The probes it maps live in the main entry (lifecycle/).',
      from: { path: '^src/', pathNot: '^src/terminus/' },
      to: { path: ['^src/terminus/', '(^|/)node_modules/@nestjs/terminus/'] },
    },
    {
      name: 'redis-packages-only-in-src-redis',
      severity: 'error',
      comment:
        'ioredis and bullmq are optional peers: outside src/redis/ only type-only imports of them are allowed ' +
        '(erased at compile time), so the main entry loads without them installed.',
      from: { path: '^src/', pathNot: '^src/redis/' },
      to: { path: ['(^|/)node_modules/ioredis/', '(^|/)node_modules/bullmq/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sql-stays-in-persistence',
      severity: 'error',
      comment:
        'The SQL storage (persistence/sql/) is one implementation of WebhookStorage: nothing outside persistence/ names ' +
        'a SQL class; they inject the contracts (WebhookStorage, TriggerRepository, ...).',
      from: { path: '^src/', pathNot: '^src/persistence/' },
      to: { path: '^src/persistence/sql/' },
    },
    {
      name: 'typeorm-internals-in-persistence',
      severity: 'error',
      comment: 'The DataSource wiring stays in persistence/; only the entry exports the entities and migrations for hosts.',
      from: { path: '^src/', pathNot: ['^src/persistence/', '^src/index\\.ts$'] },
      to: { path: '^src/persistence/typeorm/' },
    },
    {
      name: 'database-drivers-in-persistence',
      severity: 'error',
      comment:
        'typeorm, pg and better-sqlite3 (their classes and error codes) are known in persistence/ only: a lost ' +
        'database reaches the rest as DatabaseConnectionLostError.',
      from: { path: '^src/', pathNot: '^src/persistence/' },
      to: { path: ['(^|/)node_modules/(typeorm|pg|better-sqlite3|@nestjs/typeorm)/'] },
    },
    {
      name: 'src-not-to-test-sample-bench',
      severity: 'error',
      comment: 'The library must not import the tests, the sample app or the benchmark harness.',
      from: { path: '^src/' },
      to: { path: '^(test|sample-app|bench)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve is a typo or a missing dependency.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    exclude: { path: ['^(dist|sample-app/dist|bench/dist)/', '\\.spec\\.ts$'] },
    // Type-only imports count (for cycles); the ioredis/bullmq rule tells them apart. (Imports of './x.js'
    // resolve to ./x.ts on their own.)
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
