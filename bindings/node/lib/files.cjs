'use strict';
// The official SandboxFiles over the op layer's `files.*` ops. A `scope` (`identity`
// or `isolated_session`) sends every call through that user's or that isolated
// session's file routes (1.1).

const { call, fromNative, InvalidArgumentException } = require('./errors.cjs');
const { abortError, clean } = require('./util.cjs');
const { fileInfo } = require('./shapes.cjs');


function isAsyncIterable(x) {
  return x != null && typeof x[Symbol.asyncIterator] === 'function';
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
   * iterables, ReadableStream, Blob) are fed chunk by chunk with backpressure.
   */
  async writeFiles(entries) {
    const meta = [];
    const buffers = [];
    const streamed = [];
    entries.forEach((e, i) => {
      const b = toBuffer(e.data);
      meta.push(permEntry(e));
      buffers.push(b === null ? null : b);
      if (b === null) streamed.push(i);
    });
    let up;
    try {
      up = this._s._n.upload(clean({ sandbox: this._s._h, ...this._scope, entries: meta }), buffers);
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
