'use strict';
// A small CBOR (RFC 8949) codec for the executor protocol (docs/PROTOCOL.md
// section 2): maps with text keys, text, byte strings, integers, floats,
// booleans, null and arrays. Plain JavaScript: the driver runs in the image's
// Node.js without any package of its own.

// Deepest nesting accepted when decoding (bounded input from the agent).
const MAX_DEPTH = 64;

class Encoder {
  constructor() {
    this.buf = Buffer.allocUnsafe(256);
    this.len = 0;
  }

  reserve(n) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  head(major, n) {
    this.reserve(9);
    const m = major << 5;
    if (n < 24) {
      this.buf[this.len++] = m | n;
    } else if (n < 0x100) {
      this.buf[this.len++] = m | 24;
      this.buf[this.len++] = n;
    } else if (n < 0x10000) {
      this.buf[this.len++] = m | 25;
      this.buf.writeUInt16BE(n, this.len);
      this.len += 2;
    } else if (n < 0x100000000) {
      this.buf[this.len++] = m | 26;
      this.buf.writeUInt32BE(n, this.len);
      this.len += 4;
    } else {
      this.buf[this.len++] = m | 27;
      this.buf.writeBigUInt64BE(BigInt(n), this.len);
      this.len += 8;
    }
  }

  bytes(major, b) {
    this.head(major, b.length);
    this.reserve(b.length);
    b.copy(this.buf, this.len);
    this.len += b.length;
  }

  value(v) {
    switch (typeof v) {
      case 'string':
        this.bytes(3, Buffer.from(v, 'utf8'));
        return;
      case 'number':
        if (Number.isSafeInteger(v)) {
          if (v >= 0) this.head(0, v);
          else this.head(1, -1 - v);
        } else {
          this.reserve(9);
          this.buf[this.len++] = 0xfb;
          this.buf.writeDoubleBE(v, this.len);
          this.len += 8;
        }
        return;
      case 'bigint':
        if (v >= 0n) this.head(0, v);
        else this.head(1, -1n - v);
        return;
      case 'boolean':
        this.reserve(1);
        this.buf[this.len++] = v ? 0xf5 : 0xf4;
        return;
      case 'undefined':
        this.reserve(1);
        this.buf[this.len++] = 0xf6;
        return;
      default:
        break;
    }
    if (v === null) {
      this.reserve(1);
      this.buf[this.len++] = 0xf6;
    } else if (Buffer.isBuffer(v) || v instanceof Uint8Array) {
      this.bytes(2, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
    } else if (Array.isArray(v)) {
      this.head(4, v.length);
      for (const x of v) this.value(x);
    } else if (v instanceof Map) {
      this.head(5, v.size);
      for (const [k, x] of v) {
        this.value(k);
        this.value(x);
      }
    } else {
      const keys = Object.keys(v);
      this.head(5, keys.length);
      for (const k of keys) {
        this.value(k);
        this.value(v[k]);
      }
    }
  }
}

function encode(v) {
  const e = new Encoder();
  e.value(v);
  return e.buf.subarray(0, e.len);
}

class Decoder {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }

  need(n) {
    if (this.pos + n > this.buf.length) throw new Error('CBOR: truncated item');
  }

  arg(info) {
    if (info < 24) return info;
    switch (info) {
      case 24:
        this.need(1);
        return this.buf[this.pos++];
      case 25:
        this.need(2);
        this.pos += 2;
        return this.buf.readUInt16BE(this.pos - 2);
      case 26:
        this.need(4);
        this.pos += 4;
        return this.buf.readUInt32BE(this.pos - 4);
      case 27: {
        this.need(8);
        const big = this.buf.readBigUInt64BE(this.pos);
        this.pos += 8;
        return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      }
      case 31:
        return -1; // indefinite length
      default:
        throw new Error('CBOR: bad additional information ' + info);
    }
  }

  chunks(major, info, depth) {
    const n = this.arg(info);
    if (n !== -1) {
      if (typeof n !== 'number') throw new Error('CBOR: string too long');
      this.need(n);
      this.pos += n;
      return this.buf.subarray(this.pos - n, this.pos);
    }
    const parts = [];
    for (;;) {
      this.need(1);
      if (this.buf[this.pos] === 0xff) {
        this.pos++;
        return Buffer.concat(parts);
      }
      const ib = this.buf[this.pos++];
      if (ib >> 5 !== major || (ib & 31) === 31) throw new Error('CBOR: bad string chunk');
      parts.push(this.chunks(major, ib & 31, depth + 1));
    }
  }

  item(depth) {
    if (depth > MAX_DEPTH) throw new Error('CBOR: nested too deep');
    this.need(1);
    const ib = this.buf[this.pos++];
    const major = ib >> 5;
    const info = ib & 31;
    switch (major) {
      case 0: {
        const n = this.arg(info);
        if (n === -1) throw new Error('CBOR: indefinite integer');
        return n;
      }
      case 1: {
        const n = this.arg(info);
        if (n === -1) throw new Error('CBOR: indefinite integer');
        return typeof n === 'bigint' ? -1n - n : -1 - n;
      }
      case 2:
        return Buffer.from(this.chunks(2, info, depth));
      case 3:
        return this.chunks(3, info, depth).toString('utf8');
      case 4: {
        const n = this.arg(info);
        const out = [];
        if (n === -1) {
          while (this.peekBreak() === false) out.push(this.item(depth + 1));
        } else {
          for (let i = 0; i < n; i++) out.push(this.item(depth + 1));
        }
        return out;
      }
      case 5: {
        const n = this.arg(info);
        const out = {};
        const put = () => {
          const k = this.item(depth + 1);
          const v = this.item(depth + 1);
          if (typeof k === 'string') out[k] = v;
        };
        if (n === -1) {
          while (this.peekBreak() === false) put();
        } else {
          for (let i = 0; i < n; i++) put();
        }
        return out;
      }
      case 6:
        this.arg(info); // tags: the tagged item stands for itself
        return this.item(depth + 1);
      default:
        return this.simple(info);
    }
  }

  peekBreak() {
    this.need(1);
    if (this.buf[this.pos] !== 0xff) return false;
    this.pos++;
    return true;
  }

  simple(info) {
    switch (info) {
      case 20:
        return false;
      case 21:
        return true;
      case 22:
        return null;
      case 23:
        return undefined;
      case 25: {
        this.need(2);
        const h = this.buf.readUInt16BE(this.pos);
        this.pos += 2;
        return halfToNumber(h);
      }
      case 26:
        this.need(4);
        this.pos += 4;
        return this.buf.readFloatBE(this.pos - 4);
      case 27:
        this.need(8);
        this.pos += 8;
        return this.buf.readDoubleBE(this.pos - 8);
      default:
        if (info < 20) return undefined;
        if (info === 24) {
          this.need(1);
          this.pos++;
          return undefined;
        }
        throw new Error('CBOR: bad simple value ' + info);
    }
  }
}

function halfToNumber(h) {
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  const sign = h & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

// Decodes one item filling `buf` exactly; an empty body is the empty map.
function decode(buf) {
  if (buf.length === 0) return {};
  const d = new Decoder(buf);
  const v = d.item(0);
  if (d.pos !== buf.length) throw new Error('CBOR: trailing bytes');
  return v;
}

module.exports = { encode, decode };
