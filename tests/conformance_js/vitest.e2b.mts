// cellvm's wrapper around E2B's own vitest config (copied beside it, unchanged):
// the `unit` project as E2B defines it (isolation, 30 s test timeout, the
// globalFetchFallback setup file, process.env passed through), restricted to the
// files tests/conformance_js/run names ($CELLVM_JS_FILES), one worker, plus
// cellvm.setup.ts (SKIPPED.md's skips and the wire log of failing tests).
import { defineConfig } from 'vitest/config'
import base from './vitest.config.mts'

const projects = (base as any).test.projects as any[]
const unit = projects.find((p) => p.test?.name === 'unit').test
const files = (process.env.CELLVM_JS_FILES || '').split(',').filter(Boolean)

export default defineConfig({
  test: {
    ...unit,
    include: files.length ? files : unit.include,
    setupFiles: [...unit.setupFiles, '../cellvm/cellvm.setup.ts'],
    env: { ...unit.env, ...(process.env as Record<string, string>) },
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
})
