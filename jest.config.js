// @swc/jest instead of ts-jest: NestJS 12 is pure ESM, and swc converts it (and our TypeScript, with legacy
// decorators and their metadata) to CommonJS for Jest, which is why @nestjs is not in transformIgnorePatterns.
// swc does not type-check; `npm run typecheck` does.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

/** What every project shares. */
const base = {
  rootDir: __dirname,
  testEnvironment: 'node',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.(t|j)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs)/)'],
};

// One project per kind of suite (CONTRIBUTING.md, "Where a test goes"). A path pattern picks suites across
// all of them: `jest src` (unit), `jest test/e2e test/process`, `jest test/services`, `jest test/browser`;
// `jest` runs everything.
// Only the process suites need the sample app built: their project's globalSetup builds it once per run,
// and Jest runs a project's globalSetup only when one of its suites is selected.
module.exports = {
  // A global option: inside a project Jest ignores it (and falls back to 5 s).
  testTimeout: 30000,
  // Ends every run with the suites that did not run here and why (a missing service), after the totals.
  reporters: ['default', '<rootDir>/test/not-run-reporter.cjs'],
  projects: [
    {
      ...base,
      displayName: 'unit',
      // The specs beside the code (the screens' pure modules too: swc turns their ES modules into CommonJS),
      // the storage contracts on the storages that need no service (in memory, SQLite) and the fakes' own specs.
      testMatch: [
        '<rootDir>/src/**/*.spec.ts',
        '<rootDir>/admin-ui/**/*.spec.ts',
        '<rootDir>/test/contracts/**/*.spec.ts',
        '<rootDir>/test/fakes/**/*.spec.ts',
      ],
    },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    { ...base, displayName: 'services', testMatch: ['<rootDir>/test/services/**/*.e2e-spec.ts'] },
    {
      ...base,
      displayName: 'process',
      testMatch: ['<rootDir>/test/process/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/global-setup.ts',
    },
    {
      ...base,
      displayName: 'browser',
      // Real Chromium (test/browser/browser.ts); its globalSetup says when it is missing (an error in CI).
      // Longer timeouts are set in the suites (jest.setTimeout): testTimeout is only read at the top level.
      testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'],
      globalSetup: '<rootDir>/test/browser/global-setup.ts',
    },
  ],
};
