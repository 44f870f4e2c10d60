// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', '.test-build/', 'data/', 'node_modules/', 'drizzle/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['eslint.config.js', '.spectral.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // Fastify route handlers and hooks are async by contract even when they do not await.
      '@typescript-eslint/require-await': 'off',
      'no-console': ['error', { allow: ['error'] }],
      // A module's repository is private: other modules, plugins, processes and tests go
      // through the module's service (see docs/architecture.md).
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*/*.repository.js', '**/modules/*/*.repository.js'],
              message: 'A repository is private to its module: call the module’s service instead.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // node:test's describe/it return promises that the runner tracks itself.
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    files: ['src/cli/**/*.ts', 'src/db/migrate-cli.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
)
