// tests/conformance_js/run's per-suite summary from vitest's JSON report:
//   node summarize.mjs SUITE REPORT.json SUITE_DIR
// First line `SUITE: N passed, N failed, N skipped (K by SKIPPED.md, X known
// failures by KNOWN_FAILING.md)`, then one line per failed test (a file that
// fails to load counts as one failure) and one per known failure.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const [suite, report, dir] = process.argv.slice(2)
const here = path.dirname(fileURLToPath(import.meta.url))
// A table's rows of this suite: `file\ttest` -> reason.
function table(file) {
  const rows = new Map()
  for (const line of fs.readFileSync(path.join(here, file), 'utf8').split('\n')) {
    if (!line.startsWith('|')) continue
    const c = line.split('|').slice(1, -1).map((s) => s.trim().replace(/^`|`$/g, ''))
    if (c.length >= 4 && c[0] === suite) rows.set(`${c[1]}\t${c[2]}`, c[3])
  }
  return rows
}
const listed = table('SKIPPED.md')
// Tests that fail today for a feature cellvm serve does not have yet: their
// failures are counted apart (and with the skipped in the total), each named.
const known = table('KNOWN_FAILING.md')
let knownFailed = 0
const knownLines = []
const r = JSON.parse(fs.readFileSync(report, 'utf8'))
let passed = 0, failed = 0, skipped = 0, byList = 0
const fails = []
for (const f of r.testResults || []) {
  const file = path.relative(dir, f.name)
  let fileFailed = 0
  for (const a of f.assertionResults || []) {
    const name = [...(a.ancestorTitles || []), a.title].join(' > ')
    if (a.status === 'passed') passed++
    else if (a.status === 'failed' && (known.has(`${file}\t${name}`) || known.has(`${file}\t(all)`))) {
      skipped++, knownFailed++, fileFailed++
      knownLines.push(`  KNOWN ${file} > ${name}: ${known.get(`${file}\t${name}`) || known.get(`${file}\t(all)`)}`)
    } else if (a.status === 'failed') {
      failed++, fileFailed++
      const msg = (a.failureMessages || []).join(' ').split('\n')[0].slice(0, 300)
      fails.push(`  FAIL ${file} > ${name}: ${msg}`)
    } else {
      skipped++
      if (listed.has(`${file}\t(all)`) || listed.has(`${file}\t${name}`)) byList++
    }
  }
  if (f.status === 'failed' && !fileFailed) {
    failed++
    fails.push(`  FAIL ${file} (the file): ${(f.message || '').split('\n')[0].slice(0, 300)}`)
  }
}
console.log(`${suite}: ${passed} passed, ${failed} failed, ${skipped} skipped (${byList} by SKIPPED.md, ${knownFailed} known failures by KNOWN_FAILING.md)`)
for (const l of fails) console.log(l)
for (const l of knownLines) console.log(l)
