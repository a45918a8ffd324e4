'use strict';
// The official SandboxFiles over the op layer's `files.*` ops. A `scope` (`identity`
// or `isolated_session`) sends every call through that user's or that isolated
// session's file routes (1.1).

const fs = require('node:fs');
const { call, fromNative, InvalidArgumentException } = require('./errors.cjs');
const { abortError, clean } = require('./util.cjs');
const { fileInfo } = require('./shapes.cjs');


function isAsyncIterable(x) {
  return x != null && typeof x[Symbol.asyncIterator] === 'function';
}

/**
 * The file behind an unread `fs.ReadStream` of a regular file, as `{ path, start, end }`
 * for the addon to read itself (no chunk through JS), or null: a subclass, a stream
 * already read from or with an encoding, a custom `fs`, anything but a regular file.
 */
function fileSliceOf(d) {
  if (!(d instanceof fs.ReadStream) || d.constructor !== fs.ReadStream || typeof d.path !== 'string') return null;
  if (d.bytesRead !== 0 || d.readableDidRead || d.readableLength !== 0 || d.destroyed || d.readableEncoding) return null;
  const kFs = Object.getOwnPropertySymbols(d).find((k) => k.description === 'kFs');
  if (kFs !== undefined && d[kFs] !== fs) return null;
  try {
    if (!fs.statSync(d.path).isFile()) return null;
  } catch {
    return null; // the stream reports its own error when read
  }
  return clean({ path: d.path, start: d.start, end: Number.isFinite(d.end) ? d.end : undefined });
}

function toBuffer(d) {
  if (d == null) return Buffer.alloc(0);
  if (typeof d === 'string') return Buffer.from(d, 'utf8');
  if (Buffer.isBuffer(d)) return d;
  if (d instanceof ArrayBuffer) return Buffer.from(d);
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return null;
}

async function* chunksOf(d) {
  if (typeof Blob !== 'undefined' && d instanceof Blob) d = d.stream();
  if (isAsyncIterable(d)) {
    for await (const c of d) yield c;
    return;
  }
  if (d && typeof d.getReader === 'function') {
    const r = d.getReader();
    try {
      for (;;) {
        const { done, value } = await r.read();
        if (done) return;
        yield value;
      }
    } finally {
      r.releaseLock();
    }
  }
  if (d && typeof d[Symbol.iterator] === 'function') {
    for (const c of d) yield c;
    return;
  }
  throw new InvalidArgumentException({ message: 'unsupported data type for writeFiles' });
}

const UPLOAD_CHUNK = 1 << 20;

const permEntry = (e) => ({ path: e.path, mode: e.mode, owner: e.owner, group: e.group });
const replaceEntry = (e) => ({
  path: e.path,
  old_content: e.oldContent ?? e.old_content,
  new_content: e.newContent ?? e.new_content,
});

class SandboxFiles {
  /** @internal `scope`: `{identity: {uid, gid}}`, `{isolated_session: id}` or none. */
  constructor(sbx, scope) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
    Object.defineProperty(this, '_scope', { value: scope ?? {}, enumerable: false });
  }

  _call(op, args) {
    return this._s._call(op, { ...args, ...this._scope });
  }

  _readArgs(path, opts) {
    return clean({ sandbox: this._s._h, ...this._scope, path, range: opts.range, offset: opts.offset, limit: opts.limit });
  }

  async getFileInfo(paths) {
    const r = await this._call('files.get_file_info', { paths });
    const out = {};
    for (const [k, v] of Object.entries(r)) out[k] = fileInfo(v);
    return out;
  }
  async search(entry) {
    return (await this._call('files.search', { path: entry.path, pattern: entry.pattern })).map(fileInfo);
  }
  async listDirectory(entry) {
    return (await this._call('files.list_directory', { path: entry.path, depth: entry.depth })).map(fileInfo);
  }
  async createDirectories(entries) {
    await this._call('files.create_directories', { entries: entries.map(permEntry) });
  }
  async deleteDirectories(paths) {
    await this._call('files.delete_directories', { paths });
  }
  async deleteFiles(paths) {
    await this._call('files.delete_files', { paths });
  }
  async moveFiles(entries) {
    await this._call('files.move_files', { entries: entries.map((e) => ({ src: e.src, dest: e.dest })) });
  }
  async replaceContents(entries) {
    await this._call('files.replace_contents', { entries: entries.map(replaceEntry) });
  }
  async replaceContentsDetailed(entries) {
    const r = await this._call('files.replace_contents_detailed', { entries: entries.map(replaceEntry) });
    return r.map((x) => ({ path: x.path, replacedCount: x.replaced_count }));
  }
  async setPermissions(entries) {
    await this._call('files.set_permissions', { entries: entries.map(permEntry) });
  }

  /**
   * Writes several files in one multipart request. In-memory data (string, Buffer,
   * Uint8Array, ArrayBuffer) is handed over at once and sent from its own memory (no
   * copy: do not modify it until the promise settles); streams (Readable, async
   * iterables, ReadableStream, Blob) are fed chunk by chunk with backpressure, except an
   * unread fs.ReadStream of a regular file, whose file the addon reads itself.
   */
  async writeFiles(entries) {
    const meta = [];
    const buffers = [];
    const files = [];
    const streamed = [];
    entries.forEach((e, i) => {
      const b = toBuffer(e.data);
      const f = b === null ? fileSliceOf(e.data) : null;
      meta.push(permEntry(e));
      buffers.push(b === null ? null : b);
      files.push(f);
      if (b === null && f === null) streamed.push(i);
    });
    let up;
    try {
      up = this._s._n.upload(clean({ sandbox: this._s._h, ...this._scope, entries: meta }), buffers,
        files.some((f) => f !== null) ? files : undefined);
    } catch (e) {
      throw fromNative(e);
    }
    try {
      for (const i of streamed) {
        let accepted = true;
        for await (const c of chunksOf(entries[i].data)) {
          let buf = typeof c === 'string' ? Buffer.from(c, 'utf8') : toBuffer(c);
          if (buf === null) throw new InvalidArgumentException({ message: 'stream chunks must be bytes or strings' });
          for (let off = 0; off < buf.length && accepted; off += UPLOAD_CHUNK) {
            accepted = await up.write(i, off === 0 && buf.length <= UPLOAD_CHUNK ? buf : buf.subarray(off, off + UPLOAD_CHUNK));
          }
          if (!accepted) break;
        }
        up.end(i);
        if (!accepted) break;
      }
    } catch (e) {
      up.abort(String(e && e.message ? e.message : e));
      await up.finish().catch(() => {});
      throw fromNative(e);
    }
    await call(up.finish());
    // A file read by the addon ends as a stream read to its end does (its descriptor
    // closed); after a failure it is left unread.
    files.forEach((f, i) => {
      if (f !== null) entries[i].data.destroy();
    });
  }

  /** Extension: writes one file (text, bytes or a stream). */
  async writeFile(path, data, opts = {}) {
    await this.writeFiles([{ path, data, mode: opts.mode, owner: opts.owner, group: opts.group }]);
  }

  async readFile(path, opts = {}) {
    const enc = opts.encoding;
    if (enc && !/^utf-?8$/i.test(enc)) {
      const b = await this.readBytes(path, opts);
      return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString(enc);
    }
    return (await this._call('files.read_file', { path, range: opts.range, offset: opts.offset, limit: opts.limit })).text;
  }

  async readBytes(path, opts = {}) {
    const b = await call(this._s._n.readBytes(this._readArgs(path, opts)));
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }

  async *readBytesStream(path, opts = {}) {
    const signal = opts.signal;
    const s = await call(this._s._n.readStream(this._readArgs(path, opts)));
    const onAbort = () => s.close();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const c = await call(s.next());
        if (signal && signal.aborted) throw abortError(signal);
        if (c == null) return;
        yield new Uint8Array(c.buffer, c.byteOffset, c.byteLength);
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
      s.close();
    }
  }
}


module.exports = { SandboxFiles };
