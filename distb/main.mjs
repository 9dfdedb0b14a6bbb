var __defProp = Object.defineProperty;
var __getOwnPropNames = Object.getOwnPropertyNames;
var __esm = (fn, res) => function __init() {
  return fn && (res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;
};
var __export = (target2, all) => {
  for (var name in all)
    __defProp(target2, name, { get: all[name], enumerable: true });
};

// dist/errors.js
var BRAND, GitwireError, pktBadLengthChar, pktBadLength, pktEof, clientGone, notARepo;
var init_errors = __esm({
  "dist/errors.js"() {
    "use strict";
    BRAND = Symbol.for("gitwire.error");
    GitwireError = class extends Error {
      code;
      /** message as sent on the wire (git's wording); defaults to `message`. */
      wire;
      exitCode;
      constructor(code, message, opts = {}) {
        super(message, opts.cause === void 0 ? void 0 : { cause: opts.cause });
        this.code = code;
        this.wire = opts.wire ?? message;
        this.exitCode = opts.exitCode ?? 128;
        this.name = "GitwireError";
      }
      get [BRAND]() {
        return true;
      }
      static [Symbol.hasInstance](x) {
        return typeof x === "object" && x !== null && x[BRAND] === true;
      }
      /** `fatal: <msg>` as git's die() prints it. */
      toCli() {
        return `fatal: ${this.message}
`;
      }
    };
    pktBadLengthChar = (hdr) => new GitwireError("GW_PKT_BAD_LENGTH_CHAR", `protocol error: bad line length character: ${hdr}`);
    pktBadLength = (len) => new GitwireError("GW_PKT_BAD_LENGTH", `protocol error: bad line length ${len}`);
    pktEof = () => new GitwireError("GW_PKT_EOF", "the remote end hung up unexpectedly");
    clientGone = (cause) => new GitwireError("GW_CLIENT_GONE", "the remote end hung up unexpectedly", { cause });
    notARepo = (dir) => new GitwireError("GW_NOT_A_REPO", `'${dir}' does not appear to be a git repository`);
  }
});

// dist/version.js
var version_exports = {};
__export(version_exports, {
  userAgent: () => userAgent,
  version: () => version
});
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
function version() {
  if (cached)
    return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const p = join(dir, "package.json");
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, "utf8"));
      if (pkg.name === "gitwire" && pkg.version)
        return cached = pkg.version;
    }
    dir = dirname(dir);
  }
  return cached = "0.0.0";
}
function userAgent(env = process.env) {
  const ua = env.GIT_USER_AGENT ?? `gitwire/${version()}`;
  let out = "";
  for (const ch of ua) {
    const c = ch.charCodeAt(0);
    out += c <= 32 || c >= 127 ? "." : ch;
  }
  return out;
}
var cached;
var init_version = __esm({
  "dist/version.js"() {
    "use strict";
  }
});

// dist/pktline/sink.js
import { writeSync } from "node:fs";
var sleeper, FdSink, StreamSink;
var init_sink = __esm({
  "dist/pktline/sink.js"() {
    "use strict";
    init_errors();
    sleeper = new Int32Array(new SharedArrayBuffer(4));
    FdSink = class {
      fd;
      stats = { writes: 0, bytes: 0 };
      retains = false;
      closed = false;
      backedUp = false;
      constructor(fd) {
        this.fd = fd;
      }
      write(buf) {
        if (this.closed)
          throw clientGone();
        let off = 0;
        while (off < buf.length) {
          let n;
          try {
            n = writeSync(this.fd, buf, off, buf.length - off);
          } catch (e) {
            const code = e.code;
            if (code === "EAGAIN") {
              Atomics.wait(sleeper, 0, 0, 1);
              continue;
            }
            this.closed = true;
            throw clientGone(e);
          }
          this.stats.writes++;
          this.stats.bytes += n;
          off += n;
        }
      }
      drained() {
        return Promise.resolve();
      }
    };
    StreamSink = class {
      stream;
      stats = { writes: 0, bytes: 0 };
      retains = true;
      backedUp = false;
      closed = false;
      waiters = [];
      closeCbs = [];
      constructor(stream) {
        this.stream = stream;
        const wake = () => {
          this.backedUp = false;
          const w = this.waiters;
          this.waiters = [];
          for (const f of w)
            f();
        };
        stream.on("drain", wake);
        const gone = () => {
          if (this.closed)
            return;
          this.closed = true;
          wake();
          for (const cb of this.closeCbs)
            cb();
        };
        stream.on("close", () => {
          if (!stream.writableFinished)
            gone();
        });
        stream.on("error", gone);
      }
      onClose(cb) {
        if (this.closed)
          cb();
        else
          this.closeCbs.push(cb);
      }
      write(buf) {
        if (this.closed || this.stream.destroyed) {
          this.closed = true;
          throw clientGone();
        }
        this.stats.writes++;
        this.stats.bytes += buf.length;
        if (!this.stream.write(buf))
          this.backedUp = true;
      }
      drained() {
        if (!this.backedUp || this.closed)
          return Promise.resolve();
        return new Promise((resolve7) => this.waiters.push(resolve7));
      }
    };
  }
});

// dist/pktline/codec.js
function putHeader(out, at, total) {
  out[at] = HEX[total >> 12 & 15];
  out[at + 1] = HEX[total >> 8 & 15];
  out[at + 2] = HEX[total >> 4 & 15];
  out[at + 3] = HEX[total & 15];
}
function encode(data) {
  const payload = typeof data === "string" ? Buffer.from(data) : data;
  if (payload.length > LARGE_PACKET_DATA_MAX) {
    throw new GitwireError("GW_PKT_TOO_LONG", "protocol error: impossibly long line");
  }
  const out = Buffer.allocUnsafe(payload.length + 4);
  putHeader(out, 0, payload.length + 4);
  payload.copy(out, 4);
  return out;
}
function hexVal(c) {
  if (c >= 48 && c <= 57)
    return c - 48;
  if (c >= 97 && c <= 102)
    return c - 87;
  if (c >= 65 && c <= 70)
    return c - 55;
  return -1;
}
function parseLength(buf, at = 0) {
  let v = 0;
  for (let i = 0; i < 4; i++) {
    const h = hexVal(buf[at + i]);
    if (h < 0)
      throw pktBadLengthChar(buf.subarray(at, at + 4).toString("latin1"));
    v = v << 4 | h;
  }
  if (v === 3 || v === 4)
    throw pktBadLength(v);
  if (v > LARGE_PACKET_MAX)
    throw pktBadLength(v - 4);
  return v;
}
function decode(buf) {
  if (buf.length < 4)
    return { status: "incomplete", need: 4 - buf.length };
  const len = parseLength(buf, 0);
  if (len === 0)
    return { status: "complete", packet: { kind: "flush" }, consumed: 4 };
  if (len === 1)
    return { status: "complete", packet: { kind: "delim" }, consumed: 4 };
  if (len === 2)
    return { status: "complete", packet: { kind: "response-end" }, consumed: 4 };
  if (buf.length < len)
    return { status: "incomplete", need: len - buf.length };
  return { status: "complete", packet: { kind: "data", data: buf.subarray(4, len) }, consumed: len };
}
var LARGE_PACKET_MAX, LARGE_PACKET_DATA_MAX, SIDEBAND_64K_MAX, SIDEBAND_MAX, FLUSH, DELIM, RESPONSE_END, HEX;
var init_codec = __esm({
  "dist/pktline/codec.js"() {
    "use strict";
    init_errors();
    LARGE_PACKET_MAX = 65520;
    LARGE_PACKET_DATA_MAX = 65516;
    SIDEBAND_64K_MAX = LARGE_PACKET_DATA_MAX - 1;
    SIDEBAND_MAX = 1e3 - 5;
    FLUSH = Buffer.from("0000");
    DELIM = Buffer.from("0001");
    RESPONSE_END = Buffer.from("0002");
    HEX = Buffer.from("0123456789abcdef");
  }
});

// dist/pktline/writer.js
var DEFAULT_LIMIT, EMPTY, PacketWriter;
var init_writer = __esm({
  "dist/pktline/writer.js"() {
    "use strict";
    init_codec();
    init_errors();
    DEFAULT_LIMIT = 64 * 1024;
    EMPTY = Buffer.alloc(0);
    PacketWriter = class {
      sink;
      limit;
      buf;
      used = 0;
      sideband = "none";
      /** v2 `sideband-all`: every packet of the response is framed on band 1 */
      sidebandAll = false;
      constructor(sink, limit = DEFAULT_LIMIT) {
        this.sink = sink;
        this.limit = limit;
        this.buf = Buffer.allocUnsafe(limit);
      }
      get stats() {
        return this.sink.stats;
      }
      get buffered() {
        return this.used;
      }
      room(n) {
        if (this.used + n > this.limit)
          this.push();
      }
      /** Append an already framed chunk (header included). */
      append(bytes) {
        if (bytes.length > this.limit) {
          this.push();
          this.sink.write(bytes);
          return;
        }
        this.room(bytes.length);
        bytes.copy(this.buf, this.used);
        this.used += bytes.length;
      }
      /** Reserve `total` bytes in the buffer and return the offset. */
      reserve(total) {
        this.room(total);
        const at = this.used;
        this.used += total;
        return at;
      }
      /** Buffer one data pkt-line. */
      data(payload) {
        if (this.sidebandAll)
          return this.band(1, typeof payload === "string" ? Buffer.from(payload) : payload);
        if (typeof payload === "string") {
          const n = Buffer.byteLength(payload);
          if (n > LARGE_PACKET_DATA_MAX)
            throw new GitwireError("GW_PKT_TOO_LONG", "protocol error: impossibly long line");
          const at2 = this.reserve(n + 4);
          putHeader(this.buf, at2, n + 4);
          this.buf.write(payload, at2 + 4, "utf8");
          return;
        }
        if (payload.length > LARGE_PACKET_DATA_MAX)
          throw new GitwireError("GW_PKT_TOO_LONG", "protocol error: impossibly long line");
        const total = payload.length + 4;
        if (total > this.limit) {
          const out = Buffer.allocUnsafe(total);
          putHeader(out, 0, total);
          payload.copy(out, 4);
          return this.append(out);
        }
        const at = this.reserve(total);
        putHeader(this.buf, at, total);
        payload.copy(this.buf, at + 4);
      }
      /** Buffer a data pkt-line whose payload is buf[start..end] followed by `tail`. */
      dataRegion(buf, start, end, tail) {
        const n = end - start + (tail ? tail.length : 0);
        if (this.sidebandAll || n + 4 > this.limit || n > LARGE_PACKET_DATA_MAX) {
          return this.dataParts(buf.subarray(start, end), tail ?? EMPTY);
        }
        if (this.used + n + 4 > this.limit)
          this.push();
        const at = this.used;
        putHeader(this.buf, at, n + 4);
        buf.copy(this.buf, at + 4, start, end);
        if (tail) {
          if (tail.length === 1)
            this.buf[at + 4 + end - start] = tail[0];
          else
            tail.copy(this.buf, at + 4 + end - start);
        }
        this.used = at + n + 4;
      }
      /** Buffer a data pkt-line made of several parts (no intermediate concat). */
      dataParts(...parts) {
        let n = 0;
        for (const p of parts)
          n += typeof p === "string" ? Buffer.byteLength(p) : p.length;
        if (n > LARGE_PACKET_DATA_MAX)
          throw new GitwireError("GW_PKT_TOO_LONG", "protocol error: impossibly long line");
        if (this.sidebandAll || n + 4 > this.limit) {
          const one = Buffer.allocUnsafe(n);
          let o2 = 0;
          for (const p of parts)
            o2 += typeof p === "string" ? one.write(p, o2, "utf8") : p.copy(one, o2);
          return this.data(one);
        }
        const at = this.reserve(n + 4);
        putHeader(this.buf, at, n + 4);
        let o = at + 4;
        for (const p of parts)
          o += typeof p === "string" ? this.buf.write(p, o, "utf8") : p.copy(this.buf, o);
      }
      control(pkt) {
        this.append(pkt);
      }
      /** Append a delim-pkt (buffered). */
      delim() {
        this.control(DELIM);
      }
      /** Append response-end (buffered). */
      responseEnd() {
        this.control(RESPONSE_END);
      }
      /** Append flush-pkt and write everything out in one call. */
      flush() {
        this.append(FLUSH);
        this.push();
      }
      /** Write out buffered bytes with no flush-pkt: used before waiting on the peer. */
      push() {
        if (this.used === 0)
          return;
        const out = this.buf.subarray(0, this.used);
        this.used = 0;
        if (this.sink.retains)
          this.buf = Buffer.allocUnsafe(this.limit);
        this.sink.write(out);
      }
      /** Raw bytes, not framed (pack data without sideband). */
      raw(bytes) {
        this.append(bytes);
      }
      get bandMax() {
        return this.sideband === "side-band" ? SIDEBAND_MAX : SIDEBAND_64K_MAX;
      }
      /** Frame data on a sideband channel, splitting at the band's maximum. */
      band(band, data) {
        const max = this.bandMax;
        for (let off = 0; off < data.length || off === 0 && data.length === 0; off += max) {
          const chunk = data.subarray(off, Math.min(off + max, data.length));
          const total = chunk.length + 5;
          const at = this.reserve(total);
          putHeader(this.buf, at, total);
          this.buf[at + 4] = band;
          chunk.copy(this.buf, at + 5);
          if (data.length === 0)
            break;
        }
      }
      /**
       * Send one band packet whose payload sits at frame[5..]; frame[0..5] is
       * filled in here. Header and payload always leave in the same write;
       * buffered bytes go out first when both would not fit.
       */
      /** Would bandFrame() hand a frame of this size to a sink that keeps it (so the caller must not reuse it)? */
      bandFrameRetains(size) {
        return size > this.limit && this.sink.retains;
      }
      bandFrame(band, frame) {
        putHeader(frame, 0, frame.length);
        frame[4] = band;
        if (frame.length + this.used > this.limit)
          this.push();
        if (frame.length > this.limit) {
          this.sink.write(frame);
          return;
        }
        frame.copy(this.buf, this.used);
        this.used += frame.length;
      }
      /** Progress text on band 2 (dropped when there is no sideband). */
      progress(msg) {
        if (this.sideband === "none")
          return;
        this.band(2, typeof msg === "string" ? Buffer.from(msg) : msg);
      }
      /**
       * git's packet_writer_error: band 3 when the writer frames every packet
       * (v2 sideband-all), `ERR msg` otherwise. Written at once.
       */
      error(msg) {
        if (this.sidebandAll)
          this.band(3, Buffer.from(msg));
        else
          this.data(`ERR ${msg}`);
        this.push();
      }
      /** Wait while the consumer is backed up (stream sinks). */
      async drained() {
        if (this.sink.backedUp)
          await this.sink.drained();
      }
    };
  }
});

// dist/pktline/reader.js
var PktReader;
var init_reader = __esm({
  "dist/pktline/reader.js"() {
    "use strict";
    init_codec();
    init_errors();
    PktReader = class {
      options;
      buf = Buffer.alloc(0);
      ended = false;
      peeked;
      iter;
      /** bytes consumed from the source as packets */
      consumed = 0;
      constructor(source, options = {}) {
        this.options = options;
        if (Buffer.isBuffer(source)) {
          this.buf = source;
          this.ended = true;
        } else {
          this.iter = source[Symbol.asyncIterator]();
        }
      }
      /** Bytes received from the source but not yet consumed as packets. */
      remainder() {
        return this.buf;
      }
      async fill() {
        if (this.ended || !this.iter)
          return false;
        this.options.beforeWait?.();
        let r;
        if (this.options.timeoutMs) {
          let timer;
          const t = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new GitwireError("GW_TIMEOUT", "timeout reading from the client")), this.options.timeoutMs);
          });
          try {
            r = await Promise.race([this.iter.next(), t]);
          } finally {
            clearTimeout(timer);
          }
        } else {
          r = await this.iter.next();
        }
        if (r.done) {
          this.ended = true;
          return false;
        }
        const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
        this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
        return true;
      }
      async peek() {
        if (this.peeked === void 0)
          this.peeked = await this.next();
        return this.peeked;
      }
      async read() {
        if (this.peeked !== void 0) {
          const p = this.peeked;
          this.peeked = void 0;
          return p;
        }
        return this.next();
      }
      /** Read a packet; end of input is an error ("the remote end hung up unexpectedly"). */
      async readPacket() {
        const p = await this.read();
        if (p.kind === "eof")
          throw pktEof();
        return p;
      }
      async next() {
        for (; ; ) {
          const r = decode(this.buf);
          if (r.status === "complete") {
            this.buf = this.buf.subarray(r.consumed);
            this.consumed += r.consumed;
            const p = r.packet;
            if (p.kind === "data") {
              let d = p.data;
              if (this.options.dieOnErr && d.length >= 4 && d.toString("latin1", 0, 4) === "ERR ") {
                throw new GitwireError("GW_PKT_REMOTE_ERR", `remote error: ${d.subarray(4).toString()}`);
              }
              if (this.options.chomp && d.length > 0 && d[d.length - 1] === 10)
                d = d.subarray(0, d.length - 1);
              return { kind: "data", data: d };
            }
            return p;
          }
          if (!await this.fill()) {
            if (this.buf.length === 0)
              return { kind: "eof" };
            throw pktEof();
          }
        }
      }
    };
  }
});

// dist/repo/config.js
import { readFileSync as readFileSync2 } from "node:fs";
import { dirname as dirname2, isAbsolute, join as join2, resolve } from "node:path";
import { homedir } from "node:os";
function canonicalKey(key) {
  const first = key.indexOf(".");
  const last = key.lastIndexOf(".");
  if (first < 0 || last === key.length - 1 || first === 0)
    throw configError(`key does not contain a section: ${key}`);
  if (first === last)
    return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}
function parseConfig(text, origin, scope, out, depth = 0) {
  let i = 0;
  const n = text.length;
  let line = 1;
  let section = "";
  const bad2 = () => configError(`bad config line ${line} in file ${origin}`);
  const peek = () => i < n ? text[i] : "";
  const next = () => {
    if (i >= n)
      return "\n";
    let c = text[i++];
    if (c === "\r" && text[i] === "\n") {
      c = "\n";
      i++;
    }
    if (c === "\n")
      line++;
    return c;
  };
  const isSpace = (c) => c === " " || c === "	" || c === "\n" || c === "\r" || c === "\v" || c === "\f";
  const isKeyChar = (c) => /[A-Za-z0-9-]/.test(c);
  const parseValue = () => {
    let v = "";
    let quote = false, comment = false, space = 0;
    for (; ; ) {
      const atEof = i >= n;
      const c = next();
      if (c === "\n") {
        if (quote)
          throw bad2();
        return v;
      }
      if (comment) {
        if (atEof)
          return v;
        continue;
      }
      if (isSpace(c) && !quote) {
        if (v.length)
          space++;
        continue;
      }
      if (!quote && (c === ";" || c === "#")) {
        comment = true;
        continue;
      }
      for (; space; space--)
        v += " ";
      if (c === "\\") {
        const e = next();
        switch (e) {
          case "\n":
            continue;
          case "t":
            v += "	";
            continue;
          case "b":
            v += "\b";
            continue;
          case "n":
            v += "\n";
            continue;
          case "\\":
          case '"':
            v += e;
            continue;
          default:
            throw bad2();
        }
      }
      if (c === '"') {
        quote = !quote;
        continue;
      }
      v += c;
    }
  };
  while (i < n) {
    const c = next();
    if (c === "\n" || isSpace(c))
      continue;
    if (c === "#" || c === ";") {
      while (i < n && next() !== "\n")
        ;
      continue;
    }
    if (c === "\uFEFF" && i === 1)
      continue;
    if (c === "[") {
      let name2 = "";
      for (; ; ) {
        const d = next();
        if (d === "\n")
          throw bad2();
        if (d === "]") {
          section = name2.toLowerCase();
          break;
        }
        if (isSpace(d)) {
          while (isSpace(peek()) && peek() !== "\n")
            next();
          if (next() !== '"')
            throw bad2();
          let sub = "";
          for (; ; ) {
            let e = next();
            if (e === "\n")
              throw bad2();
            if (e === '"')
              break;
            if (e === "\\") {
              e = next();
              if (e === "\n")
                throw bad2();
            }
            sub += e;
          }
          if (next() !== "]")
            throw bad2();
          section = `${name2.toLowerCase()}.${sub}`;
          break;
        }
        if (!isKeyChar(d) && d !== ".")
          throw bad2();
        name2 += d;
      }
      continue;
    }
    if (!/[A-Za-z]/.test(c))
      throw bad2();
    let name = c;
    while (isKeyChar(peek()))
      name += next();
    while (peek() === " " || peek() === "	")
      next();
    let value = null;
    if (peek() === "=") {
      next();
      value = parseValue();
    } else if (peek() === "\n" || peek() === "" || peek() === "#" || peek() === ";" || peek() === "\r") {
      if (peek() === "#" || peek() === ";")
        while (i < n && next() !== "\n")
          ;
      else if (i < n)
        next();
    } else
      throw bad2();
    if (!section)
      throw bad2();
    const key = `${section}.${name.toLowerCase()}`;
    out.push({ key, value, scope, origin });
    if (key === "include.path" && value !== null && depth < 10) {
      let p = value.startsWith("~/") ? join2(homedir(), value.slice(2)) : value;
      if (!isAbsolute(p))
        p = resolve(dirname2(origin), p);
      let inc;
      try {
        inc = readFileSync2(p, "utf8");
      } catch {
        inc = void 0;
      }
      if (inc !== void 0)
        parseConfig(inc, p, scope, out, depth + 1);
    }
  }
  return out;
}
function sqDequoteStep(s, at) {
  if (s[at] !== "'")
    return null;
  let out = "";
  let i = at + 1;
  for (; ; ) {
    const c = s[i];
    if (c === void 0)
      return null;
    if (c !== "'") {
      out += c;
      i++;
      continue;
    }
    i++;
    const d = s[i];
    if (d === void 0 || d === " " || d === "	" || d === "\n" || d === "=")
      return [out, i];
    if (d === "\\" && (s[i + 1] === "!" || s[i + 1] === "'") && s[i + 2] === "'") {
      out += s[i + 1];
      i += 3;
      continue;
    }
    return null;
  }
}
function parseParameter(text, out) {
  const eq = text.indexOf("=");
  const key = (eq < 0 ? text : text.slice(0, eq)).trim();
  if (!key)
    throw configError(`bogus config parameter: ${text}`);
  out.push({ key: canonicalKey(key), value: eq < 0 ? null : text.slice(eq + 1), scope: "command", origin: "command line" });
}
function parseCommandLineConfig(env) {
  const out = [];
  const count = env.GIT_CONFIG_COUNT;
  if (count !== void 0 && count !== "") {
    const k = Number(count);
    if (!Number.isInteger(k) || k < 0)
      throw configError("bogus count in GIT_CONFIG_COUNT");
    for (let j = 0; j < k; j++) {
      const key = env[`GIT_CONFIG_KEY_${j}`];
      if (key === void 0)
        throw configError(`missing config key GIT_CONFIG_KEY_${j}`);
      const value = env[`GIT_CONFIG_VALUE_${j}`];
      if (value === void 0)
        throw configError(`missing config value GIT_CONFIG_VALUE_${j}`);
      out.push({ key: canonicalKey(key), value, scope: "command", origin: "command line" });
    }
  }
  const s = env.GIT_CONFIG_PARAMETERS;
  if (s) {
    let i = 0;
    const bogus = () => configError("bogus format in GIT_CONFIG_PARAMETERS");
    while (i < s.length) {
      while (i < s.length && /\s/.test(s[i]))
        i++;
      if (i >= s.length)
        break;
      const r = sqDequoteStep(s, i);
      if (!r)
        throw bogus();
      const [word, after] = r;
      i = after;
      if (i >= s.length || /\s/.test(s[i])) {
        parseParameter(word, out);
        continue;
      }
      if (s[i] === "=") {
        i++;
        if (s[i] === "'") {
          const v = sqDequoteStep(s, i);
          if (!v || v[1] < s.length && !/\s/.test(s[v[1]]))
            throw bogus();
          out.push({ key: canonicalKey(word), value: v[0], scope: "command", origin: "command line" });
          i = v[1];
        } else if (i >= s.length || /\s/.test(s[i])) {
          out.push({ key: canonicalKey(word), value: null, scope: "command", origin: "command line" });
        } else
          throw bogus();
        continue;
      }
      throw bogus();
    }
  }
  return out;
}
function readOptional(path) {
  try {
    return readFileSync2(path, "utf8");
  } catch {
    return void 0;
  }
}
function parseBool(value, key = "value") {
  if (value === null)
    return true;
  const v = value.toLowerCase();
  if (v === "true" || v === "yes" || v === "on")
    return true;
  if (v === "false" || v === "no" || v === "off" || v === "")
    return false;
  const n = parseIntStrict(value);
  if (n !== void 0)
    return n !== 0;
  throw configError(`bad boolean config value '${value}' for '${key}'`);
}
function parseIntStrict(value) {
  const m = /^\s*([-+]?\d+)\s*([kKmMgG]?)$/.exec(value);
  if (!m)
    return void 0;
  const unit = m[2].toLowerCase();
  const mul = unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : 1;
  return Number(m[1]) * mul;
}
function parseInt_(value, key = "value") {
  const n = value === null ? void 0 : parseIntStrict(value);
  if (n === void 0)
    throw configError(`bad numeric config value '${value ?? ""}' for '${key}': invalid unit`);
  return n;
}
var configError, Config;
var init_config = __esm({
  "dist/repo/config.js"() {
    "use strict";
    init_errors();
    configError = (msg) => new GitwireError("GW_CONFIG", msg);
    Config = class _Config {
      entries;
      constructor(entries) {
        this.entries = entries;
      }
      /** Load system, global, repository and command-line config for a git dir. */
      static load(gitDir, env = process.env) {
        const out = [];
        if (!env.GIT_CONFIG_NOSYSTEM || !parseBool(env.GIT_CONFIG_NOSYSTEM)) {
          const sys = env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig";
          const t = readOptional(sys);
          if (t !== void 0)
            parseConfig(t, sys, "system", out);
        }
        if (env.GIT_CONFIG_GLOBAL !== void 0) {
          const t = env.GIT_CONFIG_GLOBAL ? readOptional(env.GIT_CONFIG_GLOBAL) : void 0;
          if (t !== void 0)
            parseConfig(t, env.GIT_CONFIG_GLOBAL, "global", out);
        } else {
          const home = env.HOME ?? homedir();
          const xdg = env.XDG_CONFIG_HOME ? join2(env.XDG_CONFIG_HOME, "git", "config") : join2(home, ".config", "git", "config");
          for (const p of [xdg, join2(home, ".gitconfig")]) {
            const t = readOptional(p);
            if (t !== void 0)
              parseConfig(t, p, "global", out);
          }
        }
        if (gitDir) {
          const p = join2(gitDir, "config");
          const t = readOptional(p);
          if (t !== void 0)
            parseConfig(t, p, "local", out);
        }
        out.push(...parseCommandLineConfig(env));
        return new _Config(out);
      }
      /** Last value wins, as in git. `undefined` if unset. */
      get(key) {
        const k = canonicalKey(key);
        for (let j = this.entries.length - 1; j >= 0; j--)
          if (this.entries[j].key === k)
            return this.entries[j].value;
        return void 0;
      }
      getEntry(key, protectedOnly = false) {
        const k = canonicalKey(key);
        for (let j = this.entries.length - 1; j >= 0; j--) {
          const e = this.entries[j];
          if (e.key === k && (!protectedOnly || e.scope !== "local" && e.scope !== "worktree"))
            return e;
        }
        return void 0;
      }
      getAll(key) {
        const k = canonicalKey(key);
        return this.entries.filter((e) => e.key === k).map((e) => e.value);
      }
      getString(key) {
        const v = this.get(key);
        if (v === null)
          throw configError(`missing value for '${canonicalKey(key)}'`);
        return v;
      }
      getBool(key, dflt) {
        const v = this.get(key);
        return v === void 0 ? dflt : parseBool(v, canonicalKey(key));
      }
      getInt(key, dflt) {
        const v = this.get(key);
        return v === void 0 ? dflt : parseInt_(v, canonicalKey(key));
      }
      /** Every entry in order, for callbacks that must see them all (hideRefs). */
      *each() {
        yield* this.entries;
      }
    };
  }
});

// dist/repo/discover.js
import { existsSync as existsSync2, readFileSync as readFileSync3, statSync } from "node:fs";
import { dirname as dirname3, isAbsolute as isAbsolute2, join as join3, resolve as resolve2 } from "node:path";
function isDir(p) {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
function readGitFile(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return void 0;
  }
  if (!st.isFile())
    return void 0;
  const text = readFileSync3(p, "utf8");
  const m = /^gitdir: (.*?)\s*$/m.exec(text);
  if (!m)
    return void 0;
  return isAbsolute2(m[1]) ? m[1] : resolve2(dirname3(p), m[1]);
}
function isGitDirectory(dir) {
  if (!existsSync2(join3(dir, "HEAD")))
    return false;
  let common = dir;
  const cd = join3(dir, "commondir");
  if (existsSync2(cd)) {
    const c = readFileSync3(cd, "utf8").trim();
    common = isAbsolute2(c) ? c : resolve2(dir, c);
  }
  return isDir(join3(common, "objects")) && isDir(join3(common, "refs"));
}
function commonDirOf(gitDir) {
  const cd = join3(gitDir, "commondir");
  if (!existsSync2(cd))
    return gitDir;
  const c = readFileSync3(cd, "utf8").trim();
  return isAbsolute2(c) ? c : resolve2(gitDir, c);
}
function locateRepository(dir, strict = false) {
  const candidates = strict ? [""] : ["/.git", "", ".git/.git", ".git"];
  const base = dir.length > 1 ? dir.replace(/\/+$/, "") : dir;
  for (const suffix of candidates) {
    const p = resolve2(base + suffix);
    let gd;
    if (isDir(p))
      gd = p;
    else
      gd = readGitFile(p);
    if (gd && isGitDirectory(gd)) {
      return { gitDir: gd, commonDir: commonDirOf(gd), bare: !suffix.endsWith("/.git") };
    }
  }
  throw notARepo(dir);
}
function discoverRepository(start, env = process.env) {
  if (env.GIT_DIR)
    return locateRepository(env.GIT_DIR, true);
  let dir = resolve2(start);
  for (; ; ) {
    for (const cand of [join3(dir, ".git"), dir]) {
      const gd = isDir(cand) ? cand : readGitFile(cand);
      if (gd && isGitDirectory(gd))
        return { gitDir: gd, commonDir: commonDirOf(gd), bare: cand === dir };
    }
    const up = dirname3(dir);
    if (up === dir)
      break;
    dir = up;
  }
  throw new GitwireError("GW_NOT_A_REPO", "not a git repository (or any of the parent directories): .git");
}
var init_discover = __esm({
  "dist/repo/discover.js"() {
    "use strict";
    init_errors();
  }
});

// dist/repo/hiderefs.js
function namespacePrefix(ns) {
  if (!ns)
    return "";
  const parts = ns.split("/").filter((p) => p.length > 0);
  return parts.map((p) => `refs/namespaces/${p}/`).join("");
}
var HideRefs;
var init_hiderefs = __esm({
  "dist/repo/hiderefs.js"() {
    "use strict";
    HideRefs = class _HideRefs {
      rules;
      constructor(patterns) {
        this.rules = patterns.map((p) => {
          let neg = false, full = false;
          if (p.startsWith("!")) {
            neg = true;
            p = p.slice(1);
          }
          if (p.startsWith("^")) {
            full = true;
            p = p.slice(1);
          }
          return { neg, full, pat: Buffer.from(p) };
        });
      }
      /** From config, for `section` ('uploadpack'): transfer.hiderefs and <section>.hiderefs in config order. */
      static fromConfig(config, section) {
        const pats = [];
        const own = `${section}.hiderefs`;
        for (const e of config.each()) {
          if (e.key === "transfer.hiderefs" || e.key === own) {
            if (e.value === null)
              continue;
            pats.push(e.value.replace(/\/+$/, ""));
          }
        }
        return new _HideRefs(pats);
      }
      get empty() {
        return this.rules.length === 0;
      }
      /** isHidden() on a region: the stripped name is buf[strippedAt..end], the full name buf[fullAt..end]. */
      isHiddenRegion(buf, strippedAt, fullAt, end) {
        for (let i = this.rules.length - 1; i >= 0; i--) {
          const r = this.rules[i];
          const at = r.full ? fullAt : strippedAt;
          const n = r.pat.length;
          if (end - at < n)
            continue;
          if (buf.compare(r.pat, 0, n, at, at + n) !== 0)
            continue;
          if (end - at === n || buf[at + n] === 47)
            return !r.neg;
        }
        return false;
      }
      /**
       * ref_is_hidden(): `name` is the namespace-stripped name, `full` the name
       * with the namespace prefix.
       */
      isHidden(name, full) {
        for (let i = this.rules.length - 1; i >= 0; i--) {
          const r = this.rules[i];
          const subject = r.full ? full : name;
          if (!subject)
            continue;
          const n = r.pat.length;
          if (subject.length < n)
            continue;
          if (subject.compare(r.pat, 0, n, 0, n) !== 0)
            continue;
          if (subject.length === n || subject[n] === 47)
            return !r.neg;
        }
        return false;
      }
    };
  }
});

// dist/repo/delta.js
function deltaVarint(d, pos) {
  let v = 0, shift = 0, c;
  do {
    if (pos >= d.length)
      throw corrupt("delta header truncated");
    c = d[pos++];
    v += (c & 127) * 2 ** shift;
    shift += 7;
  } while (c & 128);
  return [v, pos];
}
function deltaResultSize(d) {
  const [, p] = deltaVarint(d, 0);
  return deltaVarint(d, p)[0];
}
function applyDelta(base, delta) {
  let [srcSize, pos] = deltaVarint(delta, 0);
  if (srcSize !== base.length)
    throw corrupt("delta base size mismatch");
  let dstSize;
  [dstSize, pos] = deltaVarint(delta, pos);
  const out = Buffer.allocUnsafe(dstSize);
  let o = 0;
  while (pos < delta.length) {
    const op = delta[pos++];
    if (op & 128) {
      let off = 0, size = 0;
      if (op & 1)
        off = delta[pos++];
      if (op & 2)
        off |= delta[pos++] << 8;
      if (op & 4)
        off |= delta[pos++] << 16;
      if (op & 8)
        off = (off | delta[pos++] << 24) >>> 0;
      if (op & 16)
        size = delta[pos++];
      if (op & 32)
        size |= delta[pos++] << 8;
      if (op & 64)
        size |= delta[pos++] << 16;
      if (size === 0)
        size = 65536;
      if (off + size > base.length || o + size > dstSize)
        throw corrupt("delta copy out of range");
      base.copy(out, o, off, off + size);
      o += size;
    } else if (op) {
      if (o + op > dstSize || pos + op > delta.length)
        throw corrupt("delta insert out of range");
      delta.copy(out, o, pos, pos + op);
      o += op;
      pos += op;
    } else {
      throw corrupt("unexpected delta opcode 0");
    }
  }
  if (o !== dstSize)
    throw corrupt("delta result size mismatch");
  return out;
}
var corrupt;
var init_delta = __esm({
  "dist/repo/delta.js"() {
    "use strict";
    init_errors();
    corrupt = (msg) => new GitwireError("GW_OBJECT_CORRUPT", msg);
  }
});

// dist/repo/object-type.js
function typeName(t) {
  const n = NAMES[t];
  if (!n)
    throw new Error(`bad object type ${t}`);
  return n;
}
function typeFromName(n) {
  switch (n) {
    case "commit":
      return 1;
    case "tree":
      return 2;
    case "blob":
      return 3;
    case "tag":
      return 4;
    default:
      return void 0;
  }
}
var NAMES;
var init_object_type = __esm({
  "dist/repo/object-type.js"() {
    "use strict";
    NAMES = [void 0, "commit", "tree", "blob", "tag"];
  }
});

// dist/repo/pack-index.js
import { closeSync, fstatSync, openSync, readFileSync as readFileSync4, readSync } from "node:fs";
var IndexBytes, PackIndex;
var init_pack_index = __esm({
  "dist/repo/pack-index.js"() {
    "use strict";
    init_errors();
    IndexBytes = class _IndexBytes {
      length;
      whole;
      fd;
      windows = /* @__PURE__ */ new Map();
      static WINDOW = 64 * 1024;
      static MAX_WINDOWS = 256;
      constructor(length, whole, fd) {
        this.length = length;
        this.whole = whole;
        this.fd = fd;
      }
      static fromBuffer(b) {
        return new _IndexBytes(b.length, b);
      }
      window(w) {
        let b = this.windows.get(w);
        if (b) {
          this.windows.delete(w);
          this.windows.set(w, b);
          return b;
        }
        const len = Math.min(_IndexBytes.WINDOW, this.length - w * _IndexBytes.WINDOW);
        b = Buffer.allocUnsafe(len);
        let got = 0;
        while (got < len) {
          const n = readSync(this.fd, b, got, len - got, w * _IndexBytes.WINDOW + got);
          if (n <= 0)
            break;
          got += n;
        }
        this.windows.set(w, b);
        if (this.windows.size > _IndexBytes.MAX_WINDOWS)
          this.windows.delete(this.windows.keys().next().value);
        return b;
      }
      /** bytes [pos, pos+len): a view when they sit in one window */
      slice(pos, len) {
        if (this.whole)
          return this.whole.subarray(pos, pos + len);
        const w = Math.floor(pos / _IndexBytes.WINDOW);
        const off = pos - w * _IndexBytes.WINDOW;
        const win = this.window(w);
        if (off + len <= win.length)
          return win.subarray(off, off + len);
        const out = Buffer.allocUnsafe(len);
        for (let i = 0; i < len; ) {
          const ww = Math.floor((pos + i) / _IndexBytes.WINDOW);
          const o = pos + i - ww * _IndexBytes.WINDOW;
          const src = this.window(ww);
          const n = Math.min(len - i, src.length - o);
          src.copy(out, i, o, o + n);
          i += n;
        }
        return out;
      }
      u32(pos) {
        return this.whole ? this.whole.readUInt32BE(pos) : this.slice(pos, 4).readUInt32BE(0);
      }
      /** compare the index bytes [at, at+n) with target[0..n) (like Buffer.compare of index vs target) */
      cmp(target2, n, at) {
        if (this.whole)
          return this.whole.compare(target2, 0, n, at, at + n);
        return this.slice(at, n).compare(target2, 0, n, 0, n);
      }
      close() {
        if (this.fd !== void 0) {
          try {
            closeSync(this.fd);
          } catch {
          }
        }
      }
    };
    PackIndex = class _PackIndex {
      hashLen;
      path;
      count;
      version;
      namesAt;
      stride;
      // bytes between names
      offsAt;
      largeAt;
      buf;
      constructor(bytes, hashLen, path = "") {
        this.hashLen = hashLen;
        this.path = path;
        const buf = Buffer.isBuffer(bytes) ? IndexBytes.fromBuffer(bytes) : bytes;
        this.buf = buf;
        const bad2 = () => new GitwireError("GW_OBJECT_CORRUPT", `index file ${path} is corrupt`);
        if (buf.length >= 8 && buf.u32(0) === 4285812579) {
          if (buf.u32(4) !== 2)
            throw new GitwireError("GW_OBJECT_CORRUPT", `index file ${path} is version ${buf.u32(4)} and is not supported by this binary`);
          this.version = 2;
          this.count = buf.u32(8 + 255 * 4);
          this.namesAt = 8 + 256 * 4;
          this.stride = hashLen;
          this.offsAt = this.namesAt + this.count * hashLen + this.count * 4;
          this.largeAt = this.offsAt + this.count * 4;
          if (buf.length < this.largeAt + 2 * hashLen)
            throw bad2();
        } else {
          this.version = 1;
          this.count = buf.u32(255 * 4);
          this.namesAt = 256 * 4 + 4;
          this.stride = hashLen + 4;
          this.offsAt = 256 * 4;
          this.largeAt = 0;
          if (buf.length < 256 * 4 + this.count * this.stride + 2 * hashLen)
            throw bad2();
        }
      }
      /** Index files up to this size are read whole; larger ones through windows. */
      static wholeFileLimit = 16 * 1024 * 1024;
      static open(path, hashLen) {
        const fd = openSync(path, "r");
        const size = fstatSync(fd).size;
        if (size <= _PackIndex.wholeFileLimit) {
          closeSync(fd);
          return new _PackIndex(readFileSync4(path), hashLen, path);
        }
        try {
          return new _PackIndex(new IndexBytes(size, void 0, fd), hashLen, path);
        } catch (e) {
          closeSync(fd);
          throw e;
        }
      }
      close() {
        this.buf.close();
      }
      fanout(b) {
        const base = this.version === 2 ? 8 : 0;
        return b < 0 ? 0 : this.buf.u32(base + b * 4);
      }
      nameOffset(i) {
        return this.namesAt + i * this.stride;
      }
      /** Object id at position i (a view). */
      oid(i) {
        return this.buf.slice(this.nameOffset(i), this.hashLen);
      }
      /** Position of `oid`, or -1. */
      find(oid) {
        let lo = this.fanout(oid[0] - 1);
        let hi = this.fanout(oid[0]);
        const h = this.hashLen;
        while (lo < hi) {
          const mid = lo + hi >>> 1;
          const at = this.nameOffset(mid);
          const c = this.buf.cmp(oid, h, at);
          if (c === 0)
            return mid;
          if (c > 0)
            hi = mid;
          else
            lo = mid + 1;
        }
        return -1;
      }
      /** Positions whose ids start with the given hex prefix (at most `limit`). */
      findPrefix(prefix, oddNibble, limit) {
        const out = [];
        const first = prefix.length > 0 ? prefix[0] : oddNibble !== void 0 ? oddNibble << 4 : 0;
        let lo = prefix.length > 0 || oddNibble !== void 0 ? this.fanout(first - 1) : 0;
        const hiAll = prefix.length > 0 ? this.fanout(first) : this.count;
        let hi = hiAll;
        const n = prefix.length;
        while (lo < hi) {
          const mid = lo + hi >>> 1;
          const at = this.nameOffset(mid);
          if (this.buf.cmp(prefix, n, at) >= 0)
            hi = mid;
          else
            lo = mid + 1;
        }
        for (let i = lo; i < this.count && out.length < limit; i++) {
          const at = this.nameOffset(i);
          if (n > 0 && this.buf.cmp(prefix, n, at) !== 0)
            break;
          if (oddNibble !== void 0) {
            const nib = this.buf.slice(at + n, 1)[0] >> 4;
            if (nib < oddNibble)
              continue;
            if (nib > oddNibble)
              break;
          }
          out.push(i);
        }
        return out;
      }
      /** Pack offset of the object at position i. */
      offset(i) {
        if (this.version === 1)
          return this.buf.u32(this.offsAt + i * this.stride);
        const v = this.buf.u32(this.offsAt + i * 4);
        if (!(v & 2147483648))
          return v;
        const j = v & 2147483647;
        const at = this.largeAt + j * 8;
        return this.buf.u32(at) * 2 ** 32 + this.buf.u32(at + 4);
      }
    };
  }
});

// dist/repo/pack.js
import { closeSync as closeSync2, fstatSync as fstatSync2, openSync as openSync2, readSync as readSync2 } from "node:fs";
import { inflateSync, constants as zc } from "node:zlib";
function inflateOnce(raw, expect = 0) {
  return inflateSync(raw, { finishFlush: zc.Z_SYNC_FLUSH, chunkSize: Math.max(64, Math.min(expect + 1, 1 << 20)) });
}
var corrupt2, WINDOW, WINDOW_BUDGET, windows, windowBytes, lastKey, lastWin, packSeq, PackFile;
var init_pack = __esm({
  "dist/repo/pack.js"() {
    "use strict";
    init_errors();
    corrupt2 = (msg) => new GitwireError("GW_OBJECT_CORRUPT", msg);
    WINDOW = 256 * 1024;
    WINDOW_BUDGET = 256 * 1024 * 1024;
    windows = /* @__PURE__ */ new Map();
    windowBytes = 0;
    lastKey = -1;
    packSeq = 0;
    PackFile = class {
      packPath;
      index;
      hashLen;
      fd;
      size;
      sortedOffsets;
      constructor(packPath, index, hashLen) {
        this.packPath = packPath;
        this.index = index;
        this.hashLen = hashLen;
        this.fd = openSync2(packPath, "r");
        this.size = fstatSync2(this.fd).size;
        const hdr = this.read(0, 12);
        if (hdr.toString("latin1", 0, 4) !== "PACK") {
          closeSync2(this.fd);
          throw corrupt2(`file ${packPath} is not a GIT packfile`);
        }
      }
      close() {
        for (const key of this.windowKeys) {
          const w = windows.get(key);
          if (w) {
            windowBytes -= w.length;
            windows.delete(key);
          }
        }
        this.windowKeys.clear();
        if (lastKey >= this.id * 1e7 && lastKey < (this.id + 1) * 1e7) {
          lastKey = -1;
          lastWin = void 0;
        }
        this.index.close();
        try {
          closeSync2(this.fd);
        } catch {
        }
      }
      windowKeys = /* @__PURE__ */ new Set();
      /**
       * Bytes [pos, pos+len) of the pack. Reads go through a small cache of
       * aligned windows (as git maps pack windows), so neighbouring entries
       * cost no extra system call; what does not fit a window is read directly.
       */
      read(pos, len) {
        const w = Math.floor(pos / WINDOW);
        const end = Math.min(pos + len, this.size);
        if (end <= (w + 1) * WINDOW && end > pos) {
          const key = this.id * 1e7 + w;
          let win = key === lastKey ? lastWin : windows.get(key);
          if (win) {
            if (key !== lastKey) {
              windows.delete(key);
              windows.set(key, win);
            }
          } else {
            win = this.readDirect(w * WINDOW, WINDOW);
            windows.set(key, win);
            this.windowKeys.add(key);
            windowBytes += win.length;
            while (windowBytes > WINDOW_BUDGET) {
              const oldest = windows.keys().next().value;
              windowBytes -= windows.get(oldest).length;
              windows.delete(oldest);
            }
          }
          lastKey = key;
          lastWin = win;
          const off = pos - w * WINDOW;
          return win.subarray(off, off + (end - pos));
        }
        return this.readDirect(pos, len);
      }
      id = ++packSeq;
      readDirect(pos, len) {
        const n0 = Math.max(0, Math.min(len, this.size - pos));
        const b = Buffer.allocUnsafe(n0);
        let got = 0;
        while (got < n0) {
          const n = readSync2(this.fd, b, got, n0 - got, pos + got);
          if (n <= 0)
            break;
          got += n;
        }
        return got === n0 ? b : b.subarray(0, got);
      }
      header(offset, head) {
        const b = head ?? this.read(offset, 32 + this.hashLen);
        let p = 0;
        let c = b[p++];
        const type = c >> 4 & 7;
        let size = c & 15;
        let shift = 4;
        while (c & 128) {
          c = b[p++];
          size += (c & 127) * 2 ** shift;
          shift += 7;
        }
        const h = { type, size, dataAt: 0 };
        if (type === 6) {
          c = b[p++];
          let off = c & 127;
          while (c & 128) {
            c = b[p++];
            off = (off + 1) * 128 + (c & 127);
          }
          h.baseOffset = offset - off;
          if (h.baseOffset < 0)
            throw corrupt2(`delta base offset out of bound for ${this.packPath}`);
        } else if (type === 7) {
          h.baseOid = Buffer.from(b.subarray(p, p + this.hashLen));
          p += this.hashLen;
        } else if (type < 1 || type > 4) {
          throw corrupt2(`unknown object type ${type} at offset ${offset} in ${this.packPath}`);
        }
        h.dataAt = offset + p;
        return h;
      }
      /** Inflate the entry's zlib stream; `size` is the expected result size. */
      inflate(h) {
        let want = h.size + (h.size >>> 9) + 64;
        for (; ; ) {
          const raw = this.read(h.dataAt, want);
          let out;
          try {
            out = inflateOnce(raw, h.size);
          } catch (e) {
            throw corrupt2(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${e.message}`);
          }
          if (out.length === h.size)
            return out;
          if (out.length > h.size || raw.length < want)
            throw corrupt2(`inflated size mismatch in ${this.packPath} at ${h.dataAt}`);
          want *= 2;
        }
      }
      /** Inflate only the first bytes (for delta headers). */
      inflatePrefix(h, bytes) {
        const raw = this.read(h.dataAt, bytes + 64);
        try {
          return inflateOnce(raw, bytes);
        } catch (e) {
          throw corrupt2(`corrupt zlib data in ${this.packPath}: ${e.message}`);
        }
      }
      /** Offsets sorted ascending, built on first use (reverse index). */
      sorted() {
        if (!this.sortedOffsets) {
          const n = this.index.count;
          const a = new Float64Array(n);
          for (let i = 0; i < n; i++)
            a[i] = this.index.offset(i);
          a.sort();
          this.sortedOffsets = a;
        }
        return this.sortedOffsets;
      }
      /** Bytes the entry at `offset` takes in the pack (for %(objectsize:disk)). */
      diskSize(offset) {
        const a = this.sorted();
        let lo = 0, hi = a.length;
        while (lo < hi) {
          const m = lo + hi >>> 1;
          if (a[m] <= offset)
            lo = m + 1;
          else
            hi = m;
        }
        const next = lo < a.length ? a[lo] : this.size - this.hashLen;
        return next - offset;
      }
      /** Index positions in pack order (for --unordered). */
      positionsInPackOrder() {
        const n = this.index.count;
        const pos = new Uint32Array(n);
        for (let i = 0; i < n; i++)
          pos[i] = i;
        const off = new Float64Array(n);
        for (let i = 0; i < n; i++)
          off[i] = this.index.offset(i);
        return pos.sort((a, b) => off[a] - off[b]);
      }
    };
  }
});

// dist/repo/midx.js
import { readFileSync as readFileSync5 } from "node:fs";
var MultiPackIndex;
var init_midx = __esm({
  "dist/repo/midx.js"() {
    "use strict";
    init_errors();
    MultiPackIndex = class _MultiPackIndex {
      buf;
      hashLen;
      path;
      packNames = [];
      count;
      fanoutAt;
      oidsAt;
      offsAt;
      largeAt;
      constructor(buf, hashLen, path = "") {
        this.buf = buf;
        this.hashLen = hashLen;
        this.path = path;
        const bad2 = (why) => new GitwireError("GW_OBJECT_CORRUPT", `multi-pack-index ${path} is corrupt: ${why}`);
        if (buf.length < 12 || buf.toString("latin1", 0, 4) !== "MIDX")
          throw bad2("signature");
        if (buf[4] !== 1)
          throw bad2(`version ${buf[4]}`);
        const chunks = buf[6];
        if (buf[7] !== 0)
          throw bad2("incremental chains are not supported");
        const packs = buf.readUInt32BE(8);
        const table = /* @__PURE__ */ new Map();
        for (let i = 0; i <= chunks; i++) {
          const at = 12 + i * 12;
          const id = buf.toString("latin1", at, at + 4);
          const off = buf.readUInt32BE(at + 4) * 2 ** 32 + buf.readUInt32BE(at + 8);
          if (i < chunks)
            table.set(id, off);
        }
        const need = (id) => {
          const o = table.get(id);
          if (o === void 0)
            throw bad2(`missing chunk ${id}`);
          return o;
        };
        let p = need("PNAM");
        for (let i = 0; i < packs; i++) {
          const end = buf.indexOf(0, p);
          this.packNames.push(buf.toString("utf8", p, end));
          p = end + 1;
        }
        this.fanoutAt = need("OIDF");
        this.count = buf.readUInt32BE(this.fanoutAt + 255 * 4);
        this.oidsAt = need("OIDL");
        this.offsAt = need("OOFF");
        this.largeAt = table.get("LOFF") ?? -1;
      }
      static open(path, hashLen) {
        return new _MultiPackIndex(readFileSync5(path), hashLen, path);
      }
      fanout(b) {
        return b < 0 ? 0 : this.buf.readUInt32BE(this.fanoutAt + b * 4);
      }
      /** Position of `oid`, or -1. */
      find(oid) {
        let lo = this.fanout(oid[0] - 1), hi = this.fanout(oid[0]);
        const h = this.hashLen;
        while (lo < hi) {
          const mid = lo + hi >>> 1;
          const at = this.oidsAt + mid * h;
          const c = this.buf.compare(oid, 0, h, at, at + h);
          if (c === 0)
            return mid;
          if (c > 0)
            hi = mid;
          else
            lo = mid + 1;
        }
        return -1;
      }
      /** The pack (by its .idx name) and offset of the object at position i. */
      location(i) {
        const at = this.offsAt + i * 8;
        const packId2 = this.buf.readUInt32BE(at);
        let off = this.buf.readUInt32BE(at + 4);
        if (off & 2147483648 && this.largeAt >= 0) {
          const j = off & 2147483647;
          off = this.buf.readUInt32BE(this.largeAt + j * 8) * 2 ** 32 + this.buf.readUInt32BE(this.largeAt + j * 8 + 4);
        }
        return { pack: this.packNames[packId2], offset: off };
      }
    };
  }
});

// dist/repo/odb.js
import { existsSync as existsSync3, opendirSync, readdirSync, readFileSync as readFileSync6, statSync as statSync2 } from "node:fs";
import { isAbsolute as isAbsolute3, join as join4, resolve as resolve3 } from "node:path";
import { inflateSync as inflateSync2, constants as zc2 } from "node:zlib";
function packId(p) {
  let id = packIds.get(p);
  if (id === void 0) {
    id = ++packSeq2;
    packIds.set(p, id);
  }
  return id;
}
function parseLooseHeader(buf, path) {
  const sp = buf.indexOf(32);
  const nul = buf.indexOf(0);
  if (sp < 0 || nul < sp)
    throw corrupt3(`loose object ${path} is corrupt`);
  const type = typeFromName(buf.toString("latin1", 0, sp));
  if (type === void 0)
    throw corrupt3(`loose object ${path} is corrupt`);
  return { type, size: Number(buf.toString("latin1", sp + 1, nul)), at: nul + 1 };
}
var corrupt3, DeltaBaseCache, packSeq2, packIds, ObjectDatabase;
var init_odb = __esm({
  "dist/repo/odb.js"() {
    "use strict";
    init_errors();
    init_delta();
    init_object_type();
    init_pack_index();
    init_pack();
    init_midx();
    corrupt3 = (msg) => new GitwireError("GW_OBJECT_CORRUPT", msg);
    DeltaBaseCache = class {
      limit;
      map = /* @__PURE__ */ new Map();
      head;
      // most recent
      tail;
      // least recent
      bytes = 0;
      constructor(limit) {
        this.limit = limit;
      }
      unlink(n) {
        if (n.prev)
          n.prev.next = n.next;
        else
          this.head = n.next;
        if (n.next)
          n.next.prev = n.prev;
        else
          this.tail = n.prev;
        n.prev = n.next = void 0;
      }
      pushFront(n) {
        n.next = this.head;
        if (this.head)
          this.head.prev = n;
        this.head = n;
        if (!this.tail)
          this.tail = n;
      }
      get(key) {
        const n = this.map.get(key);
        if (!n)
          return void 0;
        if (n !== this.head) {
          this.unlink(n);
          this.pushFront(n);
        }
        return n.value;
      }
      set(key, value) {
        if (value.data.length > this.limit / 4 || this.map.has(key))
          return;
        const n = { key, value };
        this.map.set(key, n);
        this.pushFront(n);
        this.bytes += value.data.length;
        while (this.bytes > this.limit && this.tail) {
          const t = this.tail;
          this.unlink(t);
          this.map.delete(t.key);
          this.bytes -= t.value.data.length;
        }
      }
    };
    packSeq2 = 0;
    packIds = /* @__PURE__ */ new WeakMap();
    ObjectDatabase = class {
      hashLen;
      sources = [];
      cache = new DeltaBaseCache(96 << 20);
      // git's core.deltaBaseCacheLimit default
      constructor(objectsDir, hashLen, extraAlternates = []) {
        this.hashLen = hashLen;
        this.addSource(resolve3(objectsDir), 0);
        for (const a of extraAlternates)
          this.addSource(resolve3(a), 1);
      }
      addSource(dir, depth) {
        if (this.sources.some((s) => s.objectsDir === dir) || !existsSync3(dir))
          return;
        const src = { objectsDir: dir, packs: [], packNames: /* @__PURE__ */ new Set(), byIdx: /* @__PURE__ */ new Map() };
        this.sources.push(src);
        this.scanPacks(src);
        if (depth >= 5)
          return;
        let alt;
        try {
          alt = readFileSync6(join4(dir, "info", "alternates"), "utf8");
        } catch {
          return;
        }
        for (let line of alt.split("\n")) {
          line = line.trim();
          if (!line || line.startsWith("#"))
            continue;
          if (line.startsWith('"') && line.endsWith('"'))
            line = JSON.parse(line);
          this.addSource(isAbsolute3(line) ? line : resolve3(dir, line), depth + 1);
        }
      }
      /** Open packs that appeared since the last scan. Returns how many. */
      scanPacks(src) {
        const dir = join4(src.objectsDir, "pack");
        let names;
        try {
          const d = opendirSync(dir);
          names = [];
          try {
            for (let e = d.readSync(); e; e = d.readSync())
              names.push(e.name);
          } finally {
            d.closeSync();
          }
        } catch {
          return 0;
        }
        let added = 0;
        if (names.includes("multi-pack-index")) {
          try {
            src.midx = MultiPackIndex.open(join4(dir, "multi-pack-index"), this.hashLen);
          } catch {
            src.midx = void 0;
          }
        } else
          src.midx = void 0;
        for (const n of names) {
          if (!n.endsWith(".idx") || src.packNames.has(n))
            continue;
          const base = n.slice(0, -4);
          if (!names.includes(`${base}.pack`))
            continue;
          try {
            const idx = PackIndex.open(join4(dir, n), this.hashLen);
            const pack = new PackFile(join4(dir, `${base}.pack`), idx, this.hashLen);
            src.packs.push(pack);
            src.packNames.add(n);
            src.byIdx.set(n, pack);
            added++;
          } catch (e) {
            if (e.code === "ENOENT")
              continue;
            throw e;
          }
        }
        return added;
      }
      rescan() {
        let added = 0;
        for (const s of this.sources)
          added += this.scanPacks(s);
        return added > 0;
      }
      loosePath(dir, hex) {
        return join4(dir, hex.slice(0, 2), hex.slice(2));
      }
      /** lookups answered by a multi-pack-index (observable for tests) */
      midxHits = 0;
      locateOnce(oid) {
        for (const s of this.sources) {
          if (s.midx) {
            const i = s.midx.find(oid);
            if (i >= 0) {
              const loc = s.midx.location(i);
              const pack = s.byIdx.get(loc.pack);
              if (pack) {
                this.midxHits++;
                return { kind: "packed", pack, pos: -1, offset: loc.offset };
              }
            }
          }
          for (const p of s.packs) {
            const pos = p.index.find(oid);
            if (pos >= 0)
              return { kind: "packed", pack: p, pos, offset: p.index.offset(pos) };
          }
        }
        const hex = oid.toString("hex");
        for (const s of this.sources) {
          const path = this.loosePath(s.objectsDir, hex);
          if (existsSync3(path))
            return { kind: "loose", path };
        }
        return void 0;
      }
      locate(oid) {
        const l = this.locateOnce(oid);
        if (l)
          return l;
        if (this.rescan())
          return this.locateOnce(oid);
        return void 0;
      }
      has(oid) {
        return this.locate(oid) !== void 0;
      }
      /** Read an object: one lookup gives type, size and content. */
      read(oid) {
        for (let attempt = 0; attempt < 2; attempt++) {
          const loc = this.locate(oid);
          if (!loc)
            return void 0;
          try {
            return this.readAt(loc);
          } catch (e) {
            if (e.code === "ENOENT" && attempt === 0) {
              this.rescan();
              continue;
            }
            throw e;
          }
        }
        return void 0;
      }
      readAt(loc) {
        if (loc.kind === "loose") {
          const raw = inflateSync2(readFileSync6(loc.path));
          const h = parseLooseHeader(raw, loc.path);
          const data = raw.subarray(h.at);
          if (data.length !== h.size)
            throw corrupt3(`loose object ${loc.path} is corrupt`);
          return { type: h.type, data };
        }
        return this.readPacked(loc.pack, loc.offset);
      }
      readPacked(pack, offset) {
        const chain = [];
        let cur = pack, off = offset;
        let base;
        for (let depth = 0; ; depth++) {
          if (depth > 1e4)
            throw corrupt3("delta chain too long");
          const key = `${packId(cur)}:${off}`;
          const cached2 = this.cache.get(key);
          if (cached2) {
            base = cached2;
            break;
          }
          const h = cur.header(off);
          if (h.type === 6) {
            chain.push({ pack: cur, h, key });
            off = h.baseOffset;
            continue;
          }
          if (h.type === 7) {
            chain.push({ pack: cur, h, key });
            const pos = cur.index.find(h.baseOid);
            if (pos >= 0) {
              off = cur.index.offset(pos);
              continue;
            }
            const b = this.read(h.baseOid);
            if (!b)
              throw corrupt3(`failed to read delta base object ${h.baseOid.toString("hex")}`);
            base = b;
            break;
          }
          base = { type: h.type, data: cur.inflate(h) };
          if (chain.length > 0)
            this.cache.set(key, base);
          break;
        }
        for (let i = chain.length - 1; i >= 0; i--) {
          const { pack: p, h, key } = chain[i];
          base = { type: base.type, data: applyDelta(base.data, p.inflate(h)) };
          if (i > 0)
            this.cache.set(key, base);
        }
        return base;
      }
      /** Type and size without reading content where the format allows. */
      info(oid, wantDisk = false) {
        const loc = this.locate(oid);
        if (!loc)
          return void 0;
        return this.infoAt(loc, wantDisk);
      }
      infoAt(loc, wantDisk = false) {
        if (loc.kind === "loose") {
          const file = readFileSync6(loc.path);
          const head = inflateSync2(file.subarray(0, Math.min(file.length, 256)), { finishFlush: zc2.Z_SYNC_FLUSH });
          const h2 = parseLooseHeader(head, loc.path);
          return { type: h2.type, size: h2.size, diskSize: file.length };
        }
        const { pack, offset } = loc;
        const h = pack.header(offset);
        const info = { type: h.type, size: h.size };
        if (wantDisk)
          info.diskSize = pack.diskSize(offset);
        if (h.type === 6 || h.type === 7) {
          info.size = deltaResultSize(pack.inflatePrefix(h, 32));
          if (h.type === 7)
            info.deltaBase = h.baseOid;
          else {
            const pos = this.positionOfOffset(pack, h.baseOffset);
            info.deltaBase = pos >= 0 ? Buffer.from(pack.index.oid(pos)) : void 0;
          }
          info.type = this.baseType(pack, h);
        }
        return info;
      }
      offsetMaps = /* @__PURE__ */ new WeakMap();
      positionOfOffset(pack, offset) {
        let m = this.offsetMaps.get(pack);
        if (!m) {
          m = /* @__PURE__ */ new Map();
          for (let i = 0; i < pack.index.count; i++)
            m.set(pack.index.offset(i), i);
          this.offsetMaps.set(pack, m);
        }
        return m.get(offset) ?? -1;
      }
      baseType(pack, h) {
        for (let depth = 0; depth < 1e4; depth++) {
          if (h.type === 6) {
            h = pack.header(h.baseOffset);
            continue;
          }
          if (h.type === 7) {
            const pos = pack.index.find(h.baseOid);
            if (pos >= 0) {
              h = pack.header(pack.index.offset(pos));
              continue;
            }
            const i = this.info(h.baseOid);
            if (!i)
              throw corrupt3(`failed to read delta base object ${h.baseOid.toString("hex")}`);
            return i.type;
          }
          return h.type;
        }
        throw corrupt3("delta chain too long");
      }
      /** Ids starting with a hex prefix (deduplicated), at most `limit`. */
      findByPrefix(hexPrefix, limit = 2) {
        const even = hexPrefix.length & ~1;
        const prefix = Buffer.from(hexPrefix.slice(0, even), "hex");
        const odd = hexPrefix.length & 1 ? parseInt(hexPrefix[even], 16) : void 0;
        const seen = /* @__PURE__ */ new Map();
        const add = (b) => {
          const k = b.toString("hex");
          if (!seen.has(k))
            seen.set(k, Buffer.from(b));
        };
        for (const s of this.sources) {
          for (const p of s.packs)
            for (const i of p.index.findPrefix(prefix, odd, limit + 1))
              add(p.index.oid(i));
          if (hexPrefix.length >= 2) {
            let names = [];
            try {
              names = readdirSync(join4(s.objectsDir, hexPrefix.slice(0, 2)));
            } catch {
            }
            const rest = hexPrefix.slice(2);
            for (const n of names)
              if (n.startsWith(rest) && n.length === this.hashLen * 2 - 2)
                add(Buffer.from(hexPrefix.slice(0, 2) + n, "hex"));
          }
          if (seen.size > limit)
            break;
        }
        return [...seen.values()].slice(0, Math.max(limit, seen.size));
      }
      /** Every object id, sorted and deduplicated (git cat-file --batch-all-objects). */
      allObjectsSorted() {
        const all = [];
        for (const s of this.sources) {
          for (const p of s.packs)
            for (let i = 0; i < p.index.count; i++)
              all.push(p.index.oid(i));
          for (let b = 0; b < 256; b++) {
            const d = b.toString(16).padStart(2, "0");
            let names;
            try {
              names = readdirSync(join4(s.objectsDir, d));
            } catch {
              continue;
            }
            for (const n of names)
              if (n.length === this.hashLen * 2 - 2 && /^[0-9a-f]+$/.test(n))
                all.push(Buffer.from(d + n, "hex"));
          }
        }
        all.sort(Buffer.compare);
        const out = [];
        for (const o of all)
          if (out.length === 0 || !out[out.length - 1].equals(o))
            out.push(o);
        return out;
      }
      /**
       * Every object in storage order, as `git cat-file --unordered`: loose
       * objects (directory order), then each pack in pack order. Each comes
       * with its location, so nothing is looked up twice.
       */
      *allObjectsUnordered() {
        for (const x of this.allObjectsWithLocation())
          yield x.oid;
      }
      *allObjectsWithLocation() {
        const packs = this.packsByAge();
        let loose = 0;
        const looseFirst = [];
        for (const s of this.sources) {
          for (let b = 0; b < 256; b++) {
            const d = b.toString(16).padStart(2, "0");
            let dir;
            try {
              dir = opendirSync(join4(s.objectsDir, d));
            } catch {
              continue;
            }
            try {
              for (let e = dir.readSync(); e; e = dir.readSync()) {
                if (e.name.length !== this.hashLen * 2 - 2)
                  continue;
                looseFirst.push({ oid: Buffer.from(d + e.name, "hex"), loc: { kind: "loose", path: join4(s.objectsDir, d, e.name) } });
                loose++;
              }
            } finally {
              dir.closeSync();
            }
          }
        }
        const dedupe = loose > 0 || packs.length > 1;
        const seen = /* @__PURE__ */ new Set();
        const once = (o) => {
          if (!dedupe)
            return true;
          const k = o.toString("latin1");
          if (seen.has(k))
            return false;
          seen.add(k);
          return true;
        };
        for (const x of looseFirst)
          if (once(x.oid))
            yield x;
        for (const p of packs) {
          for (const i of p.positionsInPackOrder()) {
            const o = p.index.oid(i);
            if (once(o))
              yield { oid: o, loc: { kind: "packed", pack: p, pos: i, offset: p.index.offset(i) } };
          }
        }
      }
      /** Local packs first, newest first (git's pack order). */
      packsByAge() {
        const out = [];
        this.sources.forEach((s, i) => {
          for (const p of s.packs) {
            let mtime = 0;
            try {
              mtime = statSync2(p.packPath).mtimeMs;
            } catch {
            }
            out.push({ p, local: i === 0, mtime });
          }
        });
        out.reverse();
        out.sort((a, b) => a.local !== b.local ? a.local ? -1 : 1 : Math.floor(b.mtime / 1e3) - Math.floor(a.mtime / 1e3));
        return out.map((x) => x.p);
      }
      close() {
        for (const s of this.sources)
          for (const p of s.packs)
            p.close();
      }
    };
  }
});

// dist/repo/objects.js
function hexAt(data, at, hexLen) {
  return Buffer.from(data.toString("latin1", at, at + hexLen), "hex");
}
function parseCommit(data, hashLen) {
  const hexLen = hashLen * 2;
  let p = 0;
  if (data.toString("latin1", 0, 5) !== "tree ")
    throw bad("commit");
  const tree = hexAt(data, 5, hexLen);
  p = 5 + hexLen + 1;
  const parents = [];
  while (data.toString("latin1", p, p + 7) === "parent ") {
    parents.push(hexAt(data, p + 7, hexLen));
    p += 7 + hexLen + 1;
  }
  let time = 0;
  for (; ; ) {
    const nl = data.indexOf(10, p);
    if (nl < 0 || nl === p)
      break;
    if (data.toString("latin1", p, p + 10) === "committer ") {
      const gt = data.lastIndexOf(62, nl);
      if (gt > 0) {
        const m = /^ (\d+)/.exec(data.toString("latin1", gt + 1, nl));
        if (m)
          time = Number(m[1]);
      }
      break;
    }
    p = nl + 1;
  }
  return { tree, parents, time };
}
function parseTag(data, hashLen) {
  const hexLen = hashLen * 2;
  if (data.toString("latin1", 0, 7) !== "object ")
    throw bad("tag");
  const object = hexAt(data, 7, hexLen);
  let p = 7 + hexLen + 1;
  if (data.toString("latin1", p, p + 5) !== "type ")
    throw bad("tag");
  const nl = data.indexOf(10, p);
  const type = typeFromName(data.toString("latin1", p + 5, nl));
  if (type === void 0)
    throw bad("tag");
  p = nl + 1;
  let tag = "";
  if (data.toString("latin1", p, p + 4) === "tag ") {
    const e = data.indexOf(10, p);
    tag = data.toString("utf8", p + 4, e < 0 ? data.length : e);
  }
  return { object, type, tag };
}
function* parseTree(data, hashLen) {
  let p = 0;
  while (p < data.length) {
    const sp = data.indexOf(32, p);
    const nul = data.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 1 + hashLen > data.length)
      throw bad("tree");
    const mode = parseInt(data.toString("latin1", p, sp), 8);
    yield { mode, name: data.subarray(sp + 1, nul), oid: data.subarray(nul + 1, nul + 1 + hashLen) };
    p = nul + 1 + hashLen;
  }
}
var bad;
var init_objects = __esm({
  "dist/repo/objects.js"() {
    "use strict";
    init_errors();
    init_object_type();
    bad = (what) => new GitwireError("GW_OBJECT_CORRUPT", `bad ${what} object`);
  }
});

// dist/repo/refs.js
import { closeSync as closeSync3, existsSync as existsSync4, fstatSync as fstatSync3, openSync as openSync3, readdirSync as readdirSync2, readFileSync as readFileSync7, readSync as readSync3, statSync as statSync3 } from "node:fs";
import { join as join5 } from "node:path";
function isHexByte(c) {
  return c >= 48 && c <= 57 || c >= 97 && c <= 102;
}
function validHex(b, len) {
  if (b.length !== len)
    return false;
  for (let i = 0; i < len; i++)
    if (!isHexByte(b[i]))
      return false;
  return true;
}
function isValidRefName(name) {
  if (!name || name.endsWith("/") || name.endsWith(".") || name.endsWith(".lock") || name.includes("..") || name.includes("@{"))
    return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name))
    return false;
  for (const comp of name.split("/"))
    if (comp === "" || comp.startsWith("."))
      return false;
  return name !== "@";
}
var CHUNK, HASH_HEX, RefStore, PackedRefsReader;
var init_refs = __esm({
  "dist/repo/refs.js"() {
    "use strict";
    init_errors();
    CHUNK = 1 << 20;
    HASH_HEX = /* @__PURE__ */ new Set([40, 64]);
    RefStore = class {
      gitDir;
      commonDir;
      hexLen;
      constructor(gitDir, commonDir, hashLen) {
        this.gitDir = gitDir;
        this.commonDir = commonDir;
        this.hexLen = hashLen * 2;
        if (!HASH_HEX.has(this.hexLen))
          throw new Error("bad hash length");
      }
      get packedPath() {
        return join5(this.commonDir, "packed-refs");
      }
      /** Read a loose ref file: hex id or `ref: <target>`; undefined if absent or junk. */
      readLoose(name) {
        const dir = name === "HEAD" || !name.startsWith("refs/") ? this.gitDir : this.commonDir;
        let raw;
        try {
          raw = readFileSync7(join5(dir, name));
        } catch {
          return void 0;
        }
        let end = raw.length;
        while (end > 0 && (raw[end - 1] === 10 || raw[end - 1] === 13 || raw[end - 1] === 32))
          end--;
        const body = raw.subarray(0, end);
        if (body.length > 5 && body.toString("latin1", 0, 5) === "ref: ") {
          return { symref: body.subarray(5).toString().trim() };
        }
        const hex = body.subarray(0, this.hexLen);
        if (!validHex(hex, this.hexLen))
          return void 0;
        return { hex };
      }
      /** The header traits of packed-refs (`peeled`, `fully-peeled`, `sorted`), from its first line. */
      packedTraits(fd) {
        const b = Buffer.alloc(256);
        const head = b.toString("latin1", 0, readSync3(fd, b, 0, 256, 0));
        const t = head.startsWith("#") ? ` ${head.split("\n")[0]} ` : "";
        return { peeled: t.includes(" peeled "), fullyPeeled: t.includes(" fully-peeled "), sorted: t.includes(" sorted ") };
      }
      /**
       * Find one ref in packed-refs: binary search with positional reads when
       * the file says it is sorted, a streamed scan otherwise. The record's
       * peelState reflects the file's traits.
       */
      lookupPacked(name) {
        let fd;
        try {
          fd = openSync3(this.packedPath, "r");
        } catch {
          return void 0;
        }
        try {
          const traits = this.packedTraits(fd);
          const known = (rec) => {
            if (rec.peelState === "unknown" && (traits.fullyPeeled || traits.peeled && name.startsWith("refs/tags/")))
              rec.peelState = "none";
            return rec;
          };
          if (!traits.sorted) {
            for (const r of this.packedRefs(Buffer.from(name)))
              if (r.name.toString() === name)
                return known(r);
            return void 0;
          }
          const size = fstatSync3(fd).size;
          const want = Buffer.from(name);
          const lineAt = (pos) => {
            let start = pos;
            const back = Buffer.allocUnsafe(512);
            while (start > 0) {
              const from = Math.max(0, start - 512);
              const n = readSync3(fd, back, 0, start - from, from);
              const idx = back.subarray(0, n).lastIndexOf(10);
              if (idx >= 0) {
                start = from + idx + 1;
                break;
              }
              start = from;
            }
            const buf = Buffer.allocUnsafe(4096);
            let len = 0;
            let out = Buffer.alloc(0);
            for (; ; ) {
              const n = readSync3(fd, buf, 0, buf.length, start + len);
              if (n <= 0)
                break;
              const nl = buf.subarray(0, n).indexOf(10);
              out = Buffer.concat([out, buf.subarray(0, nl >= 0 ? nl : n)]);
              len += nl >= 0 ? nl + 1 : n;
              if (nl >= 0)
                break;
            }
            if (len === 0)
              return void 0;
            return { line: out, next: start + len };
          };
          let lo = 0, hi = size;
          while (lo < hi) {
            const mid = lo + hi >>> 1;
            let r = lineAt(mid);
            if (!r) {
              hi = mid;
              continue;
            }
            let lineStart = r.next - r.line.length - 1;
            while (r && (r.line[0] === 35 || r.line[0] === 94)) {
              lineStart = r.next;
              r = r.next < size ? lineAt(r.next) : void 0;
            }
            if (!r || lineStart >= hi) {
              hi = mid;
              continue;
            }
            const refName = r.line.subarray(this.hexLen + 1);
            const c = Buffer.compare(refName, want);
            if (c === 0) {
              const rec = { name: want, hex: r.line.subarray(0, this.hexLen), peelState: "unknown" };
              const p = r.next < size ? lineAt(r.next) : void 0;
              if (p && p.line[0] === 94) {
                rec.peeled = p.line.subarray(1, 1 + this.hexLen);
                rec.peelState = "peeled";
              }
              return known(rec);
            }
            if (c < 0)
              lo = r.next;
            else
              hi = lineStart;
            if (lo >= hi)
              break;
            if (c < 0 && lo <= mid)
              lo = mid + 1;
          }
          return void 0;
        } finally {
          closeSync3(fd);
        }
      }
      /**
       * What packed-refs knows about peeling `name` (after following symrefs):
       * the peeled hex, 'none' when it is known not to peel, undefined when
       * only the object can tell (a loose ref, or no fully-peeled trait).
       */
      peeledFromPacked(name, depth = 0) {
        if (depth > 5)
          return void 0;
        const loose = this.readLoose(name);
        if (loose?.symref)
          return this.peeledFromPacked(loose.symref, depth + 1);
        if (loose?.hex)
          return void 0;
        const rec = this.lookupPacked(name);
        if (!rec)
          return void 0;
        if (rec.peelState === "peeled")
          return rec.peeled;
        return rec.peelState === "none" ? "none" : void 0;
      }
      /** Resolve a ref name to a hex id, following symrefs. */
      resolve(name, depth = 0) {
        if (depth > 5)
          return void 0;
        const loose = this.readLoose(name);
        if (loose?.symref) {
          const t = this.resolve(loose.symref, depth + 1);
          return t ? { hex: t.hex, target: t.target } : { target: loose.symref };
        }
        if (loose?.hex)
          return { hex: loose.hex, target: name };
        if (name.startsWith("refs/")) {
          const p = this.lookupPacked(name);
          if (p)
            return { hex: p.hex, target: name };
        }
        return void 0;
      }
      head() {
        const loose = this.readLoose("HEAD");
        if (!loose)
          return {};
        if (loose.symref) {
          const r = this.resolve(loose.symref);
          return { symref: loose.symref, hex: r?.hex };
        }
        return { hex: loose.hex };
      }
      /** Loose refs under refs/, sorted by name bytes. */
      looseRefs(prefix) {
        const out = [];
        const walk = (rel) => {
          let ents;
          try {
            ents = readdirSync2(join5(this.commonDir, rel), { withFileTypes: true });
          } catch {
            return;
          }
          for (const e of ents) {
            const name = `${rel}/${e.name}`;
            if (e.isDirectory()) {
              walk(name);
              continue;
            }
            if (!e.isFile() && !e.isSymbolicLink())
              continue;
            if (!isValidRefName(name))
              continue;
            if (!name.startsWith(prefix) && !prefix.startsWith(name))
              continue;
            const r = this.readLoose(name);
            if (!r)
              continue;
            if (r.symref) {
              const t = this.resolve(r.symref);
              if (!t?.hex)
                continue;
              out.push({ name: Buffer.from(name), hex: t.hex, peelState: "unknown", symref: r.symref });
            } else {
              out.push({ name: Buffer.from(name), hex: r.hex, peelState: "unknown" });
            }
          }
        };
        const dirPrefix = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "refs";
        walk(dirPrefix.startsWith("refs") ? dirPrefix : "refs");
        out.sort((a, b) => Buffer.compare(a.name, b.name));
        return out;
      }
      /** Stream packed-refs in chunks. Records' buffers are views into fresh chunks. */
      *packedRefs(prefix) {
        const r = PackedRefsReader.open(this.packedPath, this.hexLen);
        if (!r)
          return;
        try {
          const unsorted = [];
          while (r.next()) {
            const b = r.buf;
            if (prefix && (r.nameEnd - r.nameAt < prefix.length || b.compare(prefix, 0, prefix.length, r.nameAt, r.nameAt + prefix.length) !== 0))
              continue;
            const rec = {
              name: b.subarray(r.nameAt, r.nameEnd),
              hex: b.subarray(r.hexAt, r.hexAt + this.hexLen),
              peelState: r.peelState === 2 ? "peeled" : r.peelState === 1 ? "none" : "unknown"
            };
            if (r.peelState === 2)
              rec.peeled = r.peelBuf.subarray(r.peeledAt, r.peeledAt + this.hexLen);
            if (r.sorted)
              yield rec;
            else
              unsorted.push(rec);
          }
          if (!r.sorted) {
            unsorted.sort((x, y) => Buffer.compare(x.name, y.name));
            yield* unsorted;
          }
        } finally {
          r.close();
        }
      }
      /**
       * The hot path for advertisements: every ref under `prefix` in name
       * order (loose shadowing packed), handed over as regions of the bytes
       * read from disk. Nothing is allocated per packed ref. `peelState`:
       * 0 unknown (look the object up), 1 known not to peel, 2 `peeledAt` is set.
       */
      async scan(prefix, cb, pause) {
        const loose = this.looseRefs(prefix);
        let n = 0;
        const breathe = () => (++n & 1023) === 0 && pause ? pause() : void 0;
        const hexLen = this.hexLen;
        const pfx = Buffer.from(prefix);
        const plen = pfx.length;
        const allRefs = prefix === "refs/";
        let li = 0;
        const emitLoose = (l) => {
          if (l.name.length < plen || l.name.compare(pfx, 0, plen, 0, plen) !== 0)
            return;
          const b = Buffer.allocUnsafe(hexLen + 1 + l.name.length);
          l.hex.copy(b, 0);
          b[hexLen] = 32;
          l.name.copy(b, hexLen + 1);
          cb(b, 0, hexLen + 1, b.length, -1, 0, l.symref);
        };
        const r = PackedRefsReader.open(this.packedPath, hexLen);
        if (r) {
          try {
            while (r.next()) {
              if (!r.sorted)
                break;
              const b = r.buf, nameAt = r.nameAt, nameEnd = r.nameEnd;
              if (!allRefs && (nameEnd - nameAt < plen || b.compare(pfx, 0, plen, nameAt, nameAt + plen) !== 0))
                continue;
              let shadowed = false;
              while (li < loose.length) {
                const l = loose[li];
                const c = b.compare(l.name, 0, l.name.length, nameAt, nameEnd);
                if (c < 0)
                  break;
                li++;
                emitLoose(l);
                if (c === 0) {
                  shadowed = true;
                  break;
                }
              }
              if (shadowed)
                continue;
              if (r.peelState === 2) {
                if (r.peelBuf !== b) {
                  const one = Buffer.concat([b.subarray(r.hexAt, nameEnd), r.peelBuf.subarray(r.peeledAt, r.peeledAt + hexLen)]);
                  cb(one, 0, hexLen + 1, nameEnd - r.hexAt, nameEnd - r.hexAt, 2);
                  continue;
                }
              }
              cb(b, r.hexAt, nameAt, nameEnd, r.peeledAt, r.peelState);
              const w = breathe();
              if (w)
                await w;
            }
            if (!r.sorted) {
              for (const x of this.iterate(prefix)) {
                const b = Buffer.allocUnsafe(hexLen + 1 + x.name.length + (x.peeled ? hexLen : 0));
                x.hex.copy(b, 0);
                b[hexLen] = 32;
                x.name.copy(b, hexLen + 1);
                let peelAt = -1;
                if (x.peeled) {
                  peelAt = hexLen + 1 + x.name.length;
                  x.peeled.copy(b, peelAt);
                }
                cb(b, 0, hexLen + 1, hexLen + 1 + x.name.length, peelAt, x.peelState === "peeled" ? 2 : x.peelState === "none" ? 1 : 0, x.symref);
                const w = breathe();
                if (w)
                  await w;
              }
              return;
            }
          } finally {
            r.close();
          }
        }
        for (; li < loose.length; li++)
          emitLoose(loose[li]);
      }
      /**
       * Every ref under `prefix` (default `refs/`), in name order, loose
       * shadowing packed. Packed refs are streamed.
       */
      *iterate(prefix = "refs/") {
        const loose = this.looseRefs(prefix);
        const pfx = Buffer.from(prefix);
        let li = 0;
        for (const p of this.packedRefs(pfx)) {
          while (li < loose.length) {
            const c = Buffer.compare(loose[li].name, p.name);
            if (c > 0)
              break;
            const l = loose[li++];
            if (l.name.length >= pfx.length && l.name.compare(pfx, 0, pfx.length, 0, pfx.length) === 0)
              yield l;
            if (c === 0) {
              p.peelState = "shadowed";
              break;
            }
          }
          if (p.peelState === "shadowed")
            continue;
          yield p;
        }
        for (; li < loose.length; li++) {
          const l = loose[li];
          if (l.name.length >= pfx.length && l.name.compare(pfx, 0, pfx.length, 0, pfx.length) === 0)
            yield l;
        }
      }
      /** Is this a reftable repository? (refused for now) */
      static usesReftable(commonDir, refStorage) {
        return refStorage === "reftable" || existsSync4(join5(commonDir, "reftable")) && statSync3(join5(commonDir, "reftable")).isDirectory();
      }
    };
    PackedRefsReader = class _PackedRefsReader {
      fd;
      path;
      hexLen;
      buf = Buffer.alloc(0);
      hexAt = 0;
      nameAt = 0;
      nameEnd = 0;
      /** peeled id at peelBuf[peeledAt..], when peelState is 2 */
      peelBuf = this.buf;
      peeledAt = -1;
      peelState = 0;
      sorted = true;
      fullyPeeled = false;
      peeledTrait = false;
      chunk = Buffer.alloc(0);
      avail = 0;
      start = 0;
      pos = 0;
      eof = false;
      first = true;
      constructor(fd, path, hexLen) {
        this.fd = fd;
        this.path = path;
        this.hexLen = hexLen;
      }
      static open(path, hexLen) {
        let fd;
        try {
          fd = openSync3(path, "r");
        } catch {
          return void 0;
        }
        return new _PackedRefsReader(fd, path, hexLen);
      }
      close() {
        try {
          closeSync3(this.fd);
        } catch {
        }
      }
      /** The next line as [buf, start, end], or undefined at the end. */
      line() {
        for (; ; ) {
          let nl = this.chunk.indexOf(10, this.start);
          if (nl >= this.avail)
            nl = -1;
          if (nl < 0 && this.eof) {
            if (this.start >= this.avail)
              return void 0;
            nl = this.avail;
          }
          if (nl >= 0) {
            const r = [this.chunk, this.start, nl];
            this.start = nl + 1;
            if (nl === r[1])
              continue;
            return r;
          }
          const carry = this.avail - this.start;
          const next = Buffer.allocUnsafe(CHUNK + carry);
          this.chunk.copy(next, 0, this.start, this.avail);
          const n = readSync3(this.fd, next, carry, CHUNK, this.pos);
          this.pos += n;
          this.eof = n === 0;
          this.chunk = next;
          this.avail = carry + n;
          this.start = 0;
        }
      }
      pending;
      /** Advance to the next ref; false at the end. */
      next() {
        for (; ; ) {
          const l = this.pending ?? this.line();
          this.pending = void 0;
          if (!l)
            return false;
          const [b, st, en] = l;
          if (b[st] === 35) {
            if (this.first) {
              const t = ` ${b.toString("latin1", st, en)} `;
              this.fullyPeeled = t.includes(" fully-peeled ");
              this.peeledTrait = t.includes(" peeled ");
              this.sorted = t.includes(" sorted ");
            }
            this.first = false;
            continue;
          }
          this.first = false;
          if (b[st] === 94)
            continue;
          if (en - st < this.hexLen + 2 || b[st + this.hexLen] !== 32) {
            throw new GitwireError("GW_UNSUPPORTED_REPO", `unexpected line in ${this.path}: ${b.toString("latin1", st, en)}`);
          }
          this.buf = b;
          this.hexAt = st;
          this.nameAt = st + this.hexLen + 1;
          this.nameEnd = en;
          this.peeledAt = -1;
          const peel = this.line();
          if (peel && peel[0][peel[1]] === 94) {
            this.peelBuf = peel[0];
            this.peeledAt = peel[1] + 1;
            this.peelState = 2;
          } else {
            this.pending = peel;
            if (this.fullyPeeled)
              this.peelState = 1;
            else if (this.peeledTrait && en - this.nameAt > 10 && b.toString("latin1", this.nameAt, this.nameAt + 10) === "refs/tags/")
              this.peelState = 1;
            else
              this.peelState = 0;
          }
          return true;
        }
      }
    };
  }
});

// dist/repo/repository.js
import { join as join6 } from "node:path";
var Repository;
var init_repository = __esm({
  "dist/repo/repository.js"() {
    "use strict";
    init_errors();
    init_config();
    init_discover();
    init_hiderefs();
    init_odb();
    init_objects();
    init_refs();
    Repository = class _Repository {
      gitDir;
      commonDir;
      env;
      config;
      format;
      hashLen;
      refs;
      odb;
      /** `refs/namespaces/<ns>/…` prefix from GIT_NAMESPACE, or '' */
      namespace;
      commitCache = /* @__PURE__ */ new Map();
      constructor(gitDir, commonDir, env = process.env) {
        this.gitDir = gitDir;
        this.commonDir = commonDir;
        this.env = env;
        this.config = Config.load(commonDir, env);
        const version2 = this.config.getInt("core.repositoryformatversion", 0);
        const fmt = this.config.get("extensions.objectformat") ?? "sha1";
        if (version2 >= 1 || fmt !== "sha1") {
          if (fmt !== "sha1" && fmt !== "sha256")
            throw new GitwireError("GW_UNSUPPORTED_REPO", `invalid value for 'extensions.objectformat': '${fmt}'`);
        }
        this.format = fmt;
        this.hashLen = fmt === "sha256" ? 32 : 20;
        const refStorage = this.config.get("extensions.refstorage") ?? void 0;
        if (RefStore.usesReftable(commonDir, refStorage === null ? void 0 : refStorage)) {
          throw new GitwireError("GW_UNSUPPORTED_REPO", `reftable repositories are not supported yet: ${gitDir}`);
        }
        this.refs = new RefStore(gitDir, commonDir, this.hashLen);
        const objDir = env.GIT_OBJECT_DIRECTORY ?? join6(commonDir, "objects");
        const alts = (env.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? "").split(":").filter(Boolean);
        this.odb = new ObjectDatabase(objDir, this.hashLen, alts);
        this.namespace = namespacePrefix(env.GIT_NAMESPACE);
      }
      /** The repository the current directory is in (git's discovery, for cat-file). */
      static discover(cwd = process.cwd(), env = process.env) {
        const loc = discoverRepository(cwd, env);
        return new _Repository(loc.gitDir, loc.commonDir, env);
      }
      static open(dir, opts = {}) {
        const loc = locateRepository(dir, opts.strict ?? false);
        return new _Repository(loc.gitDir, loc.commonDir, opts.env ?? process.env);
      }
      get hexLen() {
        return this.hashLen * 2;
      }
      hideRefs(section = "uploadpack") {
        return HideRefs.fromConfig(this.config, section);
      }
      /** Peel tags until a non-tag; undefined when the id is not a tag (or missing). */
      peel(oid) {
        let cur = oid;
        let peeled = false;
        for (let i = 0; i < 100; i++) {
          const info = this.odb.info(cur);
          if (!info || info.type !== 4)
            return peeled ? cur : void 0;
          const o = this.odb.read(cur);
          if (!o)
            return void 0;
          cur = parseTag(o.data, this.hashLen).object;
          peeled = true;
        }
        return cur;
      }
      /** Parse a commit (cached); undefined if missing or not a commit. */
      commit(oid) {
        const k = oid.toString("latin1");
        const c = this.commitCache.get(k);
        if (c)
          return c;
        const o = this.odb.read(oid);
        if (!o || o.type !== 1)
          return void 0;
        const parsed = parseCommit(o.data, this.hashLen);
        if (this.commitCache.size > 2e5)
          this.commitCache.clear();
        this.commitCache.set(k, parsed);
        return parsed;
      }
      /** Rough bytes held by caches of this repository (for pools). */
      memoryEstimate() {
        let n = this.commitCache.size * 256;
        for (const s of this.odb.sources)
          for (const p of s.packs)
            n += Math.min(p.index.buf.length, 16 << 20);
        return n;
      }
      close() {
        this.odb.close();
        this.commitCache.clear();
      }
    };
  }
});

// dist/protocol/filter.js
function parseUlong(s) {
  const m = /^(\d+)([kKmMgG]?)$/.exec(s);
  if (!m)
    return void 0;
  const u = m[2].toLowerCase();
  return Number(m[1]) * (u === "k" ? 1024 : u === "m" ? 1024 ** 2 : u === "g" ? 1024 ** 3 : 1);
}
function parseFilter(arg) {
  if (arg === "blob:none")
    return { choice: "blob:none", spec: arg };
  if (arg.startsWith("blob:limit=")) {
    const n = parseUlong(arg.slice(11));
    if (n !== void 0)
      return { choice: "blob:limit", spec: `blob:limit=${n}` };
  } else if (arg.startsWith("tree:")) {
    const n = parseUlong(arg.slice(5));
    if (n === void 0)
      throw fail("expected 'tree:<depth>'");
    return { choice: "tree", spec: `tree:${n}`, treeDepth: n };
  } else if (arg.startsWith("sparse:oid=")) {
    return { choice: "sparse:oid", spec: arg };
  } else if (arg.startsWith("sparse:path=")) {
    throw fail("sparse:path filters support has been dropped");
  } else if (arg.startsWith("object:type=")) {
    const t = arg.slice(12);
    if (!["blob", "tree", "commit", "tag"].includes(t))
      throw fail(`'${t}' for 'object:type=<type>' is not a valid object type`);
    return { choice: "object:type", spec: arg };
  } else if (arg.startsWith("combine:")) {
    const rest = arg.slice(8);
    if (!rest)
      throw fail("expected something after combine:");
    const subs = rest.split("+").map((sub) => {
      for (const c of sub)
        if (c <= " " || RESERVED.includes(c))
          throw fail(`must escape char in sub-filter-spec: '${c}'`);
      return parseFilter(decodeURIComponent(sub));
    });
    return { choice: "combine", spec: arg, subs };
  }
  throw fail(`invalid filter-spec '${arg}'`);
}
var fail, RESERVED, FilterPolicy;
var init_filter = __esm({
  "dist/protocol/filter.js"() {
    "use strict";
    init_errors();
    init_config();
    fail = (msg) => new GitwireError("GW_PROTOCOL", msg);
    RESERVED = "~`!@#$^&*()[]{}\\;'\",<>?";
    FilterPolicy = class _FilterPolicy {
      fallback = true;
      allowed = /* @__PURE__ */ new Map();
      treeMaxDepth = Number.MAX_SAFE_INTEGER;
      static fromConfig(config) {
        const p = new _FilterPolicy();
        for (const e of config.each()) {
          if (!e.key.startsWith("uploadpackfilter."))
            continue;
          const rest = e.key.slice("uploadpackfilter.".length);
          const dot = rest.lastIndexOf(".");
          if (dot < 0) {
            if (rest === "allow")
              p.fallback = parseBool(e.value, e.key);
            continue;
          }
          const sub = rest.slice(0, dot), key = rest.slice(dot + 1);
          if (key === "allow")
            p.allowed.set(sub, parseBool(e.value, e.key));
          else if (sub === "tree" && key === "maxdepth") {
            p.allowed.set("tree", true);
            p.treeMaxDepth = Number(e.value);
          }
        }
        return p;
      }
      /** Error message for a banned filter (git's wording), or undefined. */
      check(f) {
        const allowed = this.allowed.get(f.choice) ?? this.fallback;
        if (!allowed)
          return `filter '${f.choice}' not supported`;
        if (f.choice === "tree" && f.treeDepth > this.treeMaxDepth) {
          return `tree filter allows max depth ${this.treeMaxDepth}, but got ${f.treeDepth}`;
        }
        for (const s of f.subs ?? []) {
          const m = this.check(s);
          if (m)
            return m;
        }
        return void 0;
      }
    };
  }
});

// dist/protocol/session.js
function readUploadPackConfig(repo) {
  const c = repo.config;
  let allowUor = 0;
  for (const e of c.each()) {
    const set = (bit) => {
      const on = e.value === null || !["false", "no", "off", "0", ""].includes(e.value.toLowerCase());
      allowUor = on ? allowUor | bit : allowUor & ~bit;
    };
    if (e.key === "uploadpack.allowtipsha1inwant")
      set(
        1
        /* AllowUor.Tip */
      );
    else if (e.key === "uploadpack.allowreachablesha1inwant")
      set(
        2
        /* AllowUor.Reachable */
      );
    else if (e.key === "uploadpack.allowanysha1inwant")
      set(
        7
        /* AllowUor.Any */
      );
  }
  let keepalive = c.getInt("uploadpack.keepalive", 5);
  if (keepalive === 0)
    keepalive = -1;
  const hook = c.getEntry("uploadpack.packobjectshook", true);
  return {
    allowUor,
    allowFilter: c.getBool("uploadpack.allowfilter", false),
    allowRefInWant: c.getBool("uploadpack.allowrefinwant", false),
    allowSidebandAll: c.getBool("uploadpack.allowsidebandall", false),
    keepalive,
    advertiseSid: c.getBool("transfer.advertisesid", false),
    hideRefs: repo.hideRefs("uploadpack"),
    filterPolicy: FilterPolicy.fromConfig(c),
    packObjectsHook: hook?.value ?? void 0
  };
}
var INFINITE_DEPTH, UploadPackSession;
var init_session = __esm({
  "dist/protocol/session.js"() {
    "use strict";
    init_filter();
    INFINITE_DEPTH = 2147483647;
    UploadPackSession = class {
      repo;
      writer;
      opts;
      cfg;
      /** object flags keyed by the raw id as a latin1 string */
      flags = /* @__PURE__ */ new Map();
      wants = [];
      haves = [];
      /** objects written after `--not` besides haves (unshallowed commits) */
      extraEdges = [];
      /** client-declared shallow commits */
      shallows = [];
      /** every shallow graft pack-objects must know (sorted on use) */
      registeredShallow = /* @__PURE__ */ new Map();
      /** number of shallow lines that make pack-objects use --shallow */
      shallowNr = 0;
      depth = 0;
      deepenSince = 0;
      deepenNot = [];
      deepenRevList = false;
      deepenRelative = false;
      filter;
      filterRequested = false;
      multiAck = 0;
      noDone = false;
      thinPack = false;
      ofsDelta = false;
      sideband = "none";
      noProgress = false;
      includeTag = false;
      oldestHave = 0;
      wantedRefs = [];
      /** last v2 command served (for logs) */
      command;
      /** totals over the connection (for logs and metrics) */
      stats = { wants: 0, haves: 0 };
      constructor(repo, writer, opts) {
        this.repo = repo;
        this.writer = writer;
        this.opts = opts;
        this.cfg = readUploadPackConfig(repo);
      }
      /** Forget per-request state (v2 serves several commands per connection). */
      resetRequest() {
        this.stats.wants += this.wants.length;
        this.stats.haves += this.haves.length;
        this.flags.clear();
        this.wants = [];
        this.haves = [];
        this.extraEdges = [];
        this.shallows = [];
        this.registeredShallow = /* @__PURE__ */ new Map();
        this.shallowNr = 0;
        this.depth = 0;
        this.deepenSince = 0;
        this.deepenNot = [];
        this.deepenRevList = false;
        this.deepenRelative = false;
        this.filter = void 0;
        this.filterRequested = false;
        this.multiAck = 0;
        this.noDone = false;
        this.thinPack = false;
        this.ofsDelta = false;
        this.sideband = "none";
        this.noProgress = false;
        this.includeTag = false;
        this.oldestHave = 0;
        this.wantedRefs = [];
        this.writer.sidebandAll = false;
        this.writer.sideband = "none";
      }
      key(oid) {
        return oid.toString("latin1");
      }
      get(oid) {
        return this.flags.get(this.key(oid)) ?? 0;
      }
      set(oid, f) {
        const k = this.key(oid);
        this.flags.set(k, (this.flags.get(k) ?? 0) | f);
      }
      clear(oid, f) {
        const k = this.key(oid);
        this.flags.set(k, (this.flags.get(k) ?? 0) & ~f);
      }
      hex(oid) {
        return oid.toString("hex");
      }
      /** Ref names as the client sees them, and whether they are hidden. */
      isHidden(stripped, full) {
        if (this.cfg.hideRefs.isHidden(stripped, full))
          return true;
        if (this.opts.refFilter && stripped && !this.opts.refFilter(stripped.toString()))
          return true;
        return false;
      }
      addWant(oid) {
        if (this.get(oid) & 4)
          return;
        this.set(
          oid,
          4
          /* Flag.Wanted */
        );
        this.wants.push(oid);
      }
      /** add to the want list without policy checks (parents of unshallowed commits) */
      addWantUnchecked(oid) {
        this.wants.push(oid);
      }
      registerShallow(oid) {
        this.registeredShallow.set(this.key(oid), oid);
      }
      unregisterShallow(oid) {
        this.registeredShallow.delete(this.key(oid));
      }
    };
  }
});

// dist/protocol/negotiation.js
function gotHave(s, oid) {
  const info = s.repo.odb.info(oid);
  if (!info)
    return -1;
  let knew = false;
  if (info.type === 1) {
    const c = s.repo.commit(oid);
    if (c) {
      if (s.get(oid) & 1)
        knew = true;
      else
        s.set(
          oid,
          1
          /* Flag.TheyHave */
        );
      if (!s.oldestHave || c.time < s.oldestHave)
        s.oldestHave = c.time;
      for (const p of c.parents)
        s.set(
          p,
          1
          /* Flag.TheyHave */
        );
    }
  }
  if (!knew) {
    s.haves.push(oid);
    return 1;
  }
  return 0;
}
function derefTag(s, oid) {
  let cur = oid;
  for (let i = 0; i < 100; i++) {
    const info = s.repo.odb.info(cur);
    if (!info)
      return void 0;
    if (info.type !== 4)
      return { oid: cur, type: info.type };
    const peeled = s.repo.peel(cur);
    if (!peeled)
      return void 0;
    cur = peeled;
  }
  return void 0;
}
function okToGiveUp(s) {
  if (s.haves.length === 0)
    return false;
  const minDate = s.oldestHave;
  const visited = /* @__PURE__ */ new Set();
  const result = /* @__PURE__ */ new Set();
  const good = (k) => ((s.flags.get(k) ?? 0) & 1) !== 0 || result.has(k);
  for (const w of s.wants) {
    if (s.get(w) & 8)
      continue;
    const d = derefTag(s, w);
    if (!d || d.type !== 1) {
      s.set(
        w,
        8
        /* Flag.CommonKnown */
      );
      continue;
    }
    if (!s.repo.commit(d.oid))
      return false;
    const root = s.key(d.oid);
    visited.add(root);
    const stack = [d.oid];
    while (stack.length) {
      const top = stack[stack.length - 1];
      const tk = s.key(top);
      if (good(tk)) {
        stack.pop();
        if (stack.length)
          result.add(s.key(stack[stack.length - 1]));
        continue;
      }
      const c = s.repo.commit(top);
      let pushed = false;
      for (const p of c?.parents ?? []) {
        const pk = s.key(p);
        if (good(pk))
          result.add(tk);
        if (!visited.has(pk)) {
          visited.add(pk);
          const pc = s.repo.commit(p);
          if (!pc || pc.time < minDate)
            continue;
          stack.push(p);
          pushed = true;
          break;
        }
      }
      if (!pushed)
        stack.pop();
    }
    if (!good(root))
      return false;
  }
  return true;
}
var init_negotiation = __esm({
  "dist/protocol/negotiation.js"() {
    "use strict";
  }
});

// dist/protocol/wants.js
function notOurRef(s, oid) {
  const hex = oid.toString("hex");
  s.writer.error(`upload-pack: not our ref ${hex}`);
  return new GitwireError("GW_NOT_OUR_REF", `git upload-pack: not our ref ${hex}`);
}
function* visibleRefs(s, whole = false, headOnly = false) {
  const ns = s.repo.namespace;
  const headName = ns ? `${ns}HEAD` : "HEAD";
  const head = ns ? s.repo.refs.resolve(headName) : { hex: s.repo.refs.head().hex };
  if (head?.hex) {
    const full = Buffer.from(headName);
    yield { stripped: Buffer.from("HEAD"), full, hex: head.hex, hidden: s.isHidden(Buffer.from("HEAD"), full) };
  }
  if (headOnly)
    return;
  const prefix = ns ? whole ? ns : `${ns}refs/` : "refs/";
  for (const r of s.repo.refs.iterate(prefix)) {
    const stripped = ns ? r.name.subarray(ns.length) : r.name;
    yield { stripped, full: r.name, hex: r.hex, hidden: s.isHidden(stripped, r.name), peeled: r.peeled, peelState: r.peelState };
  }
}
function markWantedTips(s) {
  if (s.wants.length === 0)
    return;
  const wanted = new Set(s.wants.map((w) => w.toString("hex")));
  for (const r of visibleRefs(s)) {
    const h = r.hex.toString("latin1");
    if (!wanted.has(h))
      continue;
    s.set(
      Buffer.from(h, "hex"),
      r.hidden ? 128 : 2
      /* Flag.OurRef */
    );
  }
}
function isOurRef(s, oid) {
  const hiddenOk = (s.cfg.allowUor & (1 | 2)) !== 0;
  return (s.get(oid) & ((hiddenOk ? 128 : 0) | 2)) !== 0;
}
function hasUnreachable(s) {
  const targets = /* @__PURE__ */ new Set();
  for (const w of s.wants) {
    if (isOurRef(s, w))
      continue;
    const d = derefTag(s, w);
    if (d && d.type === 1)
      targets.add(s.key(d.oid));
  }
  if (targets.size === 0)
    return false;
  const hiddenOk = (s.cfg.allowUor & (1 | 2)) !== 0;
  const stack = [];
  for (const r of visibleRefs(s)) {
    if (r.hidden && !hiddenOk)
      continue;
    const d = derefTag(s, Buffer.from(r.hex.toString(), "hex"));
    if (d && d.type === 1)
      stack.push(d.oid);
  }
  const seen = /* @__PURE__ */ new Set();
  while (stack.length && targets.size) {
    const o = stack.pop();
    const k = s.key(o);
    if (seen.has(k))
      continue;
    seen.add(k);
    targets.delete(k);
    const c = s.repo.commit(o);
    if (c)
      for (const p of c.parents)
        stack.push(p);
  }
  return targets.size > 0;
}
function checkWants(s, stateless = s.opts.statelessRpc) {
  if ((s.cfg.allowUor & 7) === 7)
    return;
  markWantedTips(s);
  const nonTip = s.wants.some((w) => !isOurRef(s, w));
  if (!nonTip)
    return;
  if ((stateless || s.cfg.allowUor & 2) && !hasUnreachable(s))
    return;
  for (const w of s.wants)
    if (!isOurRef(s, w))
      throw notOurRef(s, w);
}
var init_wants = __esm({
  "dist/protocol/wants.js"() {
    "use strict";
    init_errors();
    init_negotiation();
  }
});

// dist/protocol/shallow.js
import { readFileSync as readFileSync8 } from "node:fs";
import { join as join7 } from "node:path";
function repoShallow(s) {
  const out = /* @__PURE__ */ new Set();
  let text = "";
  try {
    text = readFileSync8(join7(s.repo.gitDir, "shallow"), "latin1");
  } catch {
    return out;
  }
  for (const l of text.split("\n"))
    if (l.length === s.repo.hexLen)
      out.add(Buffer.from(l, "hex").toString("latin1"));
  return out;
}
function processShallow(s, line) {
  if (!line.startsWith("shallow "))
    return false;
  const hex = line.slice(8);
  if (!isHex(hex, s.repo.hexLen))
    throw die(`invalid shallow line: ${line}`);
  const oid = Buffer.from(hex, "hex");
  const info = s.repo.odb.info(oid);
  if (!info)
    return true;
  if (info.type !== 1)
    throw die(`invalid shallow object ${hex}`);
  if (!(s.get(oid) & 64)) {
    s.set(
      oid,
      64
      /* Flag.ClientShallow */
    );
    s.shallows.push(oid);
  }
  return true;
}
function isHex(h, len) {
  return h.length === len && /^[0-9a-f]+$/.test(h);
}
function parentsOf(s, oid, grafts) {
  const c = s.repo.commit(oid);
  if (!c)
    return void 0;
  if (grafts.has(s.key(oid)))
    return [];
  return c.parents;
}
function shallowCommits(s, heads, depth, grafts) {
  const result = [];
  const depths = /* @__PURE__ */ new Map();
  const stack = [];
  let i = 0;
  let commit;
  let cur = 0;
  while (commit || i < heads.length || stack.length) {
    if (!commit) {
      if (i < heads.length) {
        const d = derefTag(s, heads[i++]);
        if (!d || d.type !== 1)
          continue;
        commit = d.oid;
        depths.set(s.key(commit), 0);
        cur = 0;
      } else {
        commit = stack.pop();
        cur = depths.get(s.key(commit));
      }
    }
    const parents = parentsOf(s, commit, grafts);
    if (!parents)
      throw die(`unable to parse commit ${commit.toString("hex")}`);
    cur++;
    if (depth !== INFINITE_DEPTH && cur >= depth || grafts.size > 0 && parents.length === 0 && grafts.has(s.key(commit))) {
      result.unshift(commit);
      s.set(
        commit,
        16
        /* Flag.Shallow */
      );
      commit = void 0;
      continue;
    }
    s.set(
      commit,
      32
      /* Flag.NotShallow */
    );
    commit = void 0;
    for (let j = 0; j < parents.length; j++) {
      const p = parents[j];
      const k = s.key(p);
      const prev = depths.get(k);
      if (prev === void 0)
        depths.set(k, cur);
      else {
        if (cur >= prev)
          continue;
        depths.set(k, cur);
      }
      if (j < parents.length - 1)
        stack.push(p);
      else {
        commit = p;
        cur = depths.get(k);
      }
    }
  }
  return result;
}
function expandRef(s, name) {
  const rules = ["%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"];
  const found = [];
  for (const r of rules) {
    const full = r.replace("%s", name);
    if (full !== "HEAD" && !full.startsWith("refs/"))
      continue;
    const res = s.repo.refs.resolve(full);
    if (res?.hex)
      found.push(Buffer.from(res.hex.toString(), "hex"));
  }
  if (found.length !== 1)
    throw die(`git upload-pack: ambiguous deepen-not: deepen-not ${name}`);
  return found[0];
}
function shallowByRevList(s, grafts) {
  const excluded = /* @__PURE__ */ new Set();
  const walkAll = (starts) => {
    const st = [...starts];
    while (st.length) {
      const o = st.pop();
      const k = s.key(o);
      if (excluded.has(k))
        continue;
      excluded.add(k);
      for (const p of parentsOf(s, o, grafts) ?? [])
        st.push(p);
    }
  };
  walkAll(s.deepenNot.map((n) => {
    const d = derefTag(s, expandRef(s, n));
    return d && d.type === 1 ? d.oid : void 0;
  }).filter((x) => x !== void 0));
  const queue = [];
  const seen = /* @__PURE__ */ new Set();
  const push = (oid) => {
    const k = s.key(oid);
    if (seen.has(k))
      return;
    seen.add(k);
    const c = s.repo.commit(oid);
    if (!c)
      return;
    let lo = 0, hi = queue.length;
    while (lo < hi) {
      const m = lo + hi >>> 1;
      if (queue[m].time >= c.time)
        lo = m + 1;
      else
        hi = m;
    }
    queue.splice(lo, 0, { oid, time: c.time });
  };
  for (const w of s.wants) {
    const d = derefTag(s, w);
    if (d && d.type === 1)
      push(d.oid);
  }
  const shown = [];
  while (queue.length) {
    const { oid, time } = queue.shift();
    if (excluded.has(s.key(oid)))
      continue;
    if (s.deepenSince && time < s.deepenSince)
      continue;
    shown.push(oid);
    for (const p of parentsOf(s, oid, grafts) ?? [])
      push(p);
  }
  if (shown.length === 0)
    throw die("no commits selected for shallow requests");
  const notShallow = new Set(shown.map((o) => s.key(o)));
  for (const o of shown)
    s.set(
      o,
      32
      /* Flag.NotShallow */
    );
  const result = [];
  for (const o of shown) {
    for (const p of parentsOf(s, o, grafts) ?? []) {
      if (!notShallow.has(s.key(p))) {
        s.set(
          o,
          16
          /* Flag.Shallow */
        );
        result.push(o);
        break;
      }
    }
  }
  for (const o of result)
    s.clear(
      o,
      32
      /* Flag.NotShallow */
    );
  return result;
}
function sendShallow(s, result) {
  for (const o of result) {
    if (!(s.get(o) & (64 | 32))) {
      s.writer.data(`shallow ${o.toString("hex")}`);
      s.registerShallow(o);
      s.shallowNr++;
    }
  }
}
function sendUnshallow(s, grafts) {
  for (const o of s.shallows) {
    if (s.get(o) & 32) {
      s.writer.data(`unshallow ${o.toString("hex")}`);
      s.clear(
        o,
        64
        /* Flag.ClientShallow */
      );
      s.unregisterShallow(o);
      for (const p of parentsOf(s, o, grafts) ?? [])
        s.addWantUnchecked(p);
      s.extraEdges.push(o);
    }
    s.registerShallow(o);
  }
}
function reachableShallows(s, grafts) {
  const want = new Map(s.shallows.map((o) => [s.key(o), o]));
  const found = [];
  const stack = [];
  for (const r of visibleRefs(s)) {
    if (r.hidden)
      continue;
    const d = derefTag(s, Buffer.from(r.hex.toString("latin1"), "hex"));
    if (d && d.type === 1)
      stack.push(d.oid);
  }
  const seen = /* @__PURE__ */ new Set();
  while (stack.length && found.length < want.size) {
    const o = stack.pop();
    const k = s.key(o);
    if (seen.has(k))
      continue;
    seen.add(k);
    const hit = want.get(k);
    if (hit) {
      found.push(hit);
      continue;
    }
    for (const p of parentsOf(s, o, grafts) ?? [])
      stack.push(p);
  }
  return s.shallows.filter((o) => found.includes(o));
}
function deepen(s, depth, grafts = repoShallow(s)) {
  if (depth === INFINITE_DEPTH && grafts.size === 0) {
    for (const o of s.shallows)
      s.set(
        o,
        32
        /* Flag.NotShallow */
      );
  } else if (s.deepenRelative) {
    sendShallow(s, shallowCommits(s, reachableShallows(s, grafts), depth + 1, grafts));
  } else {
    sendShallow(s, shallowCommits(s, s.wants, depth, grafts));
  }
  sendUnshallow(s, grafts);
}
function sendShallowList(s) {
  const grafts = repoShallow(s);
  for (const g of grafts)
    s.registeredShallow.set(g, Buffer.from(g, "latin1"));
  let sent = false;
  if (s.depth > 0 && s.deepenRevList)
    throw die("git upload-pack: deepen and deepen-since (or deepen-not) cannot be used together");
  if (s.depth > 0) {
    deepen(s, s.depth, grafts);
    sent = true;
  } else if (s.deepenRevList) {
    sendShallow(s, shallowByRevList(s, grafts));
    sendUnshallow(s, grafts);
    sent = true;
  } else {
    for (const o of s.shallows)
      s.registerShallow(o);
  }
  s.shallowNr += s.shallows.length;
  return sent;
}
var die;
var init_shallow = __esm({
  "dist/protocol/shallow.js"() {
    "use strict";
    init_errors();
    init_negotiation();
    init_wants();
    init_session();
    die = (msg) => new GitwireError("GW_PROTOCOL", msg);
  }
});

// dist/protocol/advertise.js
function symrefInfo(s) {
  const ns = s.repo.namespace;
  if (ns) {
    const r = s.repo.refs.readLoose(`${ns}HEAD`);
    if (!r?.symref)
      return "";
    const t = s.repo.refs.resolve(r.symref);
    if (!t?.hex)
      return "";
    return ` symref=HEAD:${r.symref.startsWith(ns) ? r.symref.slice(ns.length) : r.symref}`;
  }
  const h = s.repo.refs.head();
  return h.symref && h.hex ? ` symref=HEAD:${h.symref}` : "";
}
function capabilityString(s, o) {
  const a = s.cfg.allowUor;
  return CAPS + (a & 1 ? " allow-tip-sha1-in-want" : "") + (a & 2 ? " allow-reachable-sha1-in-want" : "") + (o.advertiseRefs ? " no-done" : "") + symrefInfo(s) + (s.cfg.allowFilter ? " filter" : "") + (s.cfg.advertiseSid && o.sessionId ? ` session-id=${o.sessionId}` : "") + ` object-format=${s.repo.format} agent=${userAgent(s.repo.env)}`;
}
async function advertiseRefs(s, o) {
  const w = s.writer;
  const repo = s.repo;
  const hexLen = repo.hexLen;
  const ns = repo.namespace;
  let caps = Buffer.from(`\0${capabilityString(s, o)}
`);
  const line = (b, hexAt2, nameAt, nameEnd) => {
    const tail = caps ?? LF;
    caps = void 0;
    if (nameAt === hexAt2 + hexLen + 1)
      w.dataRegion(b, hexAt2, nameEnd, tail);
    else
      w.dataParts(b.subarray(hexAt2, hexAt2 + hexLen), SP, b.subarray(nameAt, nameEnd), tail);
  };
  const peeledLine = (peeled, b, nameAt, nameEnd) => {
    w.dataParts(peeled, SP, b.subarray(nameAt, nameEnd), PEELED_LF);
  };
  for (const r of visibleRefs(s, false, true)) {
    if (r.hidden)
      continue;
    const b = Buffer.concat([r.hex, SP, r.stripped]);
    line(b, 0, hexLen + 1, b.length);
    const known = repo.refs.peeledFromPacked(`${ns}HEAD`);
    if (known === "none")
      continue;
    if (known) {
      peeledLine(known, b, hexLen + 1, b.length);
      continue;
    }
    const p = peelHex(s, r);
    if (p)
      peeledLine(p, b, hexLen + 1, b.length);
  }
  const hide = s.cfg.hideRefs;
  const filter = s.opts.refFilter;
  const nsLen = ns.length;
  const pause = () => w.sink.backedUp ? w.drained() : void 0;
  await repo.refs.scan(ns ? `${ns}refs/` : "refs/", (b, hexAt2, nameAt, nameEnd, peeledAt, state) => {
    const stripped = nameAt + nsLen;
    if (!hide.empty && hide.isHiddenRegion(b, stripped, nameAt, nameEnd))
      return;
    if (filter && !filter(b.toString("utf8", stripped, nameEnd)))
      return;
    line(b, hexAt2, stripped, nameEnd);
    if (state === 2)
      peeledLine(b.subarray(peeledAt, peeledAt + hexLen), b, stripped, nameEnd);
    else if (state === 0) {
      const p = repo.peel(Buffer.from(b.toString("latin1", hexAt2, hexAt2 + hexLen), "hex"));
      if (p)
        peeledLine(p.toString("hex"), b, stripped, nameEnd);
    }
  }, pause);
  if (caps) {
    w.dataParts("0".repeat(hexLen), " capabilities^{}", caps);
  }
  const shallow = [...repoShallow(s)].map((k) => Buffer.from(k, "latin1")).sort(Buffer.compare);
  for (const sh of shallow)
    w.data(`shallow ${sh.toString("hex")}
`);
  w.flush();
}
function peelHex(s, r) {
  if (r.peelState === "peeled")
    return r.peeled;
  if (r.peelState === "none")
    return void 0;
  const p = s.repo.peel(Buffer.from(r.hex.toString("latin1"), "hex"));
  return p ? p.toString("hex") : void 0;
}
var CAPS, SP, LF, PEELED_LF;
var init_advertise = __esm({
  "dist/protocol/advertise.js"() {
    "use strict";
    init_wants();
    init_shallow();
    init_version();
    CAPS = "multi_ack thin-pack side-band side-band-64k ofs-delta shallow deepen-since deepen-not deepen-relative no-progress include-tag multi_ack_detailed";
    SP = Buffer.from(" ");
    LF = Buffer.from("\n");
    PEELED_LF = Buffer.from("^{}\n");
  }
});

// dist/protocol/deepen.js
function parseDeepenLine(s, line) {
  if (line.startsWith("deepen ")) {
    const arg = line.slice(7);
    const n = /^(0x[0-9a-fA-F]+|0[0-7]*|[1-9]\d*)$/.test(arg) ? Number(arg.startsWith("0") && !arg.startsWith("0x") && arg.length > 1 ? parseInt(arg, 8) : arg) : NaN;
    if (!Number.isFinite(n) || n <= 0)
      throw die2(`Invalid deepen: ${line}`);
    s.depth = n > 2147483647 ? 2147483647 : n;
    return true;
  }
  if (line.startsWith("deepen-since ")) {
    const arg = line.slice(13);
    if (!/^\d+$/.test(arg) || Number(arg) === 0)
      throw die2(`Invalid deepen-since: ${line}`);
    s.deepenSince = Number(arg);
    s.deepenRevList = true;
    return true;
  }
  if (line.startsWith("deepen-not ")) {
    s.deepenNot.push(line.slice(11));
    s.deepenRevList = true;
    return true;
  }
  return false;
}
var die2;
var init_deepen = __esm({
  "dist/protocol/deepen.js"() {
    "use strict";
    init_errors();
    die2 = (msg) => new GitwireError("GW_PROTOCOL", msg);
  }
});

// dist/pack/pack-objects.js
import { spawn } from "node:child_process";
function packObjectsArgs(r) {
  const a = [];
  if (r.useShallow)
    a.push("--shallow-file", "");
  a.push("pack-objects", "--revs");
  if (r.thin)
    a.push("--thin");
  a.push("--stdout");
  if (r.useShallow)
    a.push("--shallow");
  if (r.progress)
    a.push("--progress");
  if (r.ofsDelta)
    a.push("--delta-base-offset");
  if (r.includeTag)
    a.push("--include-tag");
  if (r.filter)
    a.push(`--filter=${r.filter}`);
  return a;
}
function packObjectsInput(r) {
  let s = "";
  if (r.useShallow) {
    const sorted = [...r.shallow].sort(Buffer.compare);
    for (const o of sorted)
      s += `--shallow ${o.toString("hex")}
`;
  }
  for (const o of r.wants)
    s += `${o.toString("hex")}
`;
  s += "--not\n";
  for (const o of r.haves)
    s += `${o.toString("hex")}
`;
  for (const o of r.extraEdges)
    s += `${o.toString("hex")}
`;
  s += "\n";
  return Buffer.from(s, "latin1");
}
function spawnPackObjects(r) {
  const args = packObjectsArgs(r);
  const env = { ...r.env ?? process.env, GIT_DIR: r.gitDir };
  const child = r.hook ? spawn("/bin/sh", ["-c", `${r.hook} "$@"`, r.hook, "git", ...args], { cwd: r.gitDir, env, stdio: ["pipe", "pipe", "pipe"] }) : spawn("git", args, { cwd: r.gitDir, env, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.on("error", () => {
  });
  child.stdin.end(packObjectsInput(r));
  return child;
}
var init_pack_objects = __esm({
  "dist/pack/pack-objects.js"() {
    "use strict";
  }
});

// dist/pack/relay.js
function waitExit(child) {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve7) => child.once("close", (code, signal) => resolve7({ code, signal })));
}
function killChild(child) {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve();
  const done = waitExit(child).then(() => void 0);
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 2e3);
  return done.finally(() => clearTimeout(t));
}
async function relayPack(child, writer, opts) {
  const sideband = writer.sideband !== "none";
  const small = writer.sideband === "side-band";
  const stats = { packBytes: 0, frames: 0 };
  let frame = Buffer.allocUnsafe(5 + SIDEBAND_64K_MAX);
  let used = 0;
  let failed;
  let keepaliveTimer;
  let quietTimer;
  let progressTimer;
  const sendData = (n) => {
    if (n <= 0)
      return;
    stats.packBytes += n;
    stats.frames++;
    if (sideband && !small) {
      const keep = used - n;
      if (writer.bandFrameRetains(5 + n)) {
        const out = frame;
        frame = Buffer.allocUnsafe(5 + SIDEBAND_64K_MAX);
        if (keep > 0)
          out.copy(frame, 5, 5 + n, 5 + used);
        used = keep;
        writer.bandFrame(1, out.subarray(0, 5 + n));
        return;
      }
      writer.bandFrame(1, frame.subarray(0, 5 + n));
      if (keep > 0)
        frame.copy(frame, 5, 5 + n, 5 + used);
      used = keep;
      return;
    }
    const payload = Buffer.from(frame.subarray(5, 5 + n));
    frame.copy(frame, 5, 5 + n, 5 + used);
    used -= n;
    if (sideband) {
      writer.band(1, payload);
      writer.push();
    } else {
      writer.raw(payload);
      writer.push();
    }
  };
  const guard = (f) => () => {
    try {
      f();
    } catch (e) {
      failed ??= e;
      child.stdout?.destroy();
      child.stderr?.destroy();
    }
  };
  const armKeepalive = () => {
    if (keepaliveTimer)
      clearTimeout(keepaliveTimer);
    if (opts.keepalive < 0 || !sideband)
      return;
    keepaliveTimer = setTimeout(guard(() => {
      writer.push();
      if (writer.sidebandAll || writer.sideband !== "none")
        writer.raw(KEEPALIVE);
      writer.push();
      armKeepalive();
    }), opts.keepalive * 1e3);
  };
  const stderr = child.stderr;
  stderr.on("data", (chunk) => {
    armKeepalive();
    guard(() => {
      if (!sideband) {
        opts.stderr?.(chunk);
        return;
      }
      writer.progress(chunk);
      if (!progressTimer)
        progressTimer = setTimeout(guard(() => {
          progressTimer = void 0;
          writer.push();
        }), PROGRESS_COALESCE_MS);
    })();
  });
  const stderrDone = new Promise((resolve7) => {
    stderr.once("close", resolve7);
    stderr.once("end", resolve7);
  });
  writer.sink.onClose?.(() => {
    failed ??= new GitwireError("GW_CLIENT_GONE", "the remote end hung up unexpectedly");
    child.stdout?.destroy();
    void killChild(child);
  });
  armKeepalive();
  try {
    for await (const chunk of child.stdout) {
      if (failed)
        break;
      armKeepalive();
      if (quietTimer) {
        clearTimeout(quietTimer);
        quietTimer = void 0;
      }
      let off = 0;
      while (off < chunk.length) {
        const n = Math.min(chunk.length - off, SIDEBAND_64K_MAX - used);
        chunk.copy(frame, 5 + used, off, off + n);
        used += n;
        off += n;
        if (used >= THRESHOLD)
          sendData(used - 1);
      }
      if (used > 1)
        quietTimer = setTimeout(guard(() => {
          quietTimer = void 0;
          sendData(used - 1);
        }), opts.quietMs ?? QUIET_MS);
      if (writer.sink.backedUp)
        await writer.drained();
      if (writer.sink.closed)
        throw new GitwireError("GW_CLIENT_GONE", "the remote end hung up unexpectedly");
    }
    if (!failed && used > 1)
      sendData(used - 1);
  } catch (e) {
    failed ??= e;
  }
  const exit = failed ? (await killChild(child), { code: null, signal: "SIGTERM" }) : await waitExit(child);
  await stderrDone;
  for (const t of [keepaliveTimer, quietTimer, progressTimer])
    if (t)
      clearTimeout(t);
  if (failed)
    throw failed;
  if (exit.code !== 0) {
    const err = new GitwireError("GW_PACK_FAILED", `git upload-pack: ${ABORT_MSG}`);
    opts.stderr?.(Buffer.from("error: git upload-pack: git-pack-objects died with error.\n"));
    try {
      const msg = Buffer.from(`${ABORT_MSG}\0`, "latin1");
      if (sideband) {
        writer.band(3, msg);
        writer.push();
      } else
        opts.stderr?.(msg);
    } catch {
    }
    throw err;
  }
  sendData(used);
  if (sideband)
    writer.flush();
  else
    writer.push();
  return stats;
}
var ABORT_MSG, THRESHOLD, QUIET_MS, PROGRESS_COALESCE_MS, KEEPALIVE;
var init_relay = __esm({
  "dist/pack/relay.js"() {
    "use strict";
    init_codec();
    init_errors();
    ABORT_MSG = "aborting due to possible repository corruption on the remote side.";
    THRESHOLD = Math.floor((SIDEBAND_64K_MAX + 1) * 2 / 3);
    QUIET_MS = 100;
    PROGRESS_COALESCE_MS = 100;
    KEEPALIVE = Buffer.from("0005", "latin1");
  }
});

// dist/pack/create-pack.js
var create_pack_exports = {};
__export(create_pack_exports, {
  sendPack: () => sendPack
});
async function sendPack(s) {
  const w = s.writer;
  w.sideband = s.sideband;
  let release;
  if (s.opts.acquirePackSlot)
    release = await s.opts.acquirePackSlot(w, s.sideband !== "none");
  try {
    const child = spawnPackObjects({
      gitDir: s.repo.commonDir,
      wants: s.wants,
      haves: s.haves,
      extraEdges: s.extraEdges,
      shallow: [...s.registeredShallow.values()],
      useShallow: s.shallowNr > 0,
      thin: s.thinPack,
      progress: !s.noProgress,
      ofsDelta: s.ofsDelta,
      includeTag: s.includeTag,
      filter: s.filter?.spec,
      hook: s.cfg.packObjectsHook,
      env: s.opts.env ?? s.repo.env
    });
    return await relayPack(child, w, {
      keepalive: s.cfg.keepalive,
      quietMs: s.opts.relayQuietMs,
      stderr: (b) => {
        try {
          process.stderr.write(b);
        } catch {
        }
      }
    });
  } finally {
    release?.();
  }
}
var init_create_pack = __esm({
  "dist/pack/create-pack.js"() {
    "use strict";
    init_pack_objects();
    init_relay();
  }
});

// dist/protocol/v0.js
function hasFeature(features, name) {
  let i = 0;
  while ((i = features.indexOf(name, i)) >= 0) {
    const before = i === 0 || features[i - 1] === " ";
    const after = features[i + name.length];
    if (before && (after === void 0 || after === " " || after === "="))
      return true;
    i += name.length;
  }
  return false;
}
function featureValue(features, name) {
  for (const f of features.split(" "))
    if (f.startsWith(`${name}=`))
      return f.slice(name.length + 1);
  return void 0;
}
async function readLine(reader) {
  const p = await reader.read();
  if (p.kind === "eof")
    throw new GitwireError("GW_PKT_EOF", "the remote end hung up unexpectedly");
  if (p.kind !== "data")
    return void 0;
  return p.data.toString("latin1");
}
async function receiveNeeds(s, reader) {
  const hexLen = s.repo.hexLen;
  let first = true;
  for (; ; ) {
    const line = await readLine(reader);
    if (line === void 0)
      break;
    if (processShallow(s, line))
      continue;
    if (parseDeepenLine(s, line))
      continue;
    if (line.startsWith("filter ")) {
      if (!s.filterRequested)
        throw die3("git upload-pack: filtering capability not negotiated");
      if (s.filter)
        throw die3("multiple filter-specs cannot be combined");
      s.filter = parseFilter(line.slice(7));
      const banned = s.cfg.filterPolicy.check(s.filter);
      if (banned) {
        s.writer.error(banned);
        throw die3(banned);
      }
      continue;
    }
    const hex = line.slice(5, 5 + hexLen);
    if (!line.startsWith("want ") || !isHex(hex, hexLen)) {
      throw die3(`git upload-pack: protocol error, expected to get object ID, not '${line}'`);
    }
    const features = line.slice(5 + hexLen);
    if (first || features) {
      if (hasFeature(features, "deepen-relative"))
        s.deepenRelative = true;
      if (hasFeature(features, "multi_ack_detailed"))
        s.multiAck = 2;
      else if (hasFeature(features, "multi_ack"))
        s.multiAck = 1;
      if (hasFeature(features, "no-done"))
        s.noDone = true;
      if (hasFeature(features, "thin-pack"))
        s.thinPack = true;
      if (hasFeature(features, "ofs-delta"))
        s.ofsDelta = true;
      if (hasFeature(features, "side-band-64k"))
        s.sideband = "side-band-64k";
      else if (hasFeature(features, "side-band"))
        s.sideband = "side-band";
      if (hasFeature(features, "no-progress"))
        s.noProgress = true;
      if (hasFeature(features, "include-tag"))
        s.includeTag = true;
      if (s.cfg.allowFilter && hasFeature(features, "filter"))
        s.filterRequested = true;
      const sid = featureValue(features, "session-id");
      if (sid)
        s.opts.trace?.data("transfer", "client-sid", sid);
    }
    first = false;
    const oid = Buffer.from(hex, "hex");
    if (!s.repo.odb.has(oid))
      throw notOurRef(s, oid);
    s.addWant(oid);
  }
  checkWants(s);
  if (s.sideband === "none" && s.opts.daemonMode)
    s.noProgress = true;
  if (s.depth === 0 && !s.deepenRevList && s.shallows.length === 0)
    return;
  if (sendShallowList(s))
    s.writer.flush();
}
async function getCommonCommits(s, reader) {
  const w = s.writer;
  let lastHex = "";
  let gotCommon = false, gotOther = false, sentReady = false;
  for (; ; ) {
    const p = await reader.read();
    if (p.kind !== "data") {
      if (p.kind === "eof")
        throw new GitwireError("GW_PKT_EOF", "the remote end hung up unexpectedly");
      if (s.multiAck === 2 && gotCommon && !gotOther && okToGiveUp(s)) {
        sentReady = true;
        w.data(`ACK ${lastHex} ready
`);
      }
      if (s.haves.length === 0 || s.multiAck)
        w.data("NAK\n");
      if (s.noDone && sentReady) {
        w.data(`ACK ${lastHex}
`);
        w.push();
        return true;
      }
      w.push();
      if (s.opts.statelessRpc)
        return false;
      gotCommon = false;
      gotOther = false;
      continue;
    }
    const line = p.data.toString("latin1");
    if (line.startsWith("have ")) {
      const hex = line.slice(5);
      if (!isHex(hex, s.repo.hexLen))
        throw die3(`git upload-pack: expected SHA1 object, got '${hex}'`);
      const oid = Buffer.from(hex, "hex");
      const r = gotHave(s, oid);
      if (r === -1) {
        gotOther = true;
        if (s.multiAck && okToGiveUp(s)) {
          if (s.multiAck === 2) {
            sentReady = true;
            w.data(`ACK ${hex} ready
`);
          } else
            w.data(`ACK ${hex} continue
`);
        }
      } else {
        gotCommon = true;
        lastHex = hex;
        if (s.multiAck === 2)
          w.data(`ACK ${lastHex} common
`);
        else if (s.multiAck)
          w.data(`ACK ${lastHex} continue
`);
        else if (s.haves.length === 1)
          w.data(`ACK ${lastHex}
`);
      }
      continue;
    }
    if (line === "done") {
      if (s.haves.length > 0) {
        if (s.multiAck)
          w.data(`ACK ${lastHex}
`);
        return true;
      }
      w.data("NAK\n");
      return true;
    }
    throw die3(`git upload-pack: expected SHA1 list, got '${line}'`);
  }
}
async function uploadPackV0(s, reader, o) {
  if (o.advertiseRefs || !o.statelessRpc) {
    await advertiseRefs(s, { advertiseRefs: o.advertiseRefs, sessionId: o.sessionId });
  }
  if (o.advertiseRefs)
    return;
  await receiveNeeds(s, reader);
  s.writer.push();
  if (s.wants.length === 0)
    return;
  const next = await reader.peek();
  if (next.kind === "eof") {
    if (o.statelessRpc)
      return;
    throw new GitwireError("GW_PKT_EOF", "the remote end hung up unexpectedly");
  }
  if (!await getCommonCommits(s, reader))
    return;
  traceFetchInfo(s);
  s.stats.wants += s.wants.length;
  s.stats.haves += s.haves.length;
  const { sendPack: sendPack2 } = await Promise.resolve().then(() => (init_create_pack(), create_pack_exports));
  await sendPack2(s);
}
function traceFetchInfo(s) {
  const t = s.opts.trace;
  if (!t?.enabled)
    return;
  t.dataJson("upload-pack", "fetch-info", {
    haves: s.haves.length,
    wants: s.wants.length,
    "want-refs": s.wantedRefs.length,
    depth: s.depth,
    shallows: s.shallows.length,
    "deepen-since": s.deepenSince,
    "deepen-not": s.deepenNot.length,
    "deepen-relative": s.deepenRelative,
    "filter": s.filter?.spec ?? null
  });
}
var die3;
var init_v0 = __esm({
  "dist/protocol/v0.js"() {
    "use strict";
    init_errors();
    init_advertise();
    init_filter();
    init_negotiation();
    init_shallow();
    init_wants();
    init_deepen();
    die3 = (msg) => new GitwireError("GW_PROTOCOL", msg);
  }
});

// dist/protocol/version.js
function protocolVersion(gitProtocol) {
  let v = 0;
  for (const item of (gitProtocol ?? "").split(":")) {
    if (!item.startsWith("version="))
      continue;
    const n = item.slice(8);
    if (n === "2")
      v = 2;
    else if (n === "1" && v < 1)
      v = 1;
  }
  return v;
}
var init_version2 = __esm({
  "dist/protocol/version.js"() {
    "use strict";
  }
});

// dist/protocol/trace2.js
import { appendFileSync, writeSync as writeSync2 } from "node:fs";
import { hostname } from "node:os";
function target(v) {
  if (!v || v === "0" || v.toLowerCase() === "false")
    return void 0;
  if (v === "1" || v.toLowerCase() === "true" || v === "2")
    return (l) => {
      try {
        writeSync2(2, l);
      } catch {
      }
    };
  if (/^\d+$/.test(v)) {
    const fd = Number(v);
    return (l) => {
      try {
        writeSync2(fd, l);
      } catch {
      }
    };
  }
  if (v.startsWith("/"))
    return (l) => {
      try {
        appendFileSync(v, l);
      } catch {
      }
    };
  return void 0;
}
var Trace2;
var init_trace2 = __esm({
  "dist/protocol/trace2.js"() {
    "use strict";
    Trace2 = class {
      version;
      sid;
      event;
      normal;
      start = process.hrtime.bigint();
      constructor(env = process.env, version2 = "0") {
        this.version = version2;
        const parent = env.GIT_TRACE2_PARENT_SID;
        const own = `${(/* @__PURE__ */ new Date()).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "")}-${process.pid.toString(16)}-${Math.floor(Math.random() * 65536).toString(16).padStart(4, "0")}`;
        this.sid = parent ? `${parent}/gitwire-${own}` : `gitwire-${own}-${hostname()}`;
        this.event = target(env.GIT_TRACE2_EVENT);
        this.normal = target(env.GIT_TRACE2);
        if (this.enabled)
          env.GIT_TRACE2_PARENT_SID = this.sid;
      }
      get enabled() {
        return this.event !== void 0 || this.normal !== void 0;
      }
      base(ev) {
        return { event: ev, sid: this.sid, thread: "main", time: (/* @__PURE__ */ new Date()).toISOString() };
      }
      elapsed() {
        return Number(process.hrtime.bigint() - this.start) / 1e9;
      }
      emit(ev, fields, normal) {
        this.event?.(`${JSON.stringify({ ...this.base(ev), ...fields })}
`);
        if (normal !== void 0)
          this.normal?.(`${(/* @__PURE__ */ new Date()).toISOString().slice(11, 26)} gitwire ${normal}
`);
      }
      versionEv() {
        this.emit("version", { evt: "3", exe: this.version }, `version ${this.version}`);
      }
      startEv(argv) {
        this.emit("start", { t_abs: this.elapsed(), argv: ["git", ...argv] }, `start git ${argv.join(" ")}`);
      }
      exitEv(code) {
        this.emit("exit", { t_abs: this.elapsed(), code }, `exit elapsed:${this.elapsed().toFixed(6)} code:${code}`);
      }
      data(category, key, value) {
        this.emit(typeof value === "number" ? "data" : "data", { t_abs: this.elapsed(), t_rel: this.elapsed(), nesting: 1, category, key, value: String(value) }, `data ${category} ${key}:${value}`);
      }
      dataJson(category, key, value) {
        this.emit("data_json", { t_abs: this.elapsed(), t_rel: this.elapsed(), nesting: 1, category, key, value }, `data_json ${category} ${key}:${JSON.stringify(value)}`);
      }
    };
  }
});

// dist/protocol/v2/args.js
async function* commandArgs(r, command) {
  for (; ; ) {
    const p = await r.readPacket();
    if (p.kind === "data") {
      yield p.data.toString("latin1");
      continue;
    }
    if (p.kind !== "flush")
      throw new GitwireError("GW_PROTOCOL", `expected flush after ${command} arguments`);
    return;
  }
}
var init_args = __esm({
  "dist/protocol/v2/args.js"() {
    "use strict";
    init_errors();
  }
});

// dist/protocol/v2/ls-refs.js
function lsRefsConfig(s) {
  const v = s.repo.config.get("lsrefs.unborn");
  if (v === void 0 || v === "advertise")
    return { advertise: true, allow: true };
  if (v === "allow")
    return { advertise: false, allow: true };
  if (v === "ignore")
    return { advertise: false, allow: false };
  throw die4(`invalid value for 'lsrefs.unborn': '${v}'`);
}
async function lsRefs(s, r) {
  let peel = false, symrefs = false, unborn = false;
  const prefixes = [];
  let tooMany = false;
  for await (const arg of commandArgs(r, "ls-refs")) {
    if (arg === "peel")
      peel = true;
    else if (arg === "symrefs")
      symrefs = true;
    else if (arg.startsWith("ref-prefix ")) {
      if (prefixes.length < TOO_MANY_PREFIXES)
        prefixes.push(arg.slice(11));
      else
        tooMany = true;
    } else if (arg === "unborn")
      unborn = lsRefsConfig(s).allow;
    else
      throw die4(`unexpected line: '${arg}'`);
  }
  if (tooMany || prefixes.length >= TOO_MANY_PREFIXES)
    prefixes.length = 0;
  const pfx = prefixes.map((x) => Buffer.from(x));
  const matchHead = (name) => {
    if (pfx.length === 0)
      return true;
    for (const q of pfx)
      if (name.length >= q.length && name.compare(q, 0, q.length, 0, q.length) === 0)
        return true;
    return false;
  };
  const w = s.writer;
  const ns = s.repo.namespace;
  const refs = s.repo.refs;
  const stripNs = (name) => ns && name.startsWith(ns) ? name.slice(ns.length) : name;
  const headName = `${ns}HEAD`;
  const loose = refs.readLoose(headName);
  let headHex, headTarget;
  if (loose?.symref) {
    headTarget = loose.symref;
    headHex = refs.resolve(loose.symref)?.hex;
  } else if (loose?.hex)
    headHex = loose.hex;
  else if (ns)
    headHex = refs.lookupPacked(headName)?.hex;
  const HEAD = Buffer.from("HEAD");
  if ((headHex || unborn && symrefs && headTarget) && !s.isHidden(HEAD, Buffer.from(headName)) && matchHead(HEAD)) {
    let line = headHex ? `${headHex.toString("latin1")} HEAD` : "unborn HEAD";
    if (symrefs && headTarget)
      line += ` symref-target:${stripNs(headTarget)}`;
    if (peel && headHex) {
      const known = refs.peeledFromPacked(headName);
      const pe = known === "none" ? void 0 : known ?? s.repo.peel(Buffer.from(headHex.toString("latin1"), "hex"));
      if (pe)
        line += ` peeled:${Buffer.isBuffer(pe) && pe.length === s.repo.hexLen ? pe.toString("latin1") : pe.toString("hex")}`;
    }
    w.data(`${line}
`);
  }
  const hexLen = s.repo.hexLen;
  const hide = s.cfg.hideRefs;
  const filter = s.opts.refFilter;
  const nsLen = ns.length;
  const plain2 = !symrefs && !peel;
  await refs.scan(ns || "refs/", (b, hexAt2, nameAt, nameEnd, peeledAt, state, symref) => {
    const stripped = nameAt + nsLen;
    if (pfx.length) {
      let ok = false;
      for (const q of pfx)
        if (nameEnd - stripped >= q.length && b.compare(q, 0, q.length, stripped, stripped + q.length) === 0) {
          ok = true;
          break;
        }
      if (!ok)
        return;
    }
    if (!hide.empty && hide.isHiddenRegion(b, stripped, nameAt, nameEnd))
      return;
    if (filter && !filter(b.toString("utf8", stripped, nameEnd)))
      return;
    if (plain2 && !nsLen) {
      w.dataRegion(b, hexAt2, nameEnd, LF2);
      return;
    }
    if (!nsLen && !(symrefs && symref) && !(peel && state !== 1)) {
      w.dataRegion(b, hexAt2, nameEnd, LF2);
      return;
    }
    let tail = "";
    if (symrefs && symref)
      tail += ` symref-target:${stripNs(symref)}`;
    if (peel) {
      if (state === 2)
        tail += ` peeled:${b.toString("latin1", peeledAt, peeledAt + hexLen)}`;
      else if (state === 0) {
        const pe = s.repo.peel(Buffer.from(b.toString("latin1", hexAt2, hexAt2 + hexLen), "hex"));
        if (pe)
          tail += ` peeled:${pe.toString("hex")}`;
      }
    }
    w.dataParts(b.subarray(hexAt2, hexAt2 + hexLen), SP2, b.subarray(stripped, nameEnd), tail, LF2);
  }, () => w.sink.backedUp ? w.drained() : void 0);
  w.flush();
}
var TOO_MANY_PREFIXES, die4, SP2, LF2;
var init_ls_refs = __esm({
  "dist/protocol/v2/ls-refs.js"() {
    "use strict";
    init_errors();
    init_args();
    TOO_MANY_PREFIXES = 65536;
    die4 = (msg) => new GitwireError("GW_PROTOCOL", msg);
    SP2 = Buffer.from(" ");
    LF2 = Buffer.from("\n");
  }
});

// dist/protocol/v2/fetch.js
async function processArgs(s, r) {
  const a = { haves: [], done: false, waitForDone: false };
  const hexLen = s.repo.hexLen;
  for await (const line of commandArgs(r, "fetch")) {
    if (line.startsWith("want ")) {
      const hex = line.slice(5);
      if (!isHex(hex, hexLen))
        throw die5(`git upload-pack: protocol error, expected to get oid, not '${line}'`);
      const oid = Buffer.from(hex, "hex");
      if (!s.repo.odb.has(oid))
        throw notOurRef(s, oid);
      s.addWant(oid);
      continue;
    }
    if (s.cfg.allowRefInWant && line.startsWith("want-ref ")) {
      const name = line.slice(9);
      const full = s.repo.namespace + name;
      const res = s.isHidden(Buffer.from(name), Buffer.from(full)) ? void 0 : s.repo.refs.resolve(full);
      if (!res?.hex) {
        s.writer.error(`unknown ref ${name}`);
        throw die5(`unknown ref ${name}`);
      }
      const oid = Buffer.from(res.hex.toString("latin1"), "hex");
      s.wantedRefs.push({ name, oid });
      s.addWant(oid);
      continue;
    }
    if (line.startsWith("have ")) {
      const hex = line.slice(5);
      if (!isHex(hex, hexLen))
        throw die5(`git upload-pack: expected SHA1 object, got '${hex}'`);
      a.haves.push(Buffer.from(hex, "hex"));
      continue;
    }
    switch (line) {
      case "thin-pack":
        s.thinPack = true;
        continue;
      case "ofs-delta":
        s.ofsDelta = true;
        continue;
      case "no-progress":
        s.noProgress = true;
        continue;
      case "include-tag":
        s.includeTag = true;
        continue;
      case "done":
        a.done = true;
        continue;
      case "wait-for-done":
        a.waitForDone = true;
        continue;
      case "deepen-relative":
        s.deepenRelative = true;
        continue;
    }
    if (processShallow(s, line))
      continue;
    if (parseDeepenLine(s, line))
      continue;
    if (s.cfg.allowFilter && line.startsWith("filter ")) {
      if (s.filter)
        throw die5("multiple filter-specs cannot be combined");
      s.filter = parseFilter(line.slice(7));
      const banned = s.cfg.filterPolicy.check(s.filter);
      if (banned) {
        s.writer.error(banned);
        throw die5(banned);
      }
      continue;
    }
    if (line === "sideband-all" && (s.cfg.allowSidebandAll || /^(1|true|yes|on)$/i.test(s.repo.env.GIT_TEST_SIDEBAND_ALL ?? ""))) {
      s.writer.sidebandAll = true;
      continue;
    }
    if (line.startsWith("packfile-uris "))
      continue;
    throw die5(`unexpected line: '${line}'`);
  }
  return a;
}
function enforceWantPolicy(s) {
  if (s.cfg.hideRefs.empty && !s.opts.refFilter)
    return;
  checkWants(s, true);
}
function sendAcks(s, common, waitForDone) {
  const w = s.writer;
  w.data("acknowledgments\n");
  if (common.length === 0)
    w.data("NAK\n");
  for (const o of common)
    w.data(`ACK ${o.toString("hex")}
`);
  if (!waitForDone && okToGiveUp(s)) {
    w.data("ready\n");
    return true;
  }
  return false;
}
function sendShallowInfo(s) {
  const repoIsShallow = repoShallow(s).size > 0;
  if (!s.depth && !s.deepenRevList && !s.shallows.length && !repoIsShallow)
    return;
  s.writer.data("shallow-info\n");
  if (!sendShallowList(s) && repoIsShallow)
    deepen(s, INFINITE_DEPTH);
  s.writer.raw(DELIM);
  s.writer.push();
}
async function fetchV2(s, r) {
  s.sideband = "side-band-64k";
  const a = await processArgs(s, r);
  if (s.wants.length === 0 && !a.waitForDone)
    return;
  enforceWantPolicy(s);
  const w = s.writer;
  if (a.haves.length) {
    const common = [];
    for (const h of a.haves) {
      if (!s.repo.odb.has(h))
        continue;
      common.push(h);
      gotHave(s, h);
    }
    if (!a.done) {
      if (sendAcks(s, common, a.waitForDone)) {
        w.delim();
        w.push();
      } else {
        w.flush();
        return;
      }
    }
  }
  if (s.wantedRefs.length) {
    w.data("wanted-refs\n");
    for (const wr of s.wantedRefs)
      w.data(`${wr.oid.toString("hex")} ${wr.name}
`);
    w.delim();
    w.push();
  }
  sendShallowInfo(s);
  w.data("packfile\n");
  traceFetchInfo(s);
  const { sendPack: sendPack2 } = await Promise.resolve().then(() => (init_create_pack(), create_pack_exports));
  await sendPack2(s);
}
var die5;
var init_fetch = __esm({
  "dist/protocol/v2/fetch.js"() {
    "use strict";
    init_errors();
    init_codec();
    init_filter();
    init_negotiation();
    init_shallow();
    init_session();
    init_wants();
    init_deepen();
    init_v0();
    init_args();
    die5 = (msg) => new GitwireError("GW_PROTOCOL", msg);
  }
});

// dist/protocol/v2/object-info.js
async function objectInfo(s, r) {
  const w = s.writer;
  let size = false;
  const oids = [];
  for (; ; ) {
    const p = await r.readPacket();
    if (p.kind !== "data") {
      if (p.kind !== "flush") {
        w.error("object-info: expected flush after arguments");
        throw new GitwireError("GW_PROTOCOL", "object-info: expected flush after arguments");
      }
      break;
    }
    const line = p.data.toString("latin1");
    if (line === "size") {
      size = true;
      continue;
    }
    if (line.startsWith("oid ")) {
      oids.push(line.slice(4));
      continue;
    }
    w.data(`ERR object-info: unexpected line: '${line}'`);
  }
  if (oids.length) {
    if (size)
      w.data("size");
    for (const hex of oids) {
      if (!isHex(hex, s.repo.hexLen)) {
        w.data(`ERR object-info: protocol error, expected to get oid, not '${hex}'`);
        continue;
      }
      let out = hex;
      if (size) {
        const info = s.repo.odb.info(Buffer.from(hex, "hex"));
        out += info ? ` ${info.size}` : " ";
      }
      w.data(out);
    }
  }
  w.flush();
}
var init_object_info = __esm({
  "dist/protocol/v2/object-info.js"() {
    "use strict";
    init_errors();
    init_shallow();
  }
});

// dist/protocol/v2/bundle-uri.js
async function bundleUri(s, r) {
  for await (const arg of commandArgs(r, "bundle-uri")) {
    throw new GitwireError("GW_PROTOCOL", `bundle-uri: unexpected argument: '${arg}'`);
  }
  const w = s.writer;
  for (const e of s.repo.config.each()) {
    if (!e.key.startsWith("bundle."))
      continue;
    if (e.value)
      w.data(`${e.key}=${e.value}`);
  }
  w.flush();
}
var init_bundle_uri = __esm({
  "dist/protocol/v2/bundle-uri.js"() {
    "use strict";
    init_errors();
    init_args();
  }
});

// dist/protocol/v2/serve.js
var serve_exports = {};
__export(serve_exports, {
  advertiseCapabilities: () => advertiseCapabilities,
  serveV2: () => serveV2
});
function envBool(v) {
  return !!v && ["1", "true", "yes", "on"].includes(v.toLowerCase());
}
function advertiseCapabilities(s, o) {
  const c = { s, o, clientFormat: "sha1" };
  const w = s.writer;
  w.data("version 2\n");
  for (const cap of CAPABILITIES) {
    const v = cap.advertise(c);
    if (v === void 0)
      continue;
    w.data(v ? `${cap.name}=${v}
` : `${cap.name}
`);
  }
  w.flush();
}
function getCapability(key) {
  for (const cap of CAPABILITIES) {
    if (!key.startsWith(cap.name))
      continue;
    const rest = key.slice(cap.name.length);
    if (rest === "")
      return { cap, value: void 0 };
    if (rest[0] === "=")
      return { cap, value: rest.slice(1) };
  }
  return void 0;
}
async function processRequest(c, r) {
  const first = await r.peek();
  if (first.kind === "eof")
    return false;
  let command;
  let seen = false;
  for (; ; ) {
    const p = await r.peek();
    if (p.kind === "eof")
      throw new GitwireError("GW_PKT_EOF", "the remote end hung up unexpectedly");
    if (p.kind === "flush") {
      if (!seen) {
        await r.read();
        return false;
      }
      break;
    }
    if (p.kind === "delim") {
      await r.read();
      break;
    }
    if (p.kind === "response-end")
      throw die6("unexpected response end packet");
    const line = p.data.toString("latin1");
    if (line.startsWith("command=")) {
      const name = line.slice(8);
      const found = getCapability(name);
      if (command)
        throw die6(`command '${name}' requested after already requesting command '${command.name}'`);
      if (!found || found.cap.advertise(c) === void 0 || !found.cap.command || found.value !== void 0)
        throw die6(`invalid command '${name}'`);
      command = found.cap;
      seen = true;
    } else {
      const found = getCapability(line);
      if (!found || found.cap.command || found.cap.advertise(c) === void 0)
        throw die6(`unknown capability '${line}'`);
      found.cap.receive?.(c, found.value);
      seen = true;
    }
    await r.read();
  }
  if (!command)
    throw die6("no command requested");
  if (c.clientFormat !== c.s.repo.format)
    throw die6(`mismatched object format: server ${c.s.repo.format}; client ${c.clientFormat}
`);
  c.s.command = command.name;
  await command.command(c, r);
  return true;
}
async function serveV2(s, r, o) {
  if (o.advertiseOnly) {
    advertiseCapabilities(s, o);
    return;
  }
  if (!o.statelessRpc)
    advertiseCapabilities(s, o);
  const c = { s, o, clientFormat: "sha1" };
  if (o.statelessRpc) {
    await processRequest(c, r);
    s.resetRequest();
    return;
  }
  for (; ; ) {
    c.clientFormat = "sha1";
    s.resetRequest();
    if (!await processRequest(c, r))
      break;
  }
}
var die6, CAPABILITIES;
var init_serve = __esm({
  "dist/protocol/v2/serve.js"() {
    "use strict";
    init_errors();
    init_version();
    init_ls_refs();
    init_fetch();
    init_object_info();
    init_bundle_uri();
    die6 = (msg) => new GitwireError("GW_PROTOCOL", msg);
    CAPABILITIES = [
      { name: "agent", advertise: (c) => userAgent(c.s.repo.env) },
      { name: "ls-refs", advertise: (c) => lsRefsConfig(c.s).advertise ? "unborn" : "", command: (c, r) => lsRefs(c.s, r) },
      {
        name: "fetch",
        advertise: (c) => {
          const cfg = c.s.cfg;
          let v = "shallow wait-for-done";
          if (cfg.allowFilter)
            v += " filter";
          if (cfg.allowRefInWant)
            v += " ref-in-want";
          if (cfg.allowSidebandAll || envBool(c.s.repo.env.GIT_TEST_SIDEBAND_ALL))
            v += " sideband-all";
          return v;
        },
        command: (c, r) => fetchV2(c.s, r)
      },
      { name: "server-option", advertise: () => "" },
      {
        name: "object-format",
        advertise: (c) => c.s.repo.format,
        receive: (c, v) => {
          if (v === void 0)
            throw die6("object-format capability requires an argument");
          if (v !== "sha1" && v !== "sha256")
            throw die6(`unknown object format '${v}'`);
          c.clientFormat = v;
        }
      },
      {
        name: "session-id",
        advertise: (c) => c.s.cfg.advertiseSid && c.o.sessionId ? c.o.sessionId : void 0,
        receive: (c, v) => c.s.opts.trace?.data("transfer", "client-sid", v ?? "")
      },
      {
        name: "object-info",
        advertise: (c) => c.s.repo.config.getBool("transfer.advertiseobjectinfo", false) ? "" : void 0,
        command: (c, r) => objectInfo(c.s, r)
      },
      {
        name: "bundle-uri",
        advertise: (c) => c.s.repo.config.getBool("uploadpack.advertisebundleuris", false) ? "" : void 0,
        command: (c, r) => bundleUri(c.s, r)
      }
    ];
  }
});

// dist/protocol/upload-pack.js
async function uploadPack(o) {
  const env = o.env ?? process.env;
  const trace = new Trace2(env, version());
  if (trace.enabled) {
    trace.versionEv();
    trace.startEv(o.argv ?? ["upload-pack", o.directory]);
  }
  const lease = o.pool?.acquire(o.directory, { strict: o.strict, env });
  const repo = lease?.repo ?? Repository.open(o.directory, { strict: o.strict, env });
  try {
    const writer = new PacketWriter(o.output);
    if (o.preamble?.length)
      writer.raw(o.preamble);
    const proto = protocolVersion(env.GIT_PROTOCOL);
    trace.data("transfer", "negotiated-version", proto);
    const reader = new PktReader(o.input, { chomp: true, dieOnErr: true, beforeWait: () => writer.push(), timeoutMs: o.timeout ? o.timeout * 1e3 : void 0 });
    const session = new UploadPackSession(repo, writer, {
      statelessRpc: !!o.statelessRpc,
      daemonMode: !!o.timeout,
      timeout: o.timeout,
      refFilter: o.refFilter,
      acquirePackSlot: o.acquirePackSlot,
      trace,
      env,
      relayQuietMs: o.relayQuietMs
    });
    if (proto === 2) {
      const { serveV2: serveV22 } = await Promise.resolve().then(() => (init_serve(), serve_exports));
      await serveV22(session, reader, { advertiseOnly: !!o.advertiseRefs, statelessRpc: !!o.statelessRpc, sessionId: trace.sid });
    } else {
      if (proto === 1 && (o.advertiseRefs || !o.statelessRpc))
        writer.data("version 1\n");
      await uploadPackV0(session, reader, { advertiseRefs: !!o.advertiseRefs, statelessRpc: !!o.statelessRpc, sessionId: trace.sid });
    }
    writer.push();
    if (trace.enabled)
      trace.exitEv(0);
    return {
      protocol: proto,
      command: session.command ?? (o.advertiseRefs ? "advertise" : "upload-pack"),
      wants: session.stats.wants,
      haves: session.stats.haves,
      writes: o.output.stats.writes,
      bytes: o.output.stats.bytes
    };
  } catch (e) {
    if (trace.enabled)
      trace.exitEv(e instanceof GitwireError ? e.exitCode : 128);
    throw e;
  } finally {
    if (lease)
      lease.release();
    else
      repo.close();
  }
}
var init_upload_pack = __esm({
  "dist/protocol/upload-pack.js"() {
    "use strict";
    init_errors();
    init_writer();
    init_reader();
    init_repository();
    init_session();
    init_v0();
    init_version2();
    init_trace2();
    init_version();
  }
});

// dist/transport/stdio.js
function stdioUploadPack(o) {
  return uploadPack({ ...o, input: process.stdin, output: new FdSink(1) });
}
var init_stdio = __esm({
  "dist/transport/stdio.js"() {
    "use strict";
    init_sink();
    init_upload_pack();
  }
});

// dist/cli/upload-pack.js
var upload_pack_exports = {};
__export(upload_pack_exports, {
  runUploadPack: () => runUploadPack
});
async function runUploadPack(args) {
  let strict = false, stateless = false, advertise = false, timeout = 0;
  const dirs = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--strict")
      strict = true;
    else if (a === "--no-strict")
      strict = false;
    else if (a === "--stateless-rpc")
      stateless = true;
    else if (a === "--no-stateless-rpc")
      stateless = false;
    else if (a === "--advertise-refs" || a === "--http-backend-info-refs")
      advertise = true;
    else if (a.startsWith("--timeout="))
      timeout = Number(a.slice(10));
    else if (a === "--timeout")
      timeout = Number(args[++i]);
    else if (a === "--") {
      dirs.push(...args.slice(i + 1));
      break;
    } else if (a.startsWith("-")) {
      process.stderr.write(`error: unknown option \`${a.replace(/^-+/, "")}'
${USAGE}`);
      process.exit(129);
    } else
      dirs.push(a);
  }
  if (dirs.length !== 1 || !Number.isFinite(timeout)) {
    process.stderr.write(USAGE);
    process.exit(129);
  }
  try {
    await stdioUploadPack({ directory: dirs[0], strict, statelessRpc: stateless, advertiseRefs: advertise, timeout, argv: ["upload-pack", ...args] });
  } catch (e) {
    if (e instanceof GitwireError && e.code === "GW_CLIENT_GONE")
      process.exit(128);
    throw e;
  }
  process.exit(0);
}
var USAGE;
var init_upload_pack2 = __esm({
  "dist/cli/upload-pack.js"() {
    "use strict";
    init_errors();
    init_stdio();
    USAGE = `usage: git upload-pack [<options>] <dir>

    --stateless-rpc       quit after a single request/response exchange
    --strict              do not try <directory>/.git/ if <directory> is no Git directory
    --timeout <n>         interrupt transfer after <n> seconds of inactivity
`;
  }
});

// dist/catfile/format.js
function compileFormat(fmt) {
  const parts = [];
  let lit = "";
  let i = 0;
  while (i < fmt.length) {
    const pct = fmt.indexOf("%", i);
    if (pct < 0) {
      lit += fmt.slice(i);
      break;
    }
    lit += fmt.slice(i, pct);
    i = pct + 1;
    if (fmt[i] === "%") {
      lit += "%";
      i++;
      continue;
    }
    if (fmt[i] !== "(") {
      lit += "%";
      continue;
    }
    const end = fmt.indexOf(")", i + 1);
    if (end < 0)
      throw new GitwireError("GW_USAGE", `format element '${fmt.slice(i)}' does not end in ')'`);
    const name = fmt.slice(i + 1, end);
    if (!ATOMS.has(name))
      throw new GitwireError("GW_USAGE", `unknown format element: ${name}`);
    if (lit) {
      parts.push(lit);
      lit = "";
    }
    parts.push({ atom: name });
    i = end + 1;
  }
  if (lit)
    parts.push(lit);
  const has = (a) => parts.some((p) => typeof p !== "string" && p.atom === a);
  const needType = has("objecttype"), needSize = has("objectsize"), needDisk = has("objectsize:disk"), needDelta = has("deltabase");
  return {
    parts,
    needType,
    needSize,
    needDisk,
    needDelta,
    splitOnWhitespace: has("rest"),
    nameOnly: !needType && !needSize && !needDisk && !needDelta
  };
}
var ATOMS, DEFAULT_FORMAT;
var init_format = __esm({
  "dist/catfile/format.js"() {
    "use strict";
    init_errors();
    ATOMS = /* @__PURE__ */ new Set(["objectname", "objecttype", "objectsize", "objectsize:disk", "rest", "deltabase", "objectmode"]);
    DEFAULT_FORMAT = "%(objectname) %(objecttype) %(objectsize)";
  }
});

// dist/catfile/names.js
var DWIM, MINIMUM_ABBREV, TYPE_SORT, NameResolver;
var init_names = __esm({
  "dist/catfile/names.js"() {
    "use strict";
    init_object_type();
    init_objects();
    DWIM = ["%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"];
    MINIMUM_ABBREV = 4;
    TYPE_SORT = { [
      4
      /* ObjType.Tag */
    ]: 0, [
      1
      /* ObjType.Commit */
    ]: 1, [
      2
      /* ObjType.Tree */
    ]: 2, [
      3
      /* ObjType.Blob */
    ]: 3 };
    NameResolver = class {
      repo;
      diag;
      constructor(repo, diag = () => void 0) {
        this.repo = repo;
        this.diag = diag;
      }
      /** Shortest unique abbreviation, at least 7 hex digits (git's auto abbrev). */
      abbrev(oid) {
        const hex = oid.toString("hex");
        let count = 0;
        for (const s of this.repo.odb.sources)
          for (const p of s.packs)
            count += p.index.count;
        let len = Math.max(7, Math.ceil(Math.log2(Math.max(count, 1)) / 2) + 1);
        while (len < hex.length && this.repo.odb.findByPrefix(hex.slice(0, len), 2).length > 1)
          len++;
        return hex.slice(0, len);
      }
      describe(oid) {
        const hash = this.abbrev(oid);
        const o = this.repo.odb.read(oid);
        if (!o)
          return `${hash} [bad object]`;
        const shortDate = (secs, tz) => {
          const m = /^([+-])(\d\d)(\d\d)$/.exec(tz);
          const off = m ? (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
          return new Date((secs + off * 60) * 1e3).toISOString().slice(0, 10);
        };
        const text = o.data.toString("utf8");
        if (o.type === 1) {
          const a = /^author .*> (\d+) ([+-]\d{4})$/m.exec(text);
          const body = text.slice(text.indexOf("\n\n") + 2);
          const subject = body.split("\n\n")[0].replace(/\n/g, " ").trim();
          return `${hash} commit ${a ? shortDate(Number(a[1]), a[2]) : ""} - ${subject}`;
        }
        if (o.type === 4) {
          const tg = /^tagger .*> (\d+) [+-]\d{4}$/m.exec(text);
          const name = /^tag (.*)$/m.exec(text)?.[1] ?? "";
          return `${hash} tag ${tg ? shortDate(Number(tg[1]), "+0000") : ""} - ${name}`;
        }
        return `${hash} ${o.type === 2 ? "tree" : "blob"}`;
      }
      reportAmbiguous(prefix) {
        const all = this.repo.odb.findByPrefix(prefix, Number.MAX_SAFE_INTEGER);
        const typed = all.map((oid) => ({ oid, t: this.repo.odb.info(oid)?.type ?? 0 }));
        typed.sort((a, b) => a.t === b.t ? Buffer.compare(a.oid, b.oid) : (TYPE_SORT[a.t] ?? 9) - (TYPE_SORT[b.t] ?? 9));
        this.diag(`error: short object ID ${prefix} is ambiguous`);
        this.diag("hint: The candidates are:");
        for (const x of typed)
          this.diag(`hint:   ${this.describe(x.oid)}`);
      }
      isHex(s) {
        return /^[0-9a-fA-F]+$/.test(s);
      }
      /** Ref DWIM: the first rule that resolves wins. */
      dwimRef(name) {
        for (const rule of DWIM) {
          const full = rule.replace("%s", name);
          if (rule === "%s" && !full.startsWith("refs/") && !/^[A-Z_]+HEAD$|^HEAD$/.test(full))
            continue;
          const r = this.repo.refs.resolve(full);
          if (r?.hex)
            return Buffer.from(r.hex.toString("latin1"), "hex");
        }
        return void 0;
      }
      basic(name) {
        const hexLen = this.repo.hexLen;
        if (name.length === hexLen && this.isHex(name))
          return { status: "found", oid: Buffer.from(name, "hex") };
        if (name === "@")
          name = "HEAD";
        const ref = name ? this.dwimRef(name) : void 0;
        if (ref)
          return { status: "found", oid: ref };
        if (name.length >= MINIMUM_ABBREV && name.length <= hexLen && this.isHex(name)) {
          const found = this.repo.odb.findByPrefix(name.toLowerCase(), 2);
          if (found.length === 1)
            return { status: "found", oid: found[0] };
          if (found.length > 1) {
            this.reportAmbiguous(name);
            return { status: "ambiguous" };
          }
        }
        return { status: "missing" };
      }
      typeOf(oid) {
        return this.repo.odb.info(oid)?.type;
      }
      /**
       * repo_peel_to_type(): follow tags (and commit → tree) until `want`;
       * undefined `want` peels tags fully. `name` enables git's error line.
       */
      peelTo(oid, want, name) {
        let cur = oid;
        for (let i = 0; i < 100; i++) {
          const t = this.typeOf(cur);
          if (t === void 0)
            return void 0;
          if (want === void 0 ? t !== 4 : t === want)
            return cur;
          if (t === 4) {
            const o = this.repo.odb.read(cur);
            if (!o)
              return void 0;
            cur = parseTag(o.data, this.repo.hashLen).object;
            continue;
          }
          if (t === 1) {
            const c = this.repo.commit(cur);
            if (!c)
              return void 0;
            cur = c.tree;
            continue;
          }
          if (name !== void 0 && want !== void 0) {
            this.diag(`error: ${name}: expected ${typeName(want)} type, but the object dereferences to ${typeName(t)} type`);
          }
          return void 0;
        }
        return void 0;
      }
      applySuffixes(oid, ops, fullName) {
        let cur = oid;
        let i = 0;
        while (cur && i < ops.length) {
          const c = ops[i];
          if (c === "^" && ops[i + 1] === "{") {
            const end = ops.indexOf("}", i);
            if (end < 0)
              return void 0;
            const what = ops.slice(i + 2, end);
            i = end + 1;
            if (what === "") {
              cur = this.peelTo(cur, void 0);
              continue;
            }
            if (what === "object") {
              if (this.typeOf(cur) === void 0)
                return void 0;
              continue;
            }
            const t = typeFromName(what);
            if (t === void 0)
              return void 0;
            cur = this.peelTo(cur, t, fullName.slice(0, fullName.length - ops.length + end + 1));
            continue;
          }
          let j = i + 1;
          while (j < ops.length && ops[j] >= "0" && ops[j] <= "9")
            j++;
          const n = j > i + 1 ? Number(ops.slice(i + 1, j)) : 1;
          i = j;
          const commit = this.peelTo(
            cur,
            1
            /* ObjType.Commit */
          );
          if (!commit)
            return void 0;
          if (c === "~") {
            cur = commit;
            for (let k = 0; k < n && cur; k++)
              cur = this.repo.commit(cur)?.parents[0];
          } else if (c === "^") {
            if (n === 0) {
              cur = commit;
              continue;
            }
            cur = this.repo.commit(commit)?.parents[n - 1];
          } else
            return void 0;
        }
        return cur;
      }
      /** <rev> (no path part). */
      resolveRev(name) {
        const m = /[~^]/.exec(name);
        const base = m ? name.slice(0, m.index) : name;
        const r = this.basic(base);
        if (r.status !== "found" || !m)
          return r;
        const oid = this.applySuffixes(r.oid, name.slice(m.index), name);
        return oid ? { status: "found", oid } : { status: "missing" };
      }
      resolve(name, followSymlinks = false) {
        const colon = name.indexOf(":");
        if (colon < 0 || name.startsWith(":")) {
          if (name.startsWith(":"))
            return { status: "missing" };
          return this.resolveRev(name);
        }
        const rev = this.resolveRev(name.slice(0, colon));
        if (rev.status !== "found")
          return rev;
        const tree = this.peelTo(
          rev.oid,
          2
          /* ObjType.Tree */
        );
        if (!tree)
          return { status: "missing" };
        const path = name.slice(colon + 1);
        return followSymlinks ? this.walkFollow(tree, path) : this.walk(tree, path);
      }
      lookupEntry(tree, name) {
        const o = this.repo.odb.read(tree);
        if (!o || o.type !== 2)
          return void 0;
        const want = Buffer.from(name);
        for (const e of parseTree(o.data, this.repo.hashLen))
          if (e.name.equals(want))
            return { mode: e.mode, oid: Buffer.from(e.oid) };
        return void 0;
      }
      walk(tree, path) {
        const parts = path.split("/").filter((p) => p.length > 0);
        if (parts.length === 0)
          return { status: "found", oid: tree, mode: 16384, path };
        let cur = tree;
        let mode = 16384;
        for (const p of parts) {
          if (mode !== 16384)
            return { status: "missing" };
          const e = this.lookupEntry(cur, p);
          if (!e)
            return { status: "missing" };
          cur = e.oid;
          mode = e.mode;
        }
        return { status: "found", oid: cur, mode, path };
      }
      /** get_tree_entry_follow_symlinks(): resolve in-tree symlinks. */
      walkFollow(root, path) {
        let todo = path.split("/").filter((p) => p.length > 0);
        const stack = [root];
        let hops = 0;
        let followed = false;
        while (todo.length) {
          const p = todo.shift();
          if (p === ".")
            continue;
          if (p === "..") {
            if (stack.length === 1)
              return { status: "symlink", target: ["..", ...todo].join("/") };
            stack.pop();
            continue;
          }
          const e = this.lookupEntry(stack[stack.length - 1], p);
          if (!e)
            return { status: followed ? "dangling" : "missing" };
          if (e.mode === 16384) {
            stack.push(e.oid);
            if (!todo.length)
              return { status: "found", oid: e.oid, mode: e.mode, path };
            continue;
          }
          if (e.mode === 40960) {
            if (++hops > 40)
              return { status: "loop" };
            followed = true;
            const o = this.repo.odb.read(e.oid);
            if (!o)
              return { status: "missing" };
            const target2 = o.data.toString("latin1");
            if (target2.startsWith("/"))
              return { status: "symlink", target: [target2, ...todo].join("/") };
            todo = [...target2.split("/").filter((x) => x.length > 0), ...todo];
            if (todo.length === 0)
              return { status: "dangling" };
            continue;
          }
          if (todo.length)
            return { status: "notdir" };
          return { status: "found", oid: e.oid, mode: e.mode, path };
        }
        return { status: "found", oid: stack[stack.length - 1], mode: 16384, path };
      }
    };
  }
});

// dist/catfile/batch.js
var COALESCE, STREAM_OVER, STREAM_CHUNK, die7, BatchEngine;
var init_batch = __esm({
  "dist/catfile/batch.js"() {
    "use strict";
    init_errors();
    init_object_type();
    init_format();
    init_names();
    COALESCE = 64 * 1024;
    STREAM_OVER = 4 * 1024 * 1024;
    STREAM_CHUNK = 1024 * 1024;
    die7 = (msg) => new GitwireError("GW_USAGE", msg);
    BatchEngine = class {
      repo;
      out;
      o;
      fmt;
      // undefined: the default format
      names;
      delim;
      mode;
      queue = [];
      carry = "";
      constructor(repo, out, o) {
        this.repo = repo;
        this.out = out;
        this.o = o;
        const f = o.format ?? DEFAULT_FORMAT;
        const compiled = compileFormat(f);
        this.fmt = f === DEFAULT_FORMAT ? void 0 : compiled;
        this.names = new NameResolver(repo, o.diag);
        this.delim = Buffer.from(o.outputDelim, "latin1");
        this.mode = o.mode === "info" ? "info" : "contents";
      }
      emit(buf) {
        this.out.raw(buf);
        if (!this.o.buffer || this.out.buffered >= COALESCE)
          this.out.push();
      }
      status(text) {
        this.emit(Buffer.from(`${text}${this.o.outputDelim}`, "latin1"));
      }
      /** One object by id (already resolved). `name` is what the user typed. */
      writeObject(oid, name, rest, mode, known) {
        const odb = this.repo.odb;
        const f = this.fmt;
        const contents = this.mode === "contents";
        let type = 0, size = 0, data, disk = 0, deltaBase;
        const loc = known ?? odb.locate(oid);
        if (!loc) {
          this.status(`${name ?? oid.toString("hex")} missing`);
          return;
        }
        if (contents) {
          const o = odb.readAt(loc);
          type = o.type;
          data = o.data;
          size = o.data.length;
          if (f && (f.needDisk || f.needDelta)) {
            const i = odb.infoAt(loc, f.needDisk);
            disk = i.diskSize ?? 0;
            deltaBase = i.deltaBase;
          }
        } else if (!f || !f.nameOnly) {
          const i = odb.infoAt(loc, !!f?.needDisk);
          type = i.type;
          size = i.size;
          disk = i.diskSize ?? 0;
          deltaBase = i.deltaBase;
        }
        let header;
        if (!f)
          header = `${oid.toString("hex")} ${typeName(type)} ${size}`;
        else {
          header = "";
          for (const p of f.parts) {
            if (typeof p === "string") {
              header += p;
              continue;
            }
            switch (p.atom) {
              case "objectname":
                header += oid.toString("hex");
                break;
              case "objecttype":
                header += typeName(type);
                break;
              case "objectsize":
                header += String(size);
                break;
              case "objectsize:disk":
                header += String(disk);
                break;
              case "rest":
                if (rest !== void 0)
                  header += rest;
                break;
              case "deltabase":
                header += deltaBase ? deltaBase.toString("hex") : "0".repeat(this.repo.hexLen);
                break;
              case "objectmode":
                if (mode !== void 0)
                  header += mode.toString(8).padStart(6, "0");
                break;
            }
          }
        }
        const hlen = Buffer.byteLength(header, "latin1");
        const d = this.delim;
        if (!data) {
          const b2 = Buffer.allocUnsafe(hlen + 1);
          b2.write(header, 0, "latin1");
          d.copy(b2, hlen);
          this.emit(b2);
          return;
        }
        if (data.length > STREAM_OVER) {
          const first = Buffer.allocUnsafe(hlen + 1 + STREAM_CHUNK);
          first.write(header, 0, "latin1");
          d.copy(first, hlen);
          data.copy(first, hlen + 1, 0, STREAM_CHUNK);
          this.emit(first);
          let off = STREAM_CHUNK;
          while (data.length - off > STREAM_CHUNK + COALESCE) {
            this.emit(data.subarray(off, off + STREAM_CHUNK));
            off += STREAM_CHUNK;
          }
          const last = Buffer.allocUnsafe(data.length - off + 1);
          data.copy(last, 0, off);
          d.copy(last, data.length - off);
          this.emit(last);
          return;
        }
        const b = Buffer.allocUnsafe(hlen + 1 + data.length + 1);
        b.write(header, 0, "latin1");
        d.copy(b, hlen);
        data.copy(b, hlen + 1);
        d.copy(b, hlen + 1 + data.length);
        this.emit(b);
      }
      /** batch_one_object(): resolve a name and answer for it. */
      one(input) {
        let name = input;
        let rest;
        if (this.fmt?.splitOnWhitespace) {
          const m = /[ \t]/.exec(input);
          if (m) {
            name = input.slice(0, m.index);
            rest = input.slice(m.index).replace(/^[ \t]+/, "");
          }
        }
        const r = this.names.resolve(name, this.o.followSymlinks);
        const od = this.o.outputDelim;
        switch (r.status) {
          case "found":
            return this.writeObject(r.oid, name, rest, r.mode);
          case "missing":
            return this.status(`${name} missing`);
          case "ambiguous":
            return this.status(`${name} ambiguous`);
          case "dangling":
          case "loop":
          case "notdir":
            return this.status(`${r.status} ${Buffer.byteLength(name)}${od}${name}`);
          case "symlink":
            return this.status(`symlink ${Buffer.byteLength(r.target)}${od}${r.target}`);
        }
      }
      command(line) {
        if (!line)
          throw die7("empty command in input");
        if (/^\s/.test(line))
          throw die7(`whitespace before command: '${line}'`);
        for (const [name, takesArgs] of [["contents", true], ["info", true], ["flush", false]]) {
          if (!line.startsWith(name))
            continue;
          const after = line.slice(name.length);
          if (takesArgs) {
            if (after[0] !== " ")
              throw die7(`${name} requires arguments`);
            const arg = after.slice(1);
            if (!this.o.buffer) {
              this.mode = name;
              this.one(arg);
            } else
              this.queue.push({ mode: name, arg });
            return;
          }
          if (after)
            throw die7(`${name} takes no arguments`);
          this.dispatch();
          return;
        }
        throw die7(`unknown command: '${line}'`);
      }
      dispatch() {
        if (!this.o.buffer)
          throw die7("flush is only for --buffer mode");
        for (const q of this.queue) {
          this.mode = q.mode;
          this.one(q.arg);
        }
        this.queue = [];
        this.out.push();
      }
      /** Feed raw input; complete lines are answered at once. */
      feed(chunk) {
        const text = this.carry + chunk;
        const dl = this.o.inputDelim;
        let start = 0;
        for (; ; ) {
          const i = text.indexOf(dl, start);
          if (i < 0)
            break;
          this.line(text.slice(start, i));
          start = i + 1;
        }
        this.carry = text.slice(start);
      }
      line(l) {
        if (this.o.inputDelim === "\n" && l.endsWith("\r"))
          l = l.slice(0, -1);
        if (this.o.mode === "command")
          this.command(l);
        else
          this.one(l);
      }
      /** End of input: the last unterminated line, queued commands, buffered output. */
      end() {
        if (this.carry) {
          const c = this.carry;
          this.carry = "";
          this.line(c);
        }
        if (this.o.mode === "command" && this.o.buffer && this.queue.length)
          this.dispatch();
        this.out.push();
      }
      /** --batch-all-objects */
      all(unordered) {
        const odb = this.repo.odb;
        if (unordered)
          for (const x of odb.allObjectsWithLocation())
            this.writeObject(x.oid, void 0, void 0, void 0, x.loc);
        else
          for (const oid of odb.allObjectsSorted())
            this.writeObject(oid, void 0, void 0, void 0);
        this.out.push();
      }
    };
  }
});

// dist/catfile/single.js
function quotePath(name) {
  let needs = false;
  for (const c of name)
    if (c < 32 || c === 34 || c === 92 || c >= 127) {
      needs = true;
      break;
    }
  if (!needs)
    return name.toString("latin1");
  let out = '"';
  const named = { 7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\" };
  for (const c of name) {
    if (named[c])
      out += `\\${named[c]}`;
    else if (c < 32 || c >= 127)
      out += `\\${c.toString(8).padStart(3, "0")}`;
    else
      out += String.fromCharCode(c);
  }
  return `${out}"`;
}
function catOne(repo, mode, name) {
  const r = new NameResolver(repo).resolve(name);
  if (r.status !== "found")
    throw die8(`Not a valid object name ${name}`);
  const oid = r.oid;
  const odb = repo.odb;
  if (mode === "e")
    return { out: Buffer.alloc(0), code: odb.has(oid) ? 0 : 1 };
  if (mode === "t" || mode === "s") {
    const i = odb.info(oid);
    if (!i)
      throw die8("git cat-file: could not get object info");
    return { out: Buffer.from(`${mode === "t" ? typeName(i.type) : i.size}
`), code: 0 };
  }
  if (mode === "p") {
    const o2 = odb.read(oid);
    if (!o2)
      throw die8(`Not a valid object name ${name}`);
    if (o2.type !== 2)
      return { out: o2.data, code: 0 };
    let s = "";
    for (const e of parseTree(o2.data, repo.hashLen)) {
      const t = e.mode === 16384 ? "tree" : e.mode === 57344 ? "commit" : "blob";
      s += `${e.mode.toString(8).padStart(6, "0")} ${t} ${e.oid.toString("hex")}	${quotePath(e.name)}
`;
    }
    return { out: Buffer.from(s, "latin1"), code: 0 };
  }
  const want = typeFromName(mode.type);
  if (want === void 0)
    throw die8(`invalid object type "${mode.type}"`);
  const peeled = new NameResolver(repo).peelTo(oid, want);
  const o = peeled && odb.read(peeled);
  if (!o || o.type !== want)
    throw die8(`git cat-file ${name}: bad file`);
  return { out: o.data, code: 0 };
}
var die8;
var init_single = __esm({
  "dist/catfile/single.js"() {
    "use strict";
    init_errors();
    init_object_type();
    init_objects();
    init_names();
    die8 = (msg) => new GitwireError("GW_USAGE", msg);
  }
});

// dist/cli/cat-file.js
var cat_file_exports = {};
__export(cat_file_exports, {
  runCatFile: () => runCatFile
});
function usage(msg) {
  if (msg)
    process.stderr.write(`error: ${msg}
`);
  process.stderr.write(USAGE2);
  process.exit(129);
}
async function runCatFile(args) {
  let batch;
  let format;
  let buffer;
  let z = false, Z = false, all = false, unordered = false, follow = false;
  let single;
  const rest = [];
  for (const a of args) {
    const setBatch = (m, f) => {
      if (batch) {
        process.stderr.write("error: only one batch option may be specified\n");
        usage();
      }
      batch = m;
      format = f;
    };
    if (a === "--batch" || a.startsWith("--batch="))
      setBatch("contents", a.startsWith("--batch=") ? a.slice(8) : void 0);
    else if (a === "--batch-check" || a.startsWith("--batch-check="))
      setBatch("info", a.startsWith("--batch-check=") ? a.slice(14) : void 0);
    else if (a === "--batch-command" || a.startsWith("--batch-command="))
      setBatch("command", a.startsWith("--batch-command=") ? a.slice(16) : void 0);
    else if (a === "--buffer")
      buffer = true;
    else if (a === "--no-buffer")
      buffer = false;
    else if (a === "-z")
      z = true;
    else if (a === "-Z")
      Z = true;
    else if (a === "--batch-all-objects")
      all = true;
    else if (a === "--unordered")
      unordered = true;
    else if (a === "--follow-symlinks")
      follow = true;
    else if (a === "-t" || a === "-s" || a === "-e" || a === "-p") {
      if (single)
        usage(`-${a[1]} is incompatible with -${single}`);
      single = a[1];
    } else if (a.startsWith("-") && a !== "-")
      usage(`unknown option \`${a.replace(/^-+/, "")}'`);
    else
      rest.push(a);
  }
  if (!batch) {
    if (follow)
      usage("'--follow-symlinks' requires a batch mode");
    if (buffer !== void 0)
      usage("'--buffer' requires a batch mode");
    if (all)
      usage("'--batch-all-objects' requires a batch mode");
    if (z)
      usage("'-z' requires a batch mode");
    if (Z)
      usage("'-Z' requires a batch mode");
  }
  const repo = Repository.discover();
  if (batch) {
    if (single)
      usage(`'-${single}' is incompatible with batch mode`);
    if (rest.length)
      usage("batch modes take no arguments");
    const useBuffer = buffer ?? all;
    const writer = new PacketWriter(new FdSink(1), useBuffer ? 256 * 1024 : 64 * 1024);
    const engine = new BatchEngine(repo, writer, {
      mode: batch,
      format,
      buffer: useBuffer,
      inputDelim: z || Z ? "\0" : "\n",
      outputDelim: Z ? "\0" : "\n",
      followSymlinks: follow,
      diag: (line) => {
        writer.push();
        process.stderr.write(`${line}
`);
      }
    });
    try {
      if (all) {
        engine.all(unordered);
        process.exit(0);
      }
      for await (const chunk of process.stdin)
        engine.feed(chunk.toString("latin1"));
      engine.end();
    } catch (e) {
      writer.push();
      if (e instanceof GitwireError && e.code === "GW_CLIENT_GONE")
        process.exit(128);
      throw e;
    }
    process.exit(0);
  }
  let mode;
  let name;
  if (single) {
    if (rest.length === 0)
      usage(`<object> required with '-${single}'`);
    if (rest.length > 1)
      usage("too many arguments");
    mode = single;
    name = rest[0];
  } else {
    if (rest.length === 0)
      usage();
    if (rest.length !== 2)
      usage(`only two arguments allowed in <type> <object> mode, not ${rest.length}`);
    mode = { type: rest[0] };
    name = rest[1];
  }
  const { out, code } = catOne(repo, mode, name);
  if (out.length)
    new FdSink(1).write(out);
  process.exit(code);
}
var USAGE2;
var init_cat_file = __esm({
  "dist/cli/cat-file.js"() {
    "use strict";
    init_sink();
    init_writer();
    init_repository();
    init_batch();
    init_single();
    init_errors();
    USAGE2 = `usage: git cat-file <type> <object>
   or: git cat-file (-e | -p) <object>
   or: git cat-file (-t | -s) [--allow-unknown-type] <object>
   or: git cat-file (--batch | --batch-check | --batch-command) [--batch-all-objects]
                    [--buffer] [--follow-symlinks] [--unordered]
                    [--textconv | --filters] [-Z]
`;
  }
});

// dist/protocol/service.js
function findService(name) {
  return Object.hasOwn(services, name) ? services[name] : void 0;
}
var uploadPackService, services;
var init_service = __esm({
  "dist/protocol/service.js"() {
    "use strict";
    init_upload_pack();
    uploadPackService = {
      name: "git-upload-pack",
      http: {
        advertisement: "application/x-git-upload-pack-advertisement",
        request: "application/x-git-upload-pack-request",
        result: "application/x-git-upload-pack-result"
      },
      serve: uploadPack
    };
    services = {
      "git-upload-pack": uploadPackService
    };
  }
});

// dist/transport/paths.js
import { realpathSync } from "node:fs";
import { basename, isAbsolute as isAbsolute4, relative, resolve as resolve4, sep } from "node:path";
function resolveUnderRoot(root, requested) {
  if (requested.includes("\0") || requested.includes("\\"))
    return void 0;
  const segments = requested.split("/").filter((s) => s.length > 0 && s !== ".");
  if (segments.some((s) => s === ".." || s.startsWith("~")))
    return void 0;
  let realRoot;
  try {
    realRoot = realpathSync(root);
  } catch {
    return void 0;
  }
  const name = basename(realRoot).replace(/\.git$/, "");
  if (segments.length === 0 || segments.length === 1 && (segments[0] === name || segments[0] === `${name}.git`)) {
    try {
      const gd = realpathSync(locateRepository(realRoot, true).gitDir);
      if (within(realRoot, gd))
        return gd;
    } catch {
      try {
        const gd = realpathSync(locateRepository(`${realRoot}/.git`, true).gitDir);
        if (within(realRoot, gd))
          return gd;
      } catch {
      }
    }
  }
  const candidate = resolve4(realRoot, ...segments);
  if (!within(realRoot, candidate))
    return void 0;
  let gitDir;
  try {
    gitDir = locateRepository(candidate).gitDir;
  } catch {
    return void 0;
  }
  let real;
  try {
    real = realpathSync(gitDir);
  } catch {
    return void 0;
  }
  if (!within(realRoot, real))
    return void 0;
  return real;
}
function within(root, p) {
  const r = relative(root, p);
  return r === "" || !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute4(r);
}
var init_paths = __esm({
  "dist/transport/paths.js"() {
    "use strict";
    init_discover();
  }
});

// dist/transport/http.js
import { createGunzip, createInflate } from "node:zlib";
function plain(res, status, message, headers = {}) {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { ...NO_CACHE, "Content-Type": "text/plain; charset=utf-8", ...headers });
  res.end(message.endsWith("\n") ? message : `${message}
`);
}
async function readBody(req, cap) {
  const enc = (req.headers["content-encoding"] ?? "").toLowerCase();
  let src = req;
  if (enc === "gzip" || enc === "x-gzip")
    src = req.pipe(createGunzip());
  else if (enc === "deflate")
    src = req.pipe(createInflate());
  else if (enc && enc !== "identity")
    throw new GitwireError("GW_PROTOCOL", `unsupported Content-Encoding: ${enc}`, { exitCode: 415 });
  const chunks = [];
  let n = 0;
  try {
    for await (const c of src) {
      n += c.length;
      if (n > cap) {
        req.resume();
        throw new GitwireError("GW_LIMIT", `request was larger than our maximum size (${cap}); try setting GIT_HTTP_MAX_REQUEST_BUFFER`, { exitCode: 413 });
      }
      chunks.push(c);
    }
  } catch (e) {
    if (e instanceof GitwireError)
      throw e;
    throw new GitwireError("GW_PROTOCOL", `zlib error inflating request: ${e.message}`, { exitCode: 400 });
  }
  return Buffer.concat(chunks);
}
function route(pathname) {
  const m = /^(.*)\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(pathname);
  if (!m)
    return void 0;
  const kind = m[2] === "info/refs" ? "info-refs" : m[2] === "git-upload-pack" ? "upload-pack" : "receive-pack";
  return { repo: m[1], kind };
}
function decodePath(raw) {
  const segs = [];
  for (const s of raw.split("/")) {
    let d;
    try {
      d = decodeURIComponent(s);
    } catch {
      return void 0;
    }
    if (d.includes("/") || d.includes("\0") || d.includes("\\"))
      return void 0;
    segs.push(d);
  }
  return segs.join("/");
}
function createHttpHandler(opts) {
  const cap = opts.maxRequestBuffer ?? 10 * 1024 * 1024;
  return async (req, res) => {
    const t0 = process.hrtime.bigint();
    const entry = { transport: "http", bytesOut: 0, writes: 0, durationMs: 0, outcome: "ok" };
    const finish = (outcome, status, r) => {
      entry.outcome = outcome;
      entry.status = status ?? res.statusCode;
      if (r)
        Object.assign(entry, { protocol: r.protocol, command: r.command, wants: r.wants, haves: r.haves, bytesOut: r.bytes, writes: r.writes });
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      opts.log?.(entry);
    };
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      const r = route(url.pathname);
      const repoPath = r ? decodePath(r.repo) : void 0;
      if (!r || repoPath === void 0) {
        plain(res, 404, "Request not supported");
        return finish("not-found", 404);
      }
      const info = { transport: "http", path: repoPath, req, remoteAddress: req.socket.remoteAddress };
      const method = req.method ?? "GET";
      if (r.kind === "info-refs") {
        const service2 = url.searchParams.get("service");
        if (method !== "GET" && method !== "HEAD") {
          plain(res, 405, "Method Not Allowed", { Allow: "GET, HEAD" });
          return finish("bad-method", 405);
        }
        if (service2 === null) {
          plain(res, 403, "Unsupported service: getanyfile");
          return finish("forbidden", 403);
        }
        if (service2 === "git-receive-pack") {
          plain(res, 403, "Service not enabled: 'receive-pack'");
          return finish("forbidden", 403);
        }
        if (service2 !== "git-upload-pack") {
          plain(res, 403, `Unsupported service: '${service2}'`);
          return finish("forbidden", 403);
        }
      } else if (r.kind === "receive-pack") {
        plain(res, 403, "Service not enabled: 'receive-pack'");
        return finish("forbidden", 403);
      } else if (method !== "POST") {
        plain(res, 405, "Method Not Allowed", { Allow: "POST" });
        return finish("bad-method", 405);
      }
      const dir = opts.resolveRepository ? await opts.resolveRepository(info) : opts.root ? resolveUnderRoot(opts.root, repoPath) : void 0;
      entry.repository = repoPath;
      if (!dir) {
        plain(res, 404, "Repository not found");
        return finish("not-found", 404);
      }
      if (opts.authorize) {
        const a = await opts.authorize(info, dir);
        if (a !== true) {
          plain(res, a.status, a.message, a.headers);
          return finish("denied", a.status);
        }
      }
      const filter = opts.refFilter?.(info, dir);
      const service = services["git-upload-pack"];
      const env = { ...opts.env ?? process.env };
      delete env.GIT_PROTOCOL;
      const gp = req.headers["git-protocol"];
      if (typeof gp === "string" && gp)
        env.GIT_PROTOCOL = gp;
      if (r.kind === "info-refs") {
        res.writeHead(200, { ...NO_CACHE, "Content-Type": service.http.advertisement });
        if (method === "HEAD") {
          res.end();
          return finish("ok", 200);
        }
        const sink2 = new StreamSink(res);
        const v2 = /(^|:)version=2(:|$)/.test(env.GIT_PROTOCOL ?? "");
        const preamble = v2 ? Buffer.alloc(0) : Buffer.from("001e# service=git-upload-pack\n0000");
        const result = await service.serve({
          directory: dir,
          strict: true,
          advertiseRefs: true,
          statelessRpc: true,
          env,
          input: Buffer.alloc(0),
          output: sink2,
          refFilter: filter,
          preamble,
          pool: opts.pool
        });
        res.end();
        return finish("ok", 200, result);
      }
      const ctype = req.headers["content-type"] ?? "";
      if (ctype !== service.http.request) {
        req.resume();
        plain(res, 415, `Expected POST with Content-Type '${service.http.request}', but received '${ctype}' instead.`);
        return finish("bad-content-type", 415);
      }
      let body;
      try {
        body = await readBody(req, cap);
      } catch (e) {
        const ge = e;
        plain(res, ge.exitCode >= 400 ? ge.exitCode : 400, ge.message);
        return finish("bad-request", ge.exitCode);
      }
      res.writeHead(200, { ...NO_CACHE, "Content-Type": service.http.result });
      const sink = new StreamSink(res);
      try {
        const result = await service.serve({
          directory: dir,
          strict: true,
          statelessRpc: true,
          env,
          input: body,
          output: sink,
          refFilter: filter,
          acquirePackSlot: opts.limiter?.acquire,
          pool: opts.pool
        });
        res.end();
        return finish("ok", 200, result);
      } catch (e) {
        res.end();
        return finish(e instanceof GitwireError ? e.code : "error", 200);
      }
    } catch (e) {
      plain(res, 500, e.message);
      return finish("error", 500);
    }
  };
}
var NO_CACHE;
var init_http = __esm({
  "dist/transport/http.js"() {
    "use strict";
    init_errors();
    init_sink();
    init_service();
    init_paths();
    NO_CACHE = {
      Expires: "Fri, 01 Jan 1980 00:00:00 GMT",
      Pragma: "no-cache",
      "Cache-Control": "no-cache, max-age=0, must-revalidate"
    };
  }
});

// dist/transport/daemon.js
import { existsSync as existsSync5 } from "node:fs";
import { join as join8 } from "node:path";
import { createServer } from "node:net";
function parseDaemonRequest(data) {
  let line = data;
  const nul = line.indexOf(0);
  const head = (nul < 0 ? line : line.subarray(0, nul)).toString("utf8").replace(/\n$/, "");
  const m = /^git-([a-z-]+) (.*)$/.exec(head);
  if (!m)
    return void 0;
  const r = { service: m[1], path: m[2] };
  if (nul >= 0) {
    line = line.subarray(nul + 1);
    const parts = line.toString("utf8").split("\0");
    let i = 0;
    if (parts[0]?.toLowerCase().startsWith("host=")) {
      r.host = parts[0].slice(5);
      i = 1;
    }
    const extra = parts.slice(i).filter((p) => p.length > 0);
    if (extra.length)
      r.gitProtocol = extra.join(":");
  }
  return r;
}
function createDaemonServer(opts) {
  const server = createServer({ allowHalfOpen: false }, (socket) => {
    void handle(socket);
  });
  server.maxConnections = opts.maxConnections ?? 32;
  async function handle(socket) {
    const t0 = process.hrtime.bigint();
    const entry = { transport: "git", bytesOut: 0, writes: 0, durationMs: 0, outcome: "ok" };
    const done = (outcome) => {
      entry.outcome = outcome;
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      opts.log?.(entry);
    };
    socket.on("error", () => {
    });
    const it = socket[Symbol.asyncIterator]();
    const shared = { [Symbol.asyncIterator]: () => it };
    const first = new PktReader(shared, { timeoutMs: (opts.initTimeout ?? opts.timeout ?? 0) * 1e3 || void 0 });
    let req;
    try {
      const p = await first.read();
      if (p.kind === "data")
        req = parseDaemonRequest(p.data);
    } catch {
      socket.destroy();
      return done("bad-request");
    }
    const deny = (msg, dir2) => {
      const text = opts.informativeErrors ? msg : "access denied or repository not exported";
      socket.end(encode(`ERR ${text}: ${dir2}`));
    };
    if (!req) {
      socket.destroy();
      return done("protocol-error");
    }
    entry.repository = req.path;
    const service = req.service === "upload-pack" ? findService(`git-${req.service}`) : void 0;
    if (!service) {
      deny("service not enabled", req.path);
      return done("denied");
    }
    const info = { transport: "git", path: req.path, host: req.host, remoteAddress: socket.remoteAddress };
    let dir;
    if (opts.resolveRepository)
      dir = await opts.resolveRepository(info);
    else if (opts.root && req.path.startsWith("/"))
      dir = resolveUnderRoot(opts.root, req.path);
    if (!dir) {
      deny("no such repository", req.path);
      return done("not-found");
    }
    if (!opts.exportAll && !opts.resolveRepository && !existsSync5(join8(dir, "git-daemon-export-ok"))) {
      deny("repository not exported", req.path);
      return done("not-exported");
    }
    if (opts.authorize) {
      const a = await opts.authorize(info, dir);
      if (a !== true) {
        deny(a.message, req.path);
        return done("denied");
      }
    }
    const rest = first.remainder();
    async function* input() {
      if (rest.length)
        yield rest;
      for (; ; ) {
        const r = await it.next();
        if (r.done)
          return;
        yield r.value;
      }
    }
    const env = { ...opts.env ?? process.env };
    delete env.GIT_PROTOCOL;
    if (req.gitProtocol)
      env.GIT_PROTOCOL = req.gitProtocol;
    const sink = new StreamSink(socket);
    try {
      const r = await service.serve({
        directory: dir,
        strict: true,
        env,
        input: input(),
        output: sink,
        timeout: opts.timeout,
        refFilter: opts.refFilter?.(info, dir),
        acquirePackSlot: opts.limiter?.acquire,
        pool: opts.pool
      });
      Object.assign(entry, { protocol: r.protocol, command: r.command, wants: r.wants, haves: r.haves, bytesOut: r.bytes, writes: r.writes });
      socket.end();
      done("ok");
    } catch (e) {
      entry.bytesOut = sink.stats.bytes;
      entry.writes = sink.stats.writes;
      socket.destroy();
      done(e instanceof GitwireError ? e.code : "error");
    }
  }
  return server;
}
var init_daemon = __esm({
  "dist/transport/daemon.js"() {
    "use strict";
    init_reader();
    init_codec();
    init_sink();
    init_errors();
    init_service();
    init_paths();
  }
});

// dist/transport/admission.js
var KEEPALIVE2, PackLimiter;
var init_admission = __esm({
  "dist/transport/admission.js"() {
    "use strict";
    KEEPALIVE2 = Buffer.from("0005", "latin1");
    PackLimiter = class {
      limit;
      keepaliveMs;
      running = 0;
      queue = [];
      constructor(limit, keepaliveMs = 5e3) {
        this.limit = limit;
        this.keepaliveMs = keepaliveMs;
      }
      get active() {
        return this.running;
      }
      get waiting() {
        return this.queue.length;
      }
      /** Resolves with a release function once a slot is free. */
      acquire = async (writer, sideband) => {
        if (this.limit <= 0 || this.running < this.limit) {
          this.running++;
          return this.releaser();
        }
        const ahead = this.queue.length + 1;
        const say = (msg) => {
          if (sideband) {
            try {
              writer.progress(msg);
              writer.push();
            } catch {
            }
          }
        };
        say(`gitwire: waiting for a pack-objects slot (${ahead} ahead)
`);
        const timer = setInterval(() => {
          if (!sideband)
            return;
          try {
            writer.push();
            writer.raw(KEEPALIVE2);
            writer.push();
          } catch {
          }
        }, this.keepaliveMs);
        await new Promise((resolve7) => this.queue.push(resolve7));
        clearInterval(timer);
        say("gitwire: pack-objects slot acquired\n");
        return this.releaser();
      };
      releaser() {
        let done = false;
        return () => {
          if (done)
            return;
          done = true;
          const next = this.queue.shift();
          if (next)
            next();
          else
            this.running--;
        };
      }
    };
  }
});

// dist/repo/pool.js
import { statSync as statSync4 } from "node:fs";
import { homedir as homedir2 } from "node:os";
import { join as join9 } from "node:path";
function statStamp(path) {
  try {
    const st = statSync4(path, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return "-";
  }
}
function envKey(env) {
  const parts = [];
  for (const k of ENV_KEYS)
    parts.push(env[k] ?? "");
  const n = Number(env.GIT_CONFIG_COUNT);
  if (Number.isInteger(n) && n > 0 && n < 1e3) {
    for (let i = 0; i < n; i++)
      parts.push(env[`GIT_CONFIG_KEY_${i}`] ?? "", env[`GIT_CONFIG_VALUE_${i}`] ?? "");
  }
  return parts.join("\0");
}
function watched(repo) {
  const env = repo.env;
  const out = /* @__PURE__ */ new Set();
  for (const e of repo.config.entries)
    if (e.origin !== "command line")
      out.add(e.origin);
  out.add(join9(repo.commonDir, "config"));
  out.add(join9(repo.gitDir, "commondir"));
  out.add(env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig");
  if (env.GIT_CONFIG_GLOBAL === void 0) {
    const home = env.HOME ?? homedir2();
    out.add(env.XDG_CONFIG_HOME ? join9(env.XDG_CONFIG_HOME, "git", "config") : join9(home, ".config", "git", "config"));
    out.add(join9(home, ".gitconfig"));
  }
  for (const s of repo.odb.sources) {
    out.add(join9(s.objectsDir, "pack"));
    out.add(join9(s.objectsDir, "info", "alternates"));
  }
  return [...out];
}
function stampOf(paths) {
  return paths.map(statStamp).join("|");
}
function estimateBytes(repo) {
  return 16 * 1024 + repo.memoryEstimate();
}
var ENV_KEYS, RepositoryPool;
var init_pool = __esm({
  "dist/repo/pool.js"() {
    "use strict";
    init_discover();
    init_repository();
    ENV_KEYS = [
      "GIT_NAMESPACE",
      "GIT_OBJECT_DIRECTORY",
      "GIT_ALTERNATE_OBJECT_DIRECTORIES",
      "GIT_CONFIG_PARAMETERS",
      "GIT_CONFIG_COUNT",
      "GIT_CONFIG_NOSYSTEM",
      "GIT_CONFIG_SYSTEM",
      "GIT_CONFIG_GLOBAL",
      "HOME",
      "XDG_CONFIG_HOME"
    ];
    RepositoryPool = class {
      entries = /* @__PURE__ */ new Map();
      /** entries replaced while leased, closed when their last lease ends */
      retired = /* @__PURE__ */ new Set();
      watchedPaths = /* @__PURE__ */ new WeakMap();
      maxEntries;
      maxBytes;
      /** counters for tests and metrics */
      stats = { hits: 0, opens: 0, reopens: 0, evictions: 0 };
      constructor(opts = {}) {
        this.maxEntries = opts.maxEntries ?? 64;
        this.maxBytes = opts.maxBytes ?? 256 * 1024 * 1024;
      }
      get size() {
        return this.entries.size;
      }
      /** Estimated bytes held by the open repositories. */
      get bytes() {
        let n = 0;
        for (const e of this.entries.values())
          n += e.bytes;
        return n;
      }
      /** Open (or reuse) the repository at `dir`, as Repository.open would. */
      acquire(dir, opts = {}) {
        const env = opts.env ?? process.env;
        const loc = locateRepository(dir, opts.strict ?? false);
        const key = `${loc.gitDir}\0${envKey(env)}`;
        let e = this.entries.get(key);
        if (e) {
          const paths = this.watchedPaths.get(e.repo);
          if (stampOf(paths) !== e.stamp) {
            this.entries.delete(key);
            this.retire(e);
            this.stats.reopens++;
            e = void 0;
          } else
            this.stats.hits++;
        }
        if (!e) {
          const repo = new Repository(loc.gitDir, loc.commonDir, env);
          const paths = watched(repo);
          this.watchedPaths.set(repo, paths);
          e = { key, repo, stamp: stampOf(paths), leases: 0, stale: false, bytes: 0, lastUsed: 0 };
          this.entries.set(key, e);
          this.stats.opens++;
        } else {
          this.entries.delete(key);
          this.entries.set(key, e);
        }
        e.leases++;
        e.lastUsed = Date.now();
        const entry = e;
        let released = false;
        return {
          repo: entry.repo,
          release: () => {
            if (released)
              return;
            released = true;
            entry.leases--;
            entry.bytes = estimateBytes(entry.repo);
            if (entry.stale) {
              if (entry.leases === 0) {
                this.retired.delete(entry);
                entry.repo.close();
              }
              return;
            }
            this.trim();
          }
        };
      }
      retire(e) {
        e.stale = true;
        if (e.leases === 0)
          e.repo.close();
        else
          this.retired.add(e);
      }
      /** Close least recently used idle entries until within bounds. */
      trim() {
        let bytes = this.bytes;
        for (const e of this.entries.values()) {
          if (this.entries.size <= this.maxEntries && bytes <= this.maxBytes)
            break;
          if (e.leases > 0)
            continue;
          this.entries.delete(e.key);
          bytes -= e.bytes;
          e.repo.close();
          this.stats.evictions++;
        }
      }
      /** Close every idle repository (and leased ones as their leases end). */
      close() {
        for (const e of this.entries.values())
          this.retire(e);
        this.entries.clear();
      }
    };
  }
});

// dist/transport/metrics.js
var metrics_exports = {};
__export(metrics_exports, {
  createMetrics: () => createMetrics
});
import client from "prom-client";
function createMetrics(limiter) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({ name: "gitwire_requests_total", help: "Requests served", labelNames: ["transport", "command", "outcome"], registers: [registry] });
  const bytes = new client.Counter({ name: "gitwire_bytes_sent_total", help: "Bytes sent to clients", labelNames: ["transport"], registers: [registry] });
  const writes = new client.Counter({ name: "gitwire_write_calls_total", help: "Write calls made to client sockets", labelNames: ["transport"], registers: [registry] });
  const duration = new client.Histogram({ name: "gitwire_request_duration_seconds", help: "Request duration", labelNames: ["transport", "command"], buckets: [5e-3, 0.02, 0.1, 0.5, 2, 10, 60, 300], registers: [registry] });
  new client.Gauge({ name: "gitwire_pack_objects_active", help: "Running pack-objects", registers: [registry], collect() {
    this.set(limiter.active);
  } });
  new client.Gauge({ name: "gitwire_pack_objects_waiting", help: "Fetches queued for a pack-objects slot", registers: [registry], collect() {
    this.set(limiter.waiting);
  } });
  return {
    observe(e) {
      const command = e.command ?? "none";
      requests.inc({ transport: e.transport, command, outcome: e.outcome });
      bytes.inc({ transport: e.transport }, e.bytesOut);
      writes.inc({ transport: e.transport }, e.writes);
      duration.observe({ transport: e.transport, command }, e.durationMs / 1e3);
    },
    async handle(_req, res) {
      res.writeHead(200, { "Content-Type": registry.contentType });
      res.end(await registry.metrics());
    }
  };
}
var init_metrics = __esm({
  "dist/transport/metrics.js"() {
    "use strict";
  }
});

// dist/transport/server.js
import { createServer as createServer2 } from "node:http";
async function startServer(o) {
  const limiter = new PackLimiter(o.maxPacks ?? 0);
  let metrics;
  if (o.metrics) {
    const { createMetrics: createMetrics2 } = await Promise.resolve().then(() => (init_metrics(), metrics_exports));
    metrics = createMetrics2(limiter);
  }
  const log = (e) => {
    metrics?.observe(e);
    o.log?.(e);
  };
  const sockets = /* @__PURE__ */ new Set();
  const active = /* @__PURE__ */ new Set();
  const track = (p) => {
    active.add(p);
    void p.finally(() => active.delete(p));
  };
  const pool = o.pool === false ? void 0 : new RepositoryPool(o.pool);
  const out = { limiter, pool, shutdown: async () => void 0 };
  const host = o.host ?? "127.0.0.1";
  if (o.http !== void 0) {
    const handler = createHttpHandler({ root: o.root, limiter, maxRequestBuffer: o.maxRequestBuffer, log, env: o.env, pool });
    const server = createServer2((req, res) => {
      if (metrics && req.url === "/metrics") {
        track(metrics.handle(req, res));
        return;
      }
      track(handler(req, res));
    });
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    await new Promise((resolve7, reject) => {
      server.once("error", reject);
      server.listen(o.http, host, resolve7);
    });
    out.http = server;
    out.httpPort = server.address().port;
  }
  if (o.git !== void 0) {
    const server = createDaemonServer({
      root: o.root,
      exportAll: o.exportAll,
      maxConnections: o.maxConnections,
      initTimeout: o.initTimeout,
      timeout: o.timeout,
      limiter,
      log,
      env: o.env,
      pool
    });
    server.on("connection", (s) => {
      sockets.add(s);
      track(new Promise((resolve7) => s.on("close", () => {
        sockets.delete(s);
        resolve7();
      })));
    });
    await new Promise((resolve7, reject) => {
      server.once("error", reject);
      server.listen(o.git, host, resolve7);
    });
    out.git = server;
    out.gitPort = server.address().port;
  }
  out.shutdown = async (graceMs = 1e4) => {
    out.http?.close();
    out.git?.close();
    out.http?.closeIdleConnections?.();
    const all = Promise.allSettled([...active]);
    const timer = new Promise((r) => setTimeout(r, graceMs).unref());
    await Promise.race([all, timer]);
    for (const s of sockets)
      s.destroy();
    await Promise.race([Promise.allSettled([...active]), new Promise((r) => setTimeout(r, 3e3).unref())]);
    pool?.close();
  };
  return out;
}
var init_server = __esm({
  "dist/transport/server.js"() {
    "use strict";
    init_http();
    init_daemon();
    init_admission();
    init_pool();
  }
});

// dist/cli/serve.js
var serve_exports2 = {};
__export(serve_exports2, {
  runServe: () => runServe
});
import { parseArgs } from "node:util";
import { basename as basename2, resolve as resolve5 } from "node:path";
async function runServe(args) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        http: { type: "string" },
        git: { type: "string" },
        host: { type: "string" },
        "export-all": { type: "boolean" },
        "max-connections": { type: "string" },
        "init-timeout": { type: "string" },
        timeout: { type: "string" },
        "max-packs": { type: "string" },
        "max-request-buffer": { type: "string" },
        metrics: { type: "boolean" },
        quiet: { type: "boolean" },
        "shutdown-grace": { type: "string" },
        help: { type: "boolean" }
      }
    });
  } catch (e) {
    process.stderr.write(`error: ${e.message}
${USAGE3}`);
    process.exit(129);
  }
  const v = parsed.values;
  if (v.help) {
    process.stdout.write(USAGE3);
    return;
  }
  const root = resolve5(parsed.positionals[0] ?? ".");
  const num = (s) => s === void 0 ? void 0 : Number(s);
  const noPorts = v.http === void 0 && v.git === void 0;
  const { pino } = await import("pino");
  const logger = pino({ level: "info" });
  const server = await startServer({
    root,
    host: v.host ?? "127.0.0.1",
    http: noPorts ? 8080 : num(v.http),
    git: num(v.git),
    exportAll: v["export-all"] ?? noPorts,
    maxConnections: num(v["max-connections"]),
    initTimeout: num(v["init-timeout"]),
    timeout: num(v.timeout),
    maxPacks: num(v["max-packs"]) ?? 0,
    maxRequestBuffer: num(v["max-request-buffer"]),
    metrics: v.metrics,
    log: v.quiet ? void 0 : (e) => logger.info(e, "request")
  });
  const host = v.host ?? "127.0.0.1";
  let example = "<repo>";
  try {
    locateRepository(root);
    example = basename2(root);
  } catch {
  }
  if (server.httpPort !== void 0)
    logger.info({ url: `http://${host}:${server.httpPort}/`, root }, `serving smart HTTP: git clone http://${host}:${server.httpPort}/${example}`);
  if (server.gitPort !== void 0)
    logger.info({ url: `git://${host}:${server.gitPort}/`, root }, `serving git://: git clone git://${host}:${server.gitPort}/${example}`);
  const grace = (num(v["shutdown-grace"]) ?? 10) * 1e3;
  let stopping = false;
  const stop = (sig) => {
    if (stopping)
      return;
    stopping = true;
    logger.info({ signal: sig }, "shutting down: no new connections, finishing transfers");
    void server.shutdown(grace).then(() => {
      logger.flush?.();
      process.exit(0);
    });
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}
var USAGE3;
var init_serve2 = __esm({
  "dist/cli/serve.js"() {
    "use strict";
    init_server();
    init_discover();
    USAGE3 = `usage: gitwire serve [<root>] [--http <port>] [--git <port>] [--host <addr>]
                     [--export-all] [--max-connections <n>] [--init-timeout <s>] [--timeout <s>]
                     [--max-packs <n>] [--max-request-buffer <bytes>] [--metrics] [--quiet (no per-request log lines)]
                     [--shutdown-grace <s>]
`;
  }
});

// dist/cli/demo.js
var demo_exports = {};
__export(demo_exports, {
  runDemo: () => runDemo
});
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname as dirname4, join as join10, resolve as resolve6 } from "node:path";
import { fileURLToPath as fileURLToPath2 } from "node:url";
async function runDemo(args) {
  const root = resolve6(dirname4(fileURLToPath2(import.meta.url)), "..", "..");
  const src = args[0] ?? root;
  const bin = join10(root, "bin", "gitwire");
  const dir = mkdtempSync(join10(tmpdir(), "gitwire-demo-"));
  try {
    for (const v of [0, 2]) {
      const dest = join10(dir, `clone-v${v}`);
      const t0 = process.hrtime.bigint();
      const r = spawnSync("git", ["-c", `protocol.version=${v}`, "clone", "--no-local", "--upload-pack", `${bin} upload-pack`, src, dest], { stdio: ["ignore", "inherit", "inherit"] });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0)
        throw new Error(`git clone (protocol v${v}) failed`);
      const refs = spawnSync("git", ["-C", dest, "for-each-ref", "--format=%(refname)"], { encoding: "utf8" }).stdout.trim().split("\n");
      const count = spawnSync("git", ["-C", dest, "count-objects", "-v"], { encoding: "utf8" }).stdout;
      const fsck = spawnSync("git", ["-C", dest, "fsck", "--no-progress"], { encoding: "utf8" });
      process.stdout.write(`protocol v${v}: cloned ${src} in ${ms.toFixed(0)} ms through gitwire upload-pack
`);
      process.stdout.write(`  refs: ${refs.length} (${refs.slice(0, 3).join(", ")}${refs.length > 3 ? ", \u2026" : ""})
`);
      process.stdout.write(`  ${count.split("\n").filter((l) => /^(in-pack|size-pack)/.test(l)).join(", ")}
`);
      process.stdout.write(`  git fsck: ${fsck.status === 0 ? "ok" : `failed
${fsck.stderr}`}
`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
var init_demo = __esm({
  "dist/cli/demo.js"() {
    "use strict";
  }
});

// dist/cli/main.js
init_errors();
var HELP = `usage: gitwire <command> [<args>]

Commands:
  upload-pack [--[no-]strict] [--timeout=<n>] [--stateless-rpc]
              [--advertise-refs | --http-backend-info-refs] <directory>
                    serve git fetch/clone/ls-remote over stdio (v0, v1, v2)
  cat-file <args>   git cat-file, with one write per object
  serve [<root>] [--http <port>] [--git <port>] [--host <addr>]
                    serve repositories over smart HTTP and git://
  demo              clone this repository through gitwire upload-pack

Options:
  --version         print gitwire's version
  --help            print this help
`;
function fatal(e) {
  if (e instanceof GitwireError) {
    process.stderr.write(e.toCli());
    process.exit(e.exitCode);
  }
  const err = e;
  process.stderr.write(`fatal: ${err?.message ?? String(e)}
`);
  process.exit(128);
}
async function main(argv) {
  const [cmd, ...rest] = argv;
  try {
    switch (cmd) {
      case "--version":
      case "version": {
        const { version: version2 } = await Promise.resolve().then(() => (init_version(), version_exports));
        process.stdout.write(`gitwire version ${version2()}
`);
        return;
      }
      case void 0:
      case "-h":
      case "--help":
      case "help":
        process.stdout.write(HELP);
        return;
      case "upload-pack": {
        const { runUploadPack: runUploadPack2 } = await Promise.resolve().then(() => (init_upload_pack2(), upload_pack_exports));
        return await runUploadPack2(rest);
      }
      case "cat-file": {
        const { runCatFile: runCatFile2 } = await Promise.resolve().then(() => (init_cat_file(), cat_file_exports));
        return await runCatFile2(rest);
      }
      case "serve": {
        const { runServe: runServe2 } = await Promise.resolve().then(() => (init_serve2(), serve_exports2));
        return await runServe2(rest);
      }
      case "demo": {
        const { runDemo: runDemo2 } = await Promise.resolve().then(() => (init_demo(), demo_exports));
        return await runDemo2(rest);
      }
      default:
        process.stderr.write(`gitwire: '${cmd}' is not a gitwire command. See 'gitwire --help'.
`);
        process.exit(1);
    }
  } catch (e) {
    fatal(e);
  }
}
export {
  main
};
