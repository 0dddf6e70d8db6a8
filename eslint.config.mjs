// ESLint 9 flat config: typescript-eslint's type-checked rules for the library (src), its tests (test),
// the sample app (sample-app/src), the benchmark harness (bench) and the soak (soak). Each .ts file is checked with the
// nearest tsconfig.json (projectService): the root one for src and test, sample-app/, bench/ and soak/ for theirs.
// admin-ui/ is browser JavaScript (ES modules, `// @ts-check`: tsconfig.admin-ui.json type-checks it), linted with
// the recommended rules; its unit specs (admin-ui/*.spec.ts) with the type-checked ones.
// Formatting is Prettier's job (`npm run lint:format`); eslint-config-prettier turns off clashing rules.
import eslint from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['**/node_modules/', 'dist/', 'sample-app/dist/', 'bench/dist/', 'soak/dist/', 'coverage/', 'sample-app/data/']),
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'sample-app/src/**/*.ts', 'bench/**/*.ts', 'soak/**/*.ts'],
    extends: [eslint.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Unused values are errors, except deliberately ignored ones (`_arg`, `_unused`, `catch (_e)`) and
      // the rest siblings of a destructuring that drops a property.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // NestJS: modules are decorated empty classes (`@Module({...}) export class AppModule {}`), and
      // some providers group static helpers.
      '@typescript-eslint/no-extraneous-class': 'off',
      // Nest lifecycle hooks and interface implementations are often async without awaiting anything.
      '@typescript-eslint/require-await': 'off',
      // `void promise` marks a deliberately detached promise (listeners, timers, fire-and-forget).
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // Express/Fastify handlers and Nest event listeners take async callbacks where void is declared.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      // A caught value passed on unchanged (`catch (e) { reject(e) }`) keeps the thrower's own error: the
      // callers tell domain errors apart by class; so does an AbortSignal's `reason` (typed any). Only made-up
      // rejection reasons must be Errors.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true, allowThrowingAny: true }],
      // Numbers, booleans and the like in template strings are fine; objects are not.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: true, allowRegExp: true },
      ],
      // Empty interfaces that extend one type are a common way to name a DTO or options shape.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
    },
  },
  {
    // Tests: response bodies (supertest's `res.body`, `JSON.parse`) and Jest's asymmetric matchers
    // (`expect.any(String)`) are typed `any`, and `expect(mock.method)` passes unbound methods on purpose.
    files: ['src/**/*.spec.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Config files at the repo root (this file, jest.config.js, .dependency-cruiser.cjs): plain JS for Node,
    // outside any tsconfig, so no type-aware rules.
    files: ['**/*.{js,cjs,mjs}'],
    ignores: ['admin-ui/**'],
    extends: [eslint.configs.recommended, tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['**/*.{js,cjs}'],
    ignores: ['admin-ui/**'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    // The admin screens' browser code (served as is, no build): an ES module in the browser, no Node globals.
    files: ['admin-ui/**/*.js'],
    extends: [eslint.configs.recommended, tseslint.configs.disableTypeChecked],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: { ...globals.browser } },
  },
  {
    // The screens' unit specs: type-checked with the screens' own tsconfig (they import the ES modules).
    files: ['admin-ui/**/*.spec.ts'],
    extends: [eslint.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { project: './tsconfig.admin-ui.json', tsconfigRootDir: import.meta.dirname },
    },
    // Jest's asymmetric matchers (`expect.stringContaining`) are typed `any`, as in the tests above.
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // The house rule (issue 21): no source file of the library or the screens over 400 lines, every line counted.
    files: ['src/**/*.ts', 'admin-ui/**/*.{js,ts}'],
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] },
  },
  prettier,
);
