'use strict';
// process.stdout and process.stderr of the executor: synchronous writers. While
// a cell runs, what it writes goes to the agent as STREAM messages (in order
// with its results and errors); otherwise to fds 1 and 2, the context's pipes.
// Node's own stream for a pipe would set O_NONBLOCK on it, under every
// subprocess that shares it, and queue output in memory while a loop runs.

const fs = require('fs');
const { Writable } = require('stream');
const { StringDecoder } = require('string_decoder');

// One sleep while a non-blocking fd is full (the agent reads it soon).
const FULL_WAIT_MS = 1;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(sleeper, 0, 0, FULL_WAIT_MS);
    }
  }
}

let sink = null; // (name, text) while a cell runs
const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };

function toBuffer(chunk, encoding) {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.from(String(chunk), typeof encoding === 'string' && Buffer.isEncoding(encoding) ? encoding : 'utf8');
}

function emit(name, fd, buf) {
  if (sink === null) {
    writeAll(fd, buf);
    return;
  }
  const text = decoders[name].write(buf);
  if (text) sink(name, text);
}

function makeStream(name, fd) {
  const s = new Writable({
    decodeStrings: false,
    write(chunk, encoding, cb) {
      try {
        emit(name, fd, toBuffer(chunk, encoding));
        cb();
      } catch (e) {
        cb(e);
      }
    },
  });
  s.fd = fd;
  s.isTTY = false;
  s._type = 'pipe';
  s._isStdio = true;
  s.destroySoon = s.destroy;
  // Ending process.stdout must not close the context's pipe.
  s._destroy = (err, cb) => cb(err);
  return s;
}

function install() {
  const out = makeStream('stdout', 1);
  const err = makeStream('stderr', 2);
  Object.defineProperty(process, 'stdout', { value: out, configurable: true, enumerable: true, writable: false });
  Object.defineProperty(process, 'stderr', { value: err, configurable: true, enumerable: true, writable: false });
}

function begin(fn) {
  sink = fn;
}

// What is left of a cut UTF-8 sequence goes out now (as U+FFFD).
function flush() {
  if (sink === null) return;
  for (const name of ['stdout', 'stderr']) {
    const text = decoders[name].end();
    if (text) sink(name, text);
  }
}

function end() {
  flush();
  sink = null;
}

// The driver's own diagnostics: to the context's stderr pipe (the agent logs it).
function log(text) {
  try {
    writeAll(2, Buffer.from(text.endsWith('\n') ? text : text + '\n'));
  } catch (e) {
    // nowhere left to say it
  }
}

module.exports = { install, begin, flush, end, log, writeAll };
