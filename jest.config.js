/** Three tiers by suffix: *.unit.spec.ts, *.int.spec.ts, *.e2e.spec.ts (the tiers are described under Tests in README.md). */
const common = {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^#contracts$': '<rootDir>/libs/contracts/src/index.ts',
    '^#contracts/plain$': '<rootDir>/libs/contracts/src/plain.ts',
    '^#contracts/files$': '<rootDir>/libs/contracts/src/files.ts',
    '^#bundle$': '<rootDir>/libs/bundle/src/index.ts',
    '^#rete$': '<rootDir>/libs/rete/src/index.ts',
    '^#tls$': '<rootDir>/libs/tls/src/index.ts',
    '^#vertex-control$': '<rootDir>/libs/vertex-control/src/index.ts',
    '^#runtime$': '<rootDir>/libs/runtime/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
};

export default {
  // Integration and end-to-end tests start real databases and processes; their own steps bound the time.
  testTimeout: 180_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/**/*.unit.spec.ts'], testPathIgnorePatterns: ['/node_modules/', '/dist/'] },
    { ...common, displayName: 'int', testMatch: ['<rootDir>/**/*.int.spec.ts'], testPathIgnorePatterns: ['/node_modules/', '/dist/'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/**/*.e2e.spec.ts'], testPathIgnorePatterns: ['/node_modules/', '/dist/'] },
  ],
};
