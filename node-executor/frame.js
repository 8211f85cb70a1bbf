'use strict';
// Frames of docs/PROTOCOL.md section 2: a 12-byte big-endian header
// (length, type, flags, request id) and a CBOR body; bodies over the frame cap
// travel as several frames with the MORE flag.

const HEADER = 12;
const FRAME_MAX = 4 * 1024 * 1024; // header included
const BODY_MAX = FRAME_MAX - HEADER;
const FLAG_MORE = 1;
// Largest reassembled message accepted (the agent's max_message).
const MESSAGE_MAX = 64 * 1024 * 1024;

// The frames of one message as a list of buffers.
function encodeMessage(type, id, body) {
  const out = [];
  let off = 0;
  do {
    const n = Math.min(BODY_MAX, body.length - off);
    const h = Buffer.allocUnsafe(HEADER);
    h.writeUInt32BE(n, 0);
    h.writeUInt16BE(type, 4);
    h.writeUInt16BE(off + n < body.length ? FLAG_MORE : 0, 6);
    h.writeUInt32BE(id >>> 0, 8);
    out.push(h, body.subarray(off, off + n));
    off += n;
  } while (off < body.length);
  return out;
}

// Feeds bytes in; calls onMessage(type, id, body) for each complete message.
class Reader {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.pending = Buffer.alloc(0);
    this.parts = [];
    this.partsLen = 0;
  }

  feed(chunk) {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= HEADER) {
      const len = this.pending.readUInt32BE(0);
      const type = this.pending.readUInt16BE(4);
      const flags = this.pending.readUInt16BE(6);
      const id = this.pending.readUInt32BE(8);
      if (len > BODY_MAX || (flags & ~FLAG_MORE) !== 0) throw new Error('bad frame header');
      if (this.pending.length < HEADER + len) break;
      const body = this.pending.subarray(HEADER, HEADER + len);
      this.pending = this.pending.subarray(HEADER + len);
      this.partsLen += len;
      if (this.partsLen > MESSAGE_MAX) throw new Error('message too large');
      this.parts.push(body);
      if (flags & FLAG_MORE) continue;
      const whole = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
      this.parts = [];
      this.partsLen = 0;
      this.onMessage(type, id, whole);
    }
  }
}

module.exports = { encodeMessage, Reader, MESSAGE_MAX };
