// cellvm's wrapper around the code interpreter's own vitest config (copied
// beside it, unchanged): its settings, restricted to the files
// tests/conformance_js/run names ($CELLVM_JS_FILES), one worker, plus
// cellvm.setup.ts (SKIPPED.md's skips and the wire log of failing tests).
import { defineConfig } from 'vitest/config'
import base from './vitest.config.mts'

const test = (base as any).test
const files = (process.env.CELLVM_JS_FILES || '').split(',').filter(Boolean)

export default defineConfig({
  test: {
    ...test,
    poolOptions: undefined,
    include: files.length ? files : test.include,
    setupFiles: ['../cellvm/cellvm.setup.ts'],
    env: { ...test.env, ...(process.env as Record<string, string>) },
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
})
