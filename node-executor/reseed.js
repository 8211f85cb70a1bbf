'use strict';
// What a copy of a snapshot redoes in a live Node.js (docs/SNAPSHOTS.md): the
// agent's epoch comes with each X_EXECUTE (docs/PROTOCOL.md section 8); when
// it is not the one this process started in (`--epoch N`), the process was
// copied with everything in it and reseeds before the cell.
//
// V8 keeps Math.random's xorshift state in the context, seeded once, and has
// no way to reseed it: Math.random becomes a function with the same contract
// (a double in [0, 1) with 53 random bits) that draws from the kernel
// (/dev/urandom, fresh in each copy once NEW_GENERATION reseeded its CRNG).
// crypto.* draws from OpenSSL's generator inside this process, which Node.js
// gives no way to reseed either: docs/SNAPSHOTS.md says what that means.

const fs = require('fs');

const nativeRandom = Math.random;
const POOL_WORDS = 1024; // 4 KiB of the kernel's randomness per read: 512 numbers
const pool = new Uint32Array(POOL_WORDS);
const poolBytes = new Uint8Array(pool.buffer);
let pos = POOL_WORDS;
let urandom = -1;

function refill() {
  if (urandom < 0) urandom = fs.openSync('/dev/urandom', 'r');
  for (let got = 0; got < poolBytes.length; ) {
    got += fs.readSync(urandom, poolBytes, got, poolBytes.length - got, null);
  }
  pos = 0;
}

// 27 + 26 bits, as V8's own doubles are made: uniform on multiples of 2^-53.
function random() {
  if (pos + 2 > POOL_WORDS) refill();
  const hi = pool[pos++] >>> 5;
  const lo = pool[pos++] >>> 6;
  return (hi * 67108864 + lo) / 9007199254740992;
}

let epoch = null;

// The epoch this process started in (the zygote's, from argv).
function start(argv) {
  const i = argv.indexOf('--epoch');
  const n = i >= 0 ? Number(argv[i + 1]) : NaN;
  epoch = Number.isSafeInteger(n) ? n : null;
}

function reseed() {
  pos = POOL_WORDS; // what the pool held was copied too
  // A program's own Math.random (it replaced V8's) is its to keep.
  if (Math.random === nativeRandom) {
    Object.defineProperty(Math, 'random', { value: random, writable: true, enumerable: false, configurable: true });
  }
}

// An X_EXECUTE's body: reseeds if its epoch is not this process's; true if it did.
function beforeCell(body) {
  const e = body && typeof body.epoch === 'number' ? body.epoch : null;
  if (e === null || e === epoch) return false;
  reseed();
  epoch = e;
  return true;
}

module.exports = { start, beforeCell, random };
