// typescript-eslint's recommended-type-checked over src/ and test/ (issue #13, item 9), run by `npm test`.
// One TypeScript program (tsconfig.test.json covers both folders) keeps the run to a few seconds of CPU.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['build/', 'dist/', 'node_modules/', 'bench/'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // unused parameters named `_x` keep a callback's signature readable
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // `let [a, pos] = …` where only `pos` changes is one statement, not two
      'prefer-const': ['error', { destructuring: 'all' }],
      // off: 3 hits (cat-file batch, relay), each rethrowing a caught `unknown` that `if (failed)` narrowed to `{}`
      '@typescript-eslint/only-throw-error': 'off',
      // off: 19 hits across odb, refs, transports and receive-pack; harmless casts, left to their owners
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // off: 18 hits; async by contract (interface methods, async generators, test callbacks) without an await
      '@typescript-eslint/require-await': 'off',
      // off: 15 hits; ObjType/AllowUor are git's numeric constants, compared with numbers read from packs and bit masks
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // off: every hit is a static function passed by reference (Buffer.compare, option callbacks)
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // off in tests: node:test's test() returns a promise its runner tracks (213 hits)
      '@typescript-eslint/no-floating-promises': 'off',
      // off in tests: assertion messages print Buffers and unknown values on purpose
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
);
