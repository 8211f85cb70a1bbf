// Group d, files (envd's /files and filesystem service): text and binary
// round trips, list, rename, remove, exists, getInfo, makeDir, several files
// at once, octet-stream and gzip uploads, and signed upload/download URLs.

import crypto from 'node:crypto'
import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow } from './lib.mjs'

const entry = (e) =>
  e && {
    name: e.name,
    path: e.path,
    type: e.type ?? null,
    size: e.size ?? null,
    mode: e.mode ?? null,
    permissions: e.permissions ?? null,
    owner: e.owner ?? null,
    group: e.group ?? null,
    modifiedTime: e.modifiedTime instanceof Date ? e.modifiedTime.toISOString() : e.modifiedTime ?? null,
    symlinkTarget: e.symlinkTarget ?? null,
  }

const TEXT = 'héllo wörld\nsecond line ✓\n'
const ALL_BYTES = new Uint8Array(1024).map((_, i) => i % 256)
const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex')

await runGroup('files', async (scenario) => {
  let sbx
  await scenario('create', async (o) => {
    sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'files' } }))
    o.sandboxId = sbx.sandboxId
  })
  if (!sbx) return

  await scenario('text', async (o) => {
    const info = await sbx.files.write('hello.txt', TEXT)
    o.writeInfo = entry(info)
    o.read = await sbx.files.read('hello.txt')
    o.readAbs = await sbx.files.read('/home/user/hello.txt')
    o.cat = (await sbx.commands.run('cat /home/user/hello.txt')).stdout
    o.expected = TEXT
    // overwrite with something shorter: no trailing bytes of the old content
    await sbx.files.write('hello.txt', 'short')
    o.overwritten = await sbx.files.read('hello.txt')
    // an empty file
    await sbx.files.write('empty.txt', '')
    o.empty = await sbx.files.read('empty.txt')
  })

  await scenario('binary', async (o) => {
    const info = await sbx.files.write('bin.dat', ALL_BYTES.buffer)
    o.writeInfo = entry(info)
    const back = await sbx.files.read('bin.dat', { format: 'bytes' })
    o.readLength = back.length
    o.readEqual = Buffer.compare(Buffer.from(back), Buffer.from(ALL_BYTES)) === 0
    const firstDiff = back.findIndex((b, i) => b !== ALL_BYTES[i])
    o.firstDiff = firstDiff
    o.hostSha = sha256(ALL_BYTES)
    o.guestSha = (await sbx.commands.run('sha256sum bin.dat')).stdout.split(' ')[0]
    // a file the guest made, read as bytes and as a blob
    await sbx.commands.run("printf '\\x00\\x01\\xfe\\xff' > made.bin")
    o.guestMade = Array.from(await sbx.files.read('made.bin', { format: 'bytes' }))
    o.blobSize = (await sbx.files.read('made.bin', { format: 'blob' })).size
  })

  await scenario('octet_stream_and_gzip', async (o) => {
    await sbx.files.write('oct.dat', ALL_BYTES.buffer, { useOctetStream: true })
    o.octetSha = (await sbx.commands.run('sha256sum oct.dat')).stdout.split(' ')[0]
    await sbx.files.write('gz.txt', TEXT.repeat(50), { gzip: true })
    o.gzRead = (await sbx.files.read('gz.txt', { gzip: true })) === TEXT.repeat(50)
    o.gzSize = (await sbx.commands.run('wc -c < gz.txt')).stdout.trim()
    o.expectedGzSize = String(Buffer.byteLength(TEXT.repeat(50)))
    o.hostSha = sha256(ALL_BYTES)
  })

  await scenario('make_dir', async (o) => {
    o.created = await sbx.files.makeDir('dir1')
    o.again = await sbx.files.makeDir('dir1')
    o.nested = await sbx.files.makeDir('deep/a/b/c')
    o.nestedIsDir = (await sbx.commands.run('test -d /home/user/deep/a/b/c && echo yes')).stdout
  })

  await scenario('list', async (o) => {
    await sbx.files.makeDir('listing/sub')
    await sbx.files.write('listing/a.txt', 'a')
    await sbx.files.write('listing/b.txt', 'bb')
    await sbx.files.write('listing/sub/c.txt', 'ccc')
    o.depth1 = (await sbx.files.list('listing')).map(entry).sort((x, y) => x.name.localeCompare(y.name))
    o.depth2 = (await sbx.files.list('listing', { depth: 2 })).map((e) => e.path).sort()
    o.missing = await expectThrow(() => sbx.files.list('no-such-dir'))
  })

  await scenario('exists', async (o) => {
    o.file = await sbx.files.exists('hello.txt')
    o.dir = await sbx.files.exists('dir1')
    o.missing = await sbx.files.exists('nope.txt')
    o.missingAbs = await sbx.files.exists('/no/such/path')
  })

  await scenario('get_info', async (o) => {
    await sbx.files.write('info.txt', '12345')
    const t = Date.now()
    o.now = new Date(t).toISOString()
    o.file = entry(await sbx.files.getInfo('info.txt'))
    o.dir = entry(await sbx.files.getInfo('dir1'))
    o.missing = await expectThrow(() => sbx.files.getInfo('nope.txt'))
    await sbx.commands.run('ln -sf /home/user/info.txt /home/user/link.txt')
    o.link = entry(await sbx.files.getInfo('link.txt'))
  })

  await scenario('rename', async (o) => {
    await sbx.files.write('old-name.txt', 'moved content')
    o.entry = entry(await sbx.files.rename('old-name.txt', 'dir1/new-name.txt'))
    o.oldExists = await sbx.files.exists('old-name.txt')
    o.newContent = await sbx.files.read('dir1/new-name.txt')
    o.missing = await expectThrow(() => sbx.files.rename('no-such.txt', 'x.txt'))
  })

  await scenario('remove', async (o) => {
    await sbx.files.write('gone.txt', 'x')
    await sbx.files.remove('gone.txt')
    o.fileAfter = await sbx.files.exists('gone.txt')
    await sbx.files.makeDir('gone-dir/inner')
    await sbx.files.write('gone-dir/inner/f.txt', 'x')
    await sbx.files.remove('gone-dir')
    o.dirAfter = await sbx.files.exists('gone-dir')
    o.missing = await expectThrow(() => sbx.files.remove('never-existed.txt'))
  })

  await scenario('read_missing', async (o) => {
    o.thrown = await expectThrow(() => sbx.files.read('no-such-file.txt'))
  })

  await scenario('write_files', async (o) => {
    const infos = await sbx.files.write([
      { path: 'multi/one.txt', data: 'one' },
      { path: '/tmp/serve_sdk_two.txt', data: 'two' },
      { path: 'multi/three.bin', data: new Uint8Array([0, 255, 10, 13]).buffer },
    ])
    o.infos = infos.map(entry)
    o.one = await sbx.files.read('multi/one.txt')
    o.two = await sbx.files.read('/tmp/serve_sdk_two.txt')
    o.three = Array.from(await sbx.files.read('multi/three.bin', { format: 'bytes' }))
    const infos2 = await sbx.files.writeFiles([{ path: 'multi/four.txt', data: 'four' }])
    o.infos2 = infos2.map(entry)
    o.four = await sbx.files.read('multi/four.txt')
  })

  await scenario('users', async (o) => {
    o.owner = (await sbx.commands.run('stat -c %U /home/user/hello.txt')).stdout.trim()
    const info = await sbx.files.write('/root/serve_sdk_root.txt', 'as root', { user: 'root' })
    o.rootWrite = entry(info)
    o.rootRead = await sbx.files.read('/root/serve_sdk_root.txt', { user: 'root' })
    o.rootOwner = (await sbx.commands.run('stat -c %U /root/serve_sdk_root.txt', { user: 'root' })).stdout.trim()
    o.denied = await expectThrow(() => sbx.files.write('/root/serve_sdk_denied.txt', 'no'))
    o.deniedRead = await expectThrow(() => sbx.files.read('/root/serve_sdk_root.txt'))
  })

  await scenario('signed_urls', async (o) => {
    // Without an envdAccessToken the SDK gives unsigned URLs, which a plain
    // fetch (no E2b-Sandbox-Id header) cannot use: then nothing more is tried.
    const up = await sbx.uploadUrl('signed/up.txt')
    o.uploadUrl = up
    o.signed = new URL(up).searchParams.has('signature')
    if (!o.signed) return
    const form = new FormData()
    form.append('file', new Blob(['uploaded through a signed URL']), 'up.txt')
    const r1 = await fetch(up, { method: 'POST', body: form })
    o.uploadStatus = r1.status
    o.uploadBody = (await r1.text()).slice(0, 500)
    o.readBack = await sbx.files.read('signed/up.txt').catch((e) => `error: ${e.message}`)
    const down = await sbx.downloadUrl('signed/up.txt')
    o.downloadUrl = down
    const r2 = await fetch(down)
    o.downloadStatus = r2.status
    o.downloadBody = (await r2.text()).slice(0, 500)
    // a tampered signature is refused
    const bad = new URL(down)
    bad.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
    const r3 = await fetch(bad)
    o.tamperedStatus = r3.status
    // an expired one too
    const expired = await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: -10_000 })
    const r4 = await fetch(expired)
    o.expiredStatus = r4.status
    o.expiredBody = (await r4.text()).slice(0, 300)
  })
})
