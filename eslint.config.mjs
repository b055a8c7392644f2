// The project's lint rules: typescript-eslint's recommended set, held to the style the code is written in.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test-artifacts/**', '**/*.d.ts', 'apps/console/dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore names what is taken only to be left out: `const { secret: _secret, ...rest } = row`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests poke into answers of every shape, and fixtures forge them.
    files: ['test/**', '**/*.spec.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
