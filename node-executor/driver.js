'use strict';
// cellvm's JavaScript/TypeScript executor: runs inside Node.js and speaks the
// executor side of docs/PROTOCOL.md section 8 on the fds the zygote set up:
// fd 3 the control socket (X_EXECUTE in; X_READY, EXEC_INPUT, STREAM, RESULT,
// EXEC_ERROR, X_END out), fds 1 and 2 the context's stdout and stderr pipes
// (left to subprocesses; the cell's own console output travels as STREAM on
// fd 3, in order with its other messages). docs/JAVASCRIPT.md describes it.
//   node driver.js [--language javascript|typescript] [--epoch N] [--spare]

// Before anything touches process.stdout: Node would make the pipe behind it
// non-blocking, for every subprocess that shares it too.
const output = require('./output');
output.install();

const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');
const { pathToFileURL } = require('url');
const cbor = require('./cbor');
const frame = require('./frame');
const reseed = require('./reseed');
const transform = require('./transform');

const CTL_FD = 3;
const MSG = {
  EXEC_INPUT: 0x8010,
  STREAM: 0x8011,
  RESULT: 0x8013,
  EXEC_ERROR: 0x8014,
  X_READY: 0x4010,
  X_EXECUTE: 0x4011,
  X_END: 0x4012,
  X_ASSIGN: 0x4030,
  X_ASSIGNED: 0x4031,
};
// What an interrupted cell reports: Node's own words for a script stopped by SIGINT.
const INTERRUPTED = 'Script execution was interrupted by `SIGINT`';

// `--spare`: started ahead of any context; X_ASSIGN from the zygote gives the
// language and the directory (docs/JAVASCRIPT.md, "Warm spare").
const spare = process.argv.includes('--spare');
reseed.start(process.argv);
let language = process.argv.includes('typescript') ? 'typescript' : 'javascript';

// ---------------------------------------------------------------- the control socket

function send(type, id, body) {
  for (const b of frame.encodeMessage(type, id, cbor.encode(body))) output.writeAll(CTL_FD, b);
}

// ---------------------------------------------------------------- cells

const state = {
  count: 1,
  running: null, // {id, interrupt: reject function of the cell's wait}
  queue: [],
  sandboxEnvs: null,
};

function applySandboxEnvs(envs) {
  if (!envs || typeof envs !== 'object') return;
  const same =
    state.sandboxEnvs &&
    Object.keys(envs).length === Object.keys(state.sandboxEnvs).length &&
    Object.keys(envs).every((k) => state.sandboxEnvs[k] === String(envs[k]));
  if (same) return;
  state.sandboxEnvs = {};
  for (const [k, v] of Object.entries(envs)) {
    process.env[k] = String(v);
    state.sandboxEnvs[k] = String(v);
  }
}

// Names the cell sees as globals: require and import() resolve from the cwd.
function refreshGlobals() {
  const from = path.join(process.cwd(), '[cell]');
  const req = Module.createRequire(from);
  Object.defineProperty(globalThis, 'require', { value: req, writable: true, configurable: true });
  Object.defineProperty(globalThis, transform.IMPORT_FN, {
    value: (spec) => importFrom(req, spec),
    writable: true,
    configurable: true,
  });
}

function importFrom(req, spec) {
  spec = String(spec);
  const builtin = Module.isBuiltin ? Module.isBuiltin(spec) : Module.builtinModules.includes(spec.replace(/^node:/, ''));
  if (builtin || /^[a-z][a-z0-9+.-]*:/i.test(spec)) return import(spec);
  let resolved;
  try {
    resolved = req.resolve(spec);
  } catch (e) {
    // ESM-only packages without a `require` export: resolve as ESM from the cwd.
    return import(spec.startsWith('.') || spec.startsWith('/') ? pathToFileURL(path.resolve(spec)).href : spec);
  }
  return import(pathToFileURL(resolved).href);
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

function formatValue(v) {
  // E2B shows a string as its text, without quotes.
  return typeof v === 'string' ? v : util.inspect(v);
}

// The stack as the user's code sees it: the driver's frames cut off.
function userStack(err) {
  const stack = typeof err.stack === 'string' ? err.stack : '';
  const lines = stack.split('\n');
  const cut = lines.findIndex((l) => /^\s+at /.test(l) && (l.includes('node:vm') || l.includes(__dirname)));
  return cut > 0 ? lines.slice(0, cut) : lines;
}

function errorBody(err) {
  if (err instanceof Error || (err && typeof err === 'object' && typeof err.message === 'string')) {
    return {
      name: String(err.name || 'Error'),
      value: String(err.message),
      traceback: [userStack(err).join('\n')],
    };
  }
  // `throw 'x'`, `throw 42`: no Error around the value.
  return { name: typeof err, value: formatValue(err), traceback: [] };
}

// Waits for `p`; an interrupt or a late error of the cell rejects the wait.
function settle(cell, p) {
  return new Promise((resolve, reject) => {
    cell.interrupt = reject;
    Promise.resolve(p).then(resolve, reject);
  });
}

async function execute(id, body) {
  reseed.beforeCell(body); // a copy of a snapshot: before any of the cell runs
  const code = typeof body.code === 'string' ? body.code : '';
  applySandboxEnvs(body.sandbox_envs);
  const envs = body.envs && typeof body.envs === 'object' ? body.envs : null;
  if (envs) {
    for (const [k, v] of Object.entries(envs)) process.env[k] = String(v);
  }
  const count = state.count;
  const cell = { id, interrupt: null, lateError: undefined };
  state.running = cell;
  let status = 'ok';
  send(MSG.EXEC_INPUT, id, { execution_count: count });
  output.begin((name, text) => send(MSG.STREAM, id, { name, text }));
  try {
    refreshGlobals();
    const prepared = transform.prepare(code, language);
    const script = new vm.Script(prepared.code, { filename: 'evalmachine.<anonymous>' });
    let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
    // A promise (a top-level await's, or the last expression's) gives the cell
    // its value or error when it settles.
    if (prepared.async || isThenable(value)) value = await settle(cell, value);
    // One turn of the event loop: a promise the cell rejected without handling
    // it reports here, as the cell's error.
    await settle(cell, new Promise((resolve) => setImmediate(resolve)));
    if (cell.lateError !== undefined) throw cell.lateError;
    output.flush();
    if (value !== undefined) {
      send(MSG.RESULT, id, { execution_count: count, data: { 'text/plain': formatValue(value) } });
    }
  } catch (err) {
    status = 'error';
    output.flush();
    send(MSG.EXEC_ERROR, id, errorBody(err));
  } finally {
    output.end();
    cell.interrupt = null;
    if (code.trim() !== '') state.count++;
    // As E2B's server after the cell (_reset_env_vars_code): a sandbox-wide
    // variable gets its sandbox value back, any other is deleted, whatever it
    // was before the cell.
    for (const k of Object.keys(envs || {})) {
      if (state.sandboxEnvs && Object.prototype.hasOwnProperty.call(state.sandboxEnvs, k)) {
        process.env[k] = state.sandboxEnvs[k];
      } else delete process.env[k];
    }
    state.running = null;
  }
  send(MSG.X_END, id, { status, execution_count: count });
}

async function drain() {
  while (state.queue.length && !state.running) {
    const [id, body] = state.queue.shift();
    await execute(id, body);
  }
}

let assigned = !spare;

// The spare's context: enter its directory (as the sandbox user) and answer the
// zygote; X_READY then goes to the agent, which holds the other end by now.
function assign(raw) {
  let body = {};
  try {
    body = cbor.decode(raw);
  } catch (e) {
    // an empty assignment: the default language, the current directory
  }
  if (body.language === 'typescript' || body.language === 'javascript') language = body.language;
  let errno = 0;
  if (typeof body.cwd === 'string' && body.cwd !== '') {
    try {
      process.chdir(body.cwd);
    } catch (e) {
      errno = Math.abs(e.errno || 0) || 13;
    }
  }
  send(MSG.X_ASSIGNED, 0, errno ? { errno } : {});
  if (errno) process.exit(0);
  assigned = true;
  refreshGlobals();
  send(MSG.X_READY, 0, { pid: process.pid });
  warmSoon();
}

// While the client sends its first cell: a cell that arrives first waits for it.
function warmSoon() {
  setImmediate(() => transform.warm(language));
}

function onMessage(type, id, raw) {
  if (!assigned) {
    if (type === MSG.X_ASSIGN) assign(raw);
    else output.log(`cellvm-node: spare: ignoring message type 0x${type.toString(16)}`);
    return;
  }
  if (type !== MSG.X_EXECUTE) {
    output.log(`cellvm-node: ignoring message type 0x${type.toString(16)}`);
    return;
  }
  let body;
  try {
    body = cbor.decode(raw);
  } catch (e) {
    body = {};
  }
  state.queue.push([id, body && typeof body === 'object' ? body : {}]);
  drain().catch((e) => output.log(`cellvm-node: ${e.stack || e}`));
}

// ---------------------------------------------------------------- process-wide events

// SIGINT ends the running cell (a synchronous loop is stopped by V8 through
// breakOnSigint; an awaited promise is abandoned here); between cells it does nothing.
process.on('SIGINT', () => {
  const cell = state.running;
  if (cell && cell.interrupt) {
    const err = new Error(INTERRUPTED);
    err.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
    err.stack = `Error: ${INTERRUPTED}`;
    cell.interrupt(err);
  }
});

// An error thrown later by a cell's callback (a timer, an event) ends the cell
// still running with it, else shows on stderr; the context lives on.
function lateError(err) {
  const cell = state.running;
  if (cell) {
    if (cell.lateError === undefined) cell.lateError = err;
    if (cell.interrupt) cell.interrupt(err);
    return;
  }
  const b = errorBody(err);
  output.log(b.traceback.length ? b.traceback.join('\n') : `${b.name}: ${b.value}`);
}
process.on('uncaughtException', lateError);
process.on('unhandledRejection', lateError);

// ---------------------------------------------------------------- start

function start() {
  const reader = new frame.Reader(onMessage);
  const sock = new net.Socket({ fd: CTL_FD, readable: true, writable: false });
  sock.on('data', (chunk) => {
    try {
      reader.feed(chunk);
    } catch (e) {
      output.log(`cellvm-node: control socket: ${e.message}`);
      process.exit(1);
    }
  });
  // The agent closed its end: the context is gone.
  sock.on('end', () => process.exit(0));
  sock.on('error', () => process.exit(1));
  if (spare) {
    // What the next context needs, done while none waits: the parser, a first
    // compile, TypeScript's compiler if the last context was TypeScript.
    transform.prepare('await 0', language);
    new vm.Script('0').runInThisContext();
    return;
  }
  refreshGlobals();
  send(MSG.X_READY, 0, { pid: process.pid });
  warmSoon();
}

start();
