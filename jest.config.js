// @swc/jest instead of ts-jest: NestJS 12 is pure ESM and swc converts it to CommonJS for Jest
// (see TOOLCHAIN.md). swc does not type-check; `npm run typecheck` does.
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

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testRegex: '\\.(spec|e2e-spec)\\.ts$',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.(t|j)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs)/)'],
  testTimeout: 30000,
};
