// The service objects of a Sandbox (Commands, Files, Health, Metrics, Egress), each a thin
// layer that turns arguments into the JSON of one C ABI op and the result back into models.

using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Core;
using OpenSandbox.Models;
using OpenSandbox.Native;
using OpenSandbox.Services;

namespace OpenSandbox.Internal
{
    internal sealed class SandboxCore
    {
        private SessionEntryHandle _opHandle;

        /// <param name="handle">The op-layer session's handle of this sandbox (from
        /// sandbox.create / connect / resume), released by <see cref="ReleaseOpHandle"/>.</param>
        public SandboxCore(long handle)
        {
            _opHandle = SessionEntryHandle.Of(handle);
        }

        public long OpHandle
        {
            get
            {
                var h = Volatile.Read(ref _opHandle);
                if (h == null) throw new ObjectDisposedException("Sandbox");
                return h.Id;
            }
        }

        public void ReleaseOpHandle()
        {
            var h = Interlocked.Exchange(ref _opHandle, null);
            if (h != null) h.Dispose();
        }

        /// <summary>Runs a sandbox-bound op of the op layer (bindings/common) on this sandbox.</summary>
        public async Task<object> OpAsync(string op, Dictionary<string, object> args, CancellationToken ct)
        {
            args = args ?? new Dictionary<string, object>();
            args["sandbox"] = OpHandle;
            var r = await Bridge.SessionCall(op, Json.Write(args), ct).ConfigureAwait(false);
            return r == null ? null : Json.Parse(r);
        }

        /// <summary>
        /// <see cref="OpAsync"/> as a blocking call (osb_session_call_blocking), for a pool
        /// thread: download.open called this way opens the body on a driver of its own, which
        /// the reading thread then drives (docs/architecture.md "Downloads").
        /// </summary>
        public object OpBlocking(string op, Dictionary<string, object> args, CancelHandle cancel, CancellationToken ct)
        {
            args = args ?? new Dictionary<string, object>();
            args["sandbox"] = OpHandle;
            var r = Bridge.SessionCallBlocking(op, Json.Write(args), cancel, ct);
            return r == null ? null : Json.Parse(r);
        }
    }

    internal static class Args
    {
        public static Dictionary<string, object> Of(params object[] kv)
        {
            var d = new Dictionary<string, object>();
            for (var i = 0; i + 1 < kv.Length; i += 2)
                if (kv[i + 1] != null) d[(string)kv[i]] = kv[i + 1];
            return d;
        }

        public static List<object> List(IEnumerable<string> items)
        {
            var l = new List<object>();
            if (items != null) foreach (var s in items) l.Add(s);
            return l;
        }

        public static void Require(object value, string name)
        {
            if (value == null) throw new InvalidArgumentException(name + " is required");
            var s = value as string;
            if (s != null && s.Length == 0) throw new InvalidArgumentException(name + " must not be empty");
        }
    }

    internal sealed partial class CommandsService : IExecdCommands
    {
        private readonly SandboxCore _core;

        public CommandsService(SandboxCore core) { _core = core; }

        internal static Dictionary<string, object> RunArgs(string command, RunCommandOptions o)
        {
            Args.Require(command, "command");
            return RunArgs("command", command, o);
        }

        internal static Dictionary<string, object> RunArgs(IReadOnlyList<string> argv, RunCommandOptions o)
        {
            if (argv == null || argv.Count == 0 || string.IsNullOrEmpty(argv[0])) throw new InvalidArgumentException("argv must name an executable");
            foreach (var x in argv) if (x == null) throw new InvalidArgumentException("argv must not contain null");
            return RunArgs("argv", Args.List(argv), o);
        }

        private static Dictionary<string, object> RunArgs(string key, object what, RunCommandOptions o)
        {
            o = o ?? new RunCommandOptions();
            return Args.Of(
                key, what,
                "background", o.Background,
                "working_directory", o.WorkingDirectory,
                "timeout_ms", o.TimeoutSeconds.HasValue ? (object)((long)o.TimeoutSeconds.Value * 1000) : null,
                "uid", o.Uid,
                "gid", o.Gid,
                "envs", ModelJson.StrMapToJson(o.Envs));
        }

        public IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(string command, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = RunArgs(command, options);
            return new BatchEnumerable<ServerStreamEvent>(_core, "commands.start", args, EventFolder.ToServerEvent, cancellationToken);
        }

        public async Task<Execution> RunAsync(string command, RunCommandOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return await EventFolder.RunAsync(_core, "commands.start", RunArgs(command, options), handlers, cancellationToken).ConfigureAwait(false);
        }

        public IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(IReadOnlyList<string> argv, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = RunArgs(argv, options);
            return new BatchEnumerable<ServerStreamEvent>(_core, "commands.start", args, EventFolder.ToServerEvent, cancellationToken);
        }

        public Task<Execution> RunAsync(IReadOnlyList<string> argv, RunCommandOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return EventFolder.RunAsync(_core, "commands.start", RunArgs(argv, options), handlers, cancellationToken);
        }

        public Task InterruptAsync(string executionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(executionId, "executionId");
            return _core.OpAsync("commands.interrupt", Args.Of("id", executionId), cancellationToken);
        }

        public Task SetEnvAsync(string key, string value, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (key == null) throw new InvalidArgumentException("key is required");
            if (value == null) throw new InvalidArgumentException("value is required");
            return _core.OpAsync("commands.set_env", Args.Of("key", key, "value", value), cancellationToken);
        }

        public async Task<CommandStatus> GetCommandStatusAsync(string executionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(executionId, "executionId");
            return CommandStatus.FromJson(await _core.OpAsync("commands.get_command_status", Args.Of("id", executionId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<CommandLogs> GetBackgroundCommandLogsAsync(string executionId, long? cursor = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(executionId, "executionId");
            var r = await _core.OpAsync("commands.get_background_command_logs", Args.Of("id", executionId, "cursor", cursor), cancellationToken).ConfigureAwait(false);
            return new CommandLogs { Content = Json.Str(r, "content") ?? "", Cursor = Json.Long(r, "cursor") };
        }

        public async Task<string> CreateSessionAsync(CreateSessionOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await _core.OpAsync("commands.create_session", Args.Of("working_directory", options == null ? null : options.WorkingDirectory), cancellationToken).ConfigureAwait(false);
            return Json.Str(r, "session_id");
        }

        public async Task<Execution> RunInSessionAsync(string sessionId, string command, RunInSessionOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            Args.Require(command, "command");
            var args = SessionArgs(sessionId, command, options);
            return await EventFolder.RunAsync(_core, "commands.start_in_session", args, handlers, cancellationToken).ConfigureAwait(false);
        }

        internal static Dictionary<string, object> SessionArgs(string sessionId, string command, RunInSessionOptions options)
        {
            options = options ?? new RunInSessionOptions();
            return Args.Of(
                "session_id", sessionId,
                "command", command,
                "working_directory", options.WorkingDirectory,
                "timeout_ms", options.TimeoutSeconds.HasValue ? (object)((long)options.TimeoutSeconds.Value * 1000) : null);
        }

        public Task DeleteSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            return _core.OpAsync("commands.delete_session", Args.Of("session_id", sessionId), cancellationToken);
        }
    }

    internal sealed class FilesService : IIdentitySandboxFiles
    {
        // Bytes per crossing of a streamed upload: each crossing costs a Task, a callback and a
        // queued chunk whatever its size, so 1 MiB makes a quarter of the crossings 256 KiB did.
        private const int UploadChunk = 1024 * 1024;
        private readonly SandboxCore _core;
        // (1.1) Which file routes: null = the sandbox's; else {"identity": {uid, gid}} or
        // {"isolated_session": id}, added to every op's arguments.
        private readonly KeyValuePair<string, object>? _scope;

        public FilesService(SandboxCore core) { _core = core; }

        internal FilesService(SandboxCore core, string scopeKey, object scopeValue)
        {
            _core = core;
            _scope = new KeyValuePair<string, object>(scopeKey, scopeValue);
        }

        /// <summary>(1.1) The same file API acting as Linux user uid:gid (/v1/filesystem/{uid}/{gid}).</summary>
        public ISandboxFiles WithIdentity(uint uid, uint gid)
        {
            if (uid == uint.MaxValue || gid == uint.MaxValue)
                throw new InvalidArgumentException("uid and gid must be in 0..4294967294 (4294967295 is the kernel's \"no id\")");
            if (_scope.HasValue && _scope.Value.Key == "isolated_session")
                throw new InvalidArgumentException("an isolated session's files cannot take an identity (the session has its own uid)");
            return new FilesService(_core, "identity", Args.Of("uid", (long)uid, "gid", (long)gid));
        }

        private Dictionary<string, object> Scoped(Dictionary<string, object> args)
        {
            args = args ?? new Dictionary<string, object>();
            if (_scope.HasValue) args[_scope.Value.Key] = _scope.Value.Value;
            return args;
        }

        private Task<object> Op(string op, Dictionary<string, object> args, CancellationToken ct)
        {
            return _core.OpAsync(op, Scoped(args), ct);
        }

        private static List<object> InfoList(object r)
        {
            return Json.Arr(r) ?? new List<object>();
        }

        public async Task<IReadOnlyDictionary<string, SandboxFileInfo>> GetFileInfoAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await Op("files.get_file_info", Args.Of("paths", Args.List(paths)), cancellationToken).ConfigureAwait(false);
            var d = new Dictionary<string, SandboxFileInfo>();
            var o = Json.Obj(r);
            if (o != null) foreach (var kv in o) d[kv.Key] = SandboxFileInfo.FromJson(kv.Value);
            return d;
        }

        public async Task<IReadOnlyList<SandboxFileInfo>> SearchAsync(SearchEntry entry, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(entry, "entry");
            Args.Require(entry.Path, "entry.Path");
            var r = await Op("files.search", Args.Of("path", entry.Path, "pattern", entry.Pattern), cancellationToken).ConfigureAwait(false);
            var l = new List<SandboxFileInfo>();
            foreach (var x in InfoList(r)) l.Add(SandboxFileInfo.FromJson(x));
            return l;
        }

        public async Task<IReadOnlyList<SandboxFileInfo>> ListDirectoryAsync(string path, int? depth = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(path, "path");
            var r = await Op("files.list_directory", Args.Of("path", path, "depth", depth), cancellationToken).ConfigureAwait(false);
            var l = new List<SandboxFileInfo>();
            foreach (var x in InfoList(r)) l.Add(SandboxFileInfo.FromJson(x));
            return l;
        }

        private static List<object> PermEntries<T>(IEnumerable<T> entries, Func<T, Dictionary<string, object>> f)
        {
            var l = new List<object>();
            if (entries != null) foreach (var e in entries) l.Add(f(e));
            return l;
        }

        public Task CreateDirectoriesAsync(IEnumerable<CreateDirectoryEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            var l = PermEntries(entries, e => Args.Of("path", e.Path, "mode", e.Mode, "owner", e.Owner, "group", e.Group));
            return Op("files.create_directories", Args.Of("entries", l), cancellationToken);
        }

        public Task DeleteDirectoriesAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("files.delete_directories", Args.Of("paths", Args.List(paths)), cancellationToken);
        }

        public async Task WriteFilesAsync(IEnumerable<WriteEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(entries, "entries");
            var inline = new List<object>();
            var streamed = new List<WriteEntry>();
            foreach (var e in entries)
            {
                Args.Require(e, "entry");
                Args.Require(e.Path, "entry.Path");
                var entry = Args.Of("path", e.Path, "mode", e.Mode, "owner", e.Owner, "group", e.Group);
                if (e.Data == null) entry["data"] = "";
                else if (e.Data is string) entry["data"] = e.Data;
                else if (e.Data is byte[]) entry["data_b64"] = Convert.ToBase64String((byte[])e.Data);
                else if (e.Data is Stream || e.Data is IAsyncEnumerable<byte[]>)
                {
                    streamed.Add(e);
                    continue;
                }
                else throw new InvalidArgumentException("WriteEntry.Data must be a string, byte[], Stream or IAsyncEnumerable<byte[]>");
                inline.Add(entry);
            }
            if (inline.Count > 0)
                await Op("files.write_files", Args.Of("entries", inline), cancellationToken).ConfigureAwait(false);
            foreach (var e in streamed)
                await UploadAsync(e, cancellationToken).ConfigureAwait(false);
        }

        private async Task UploadAsync(WriteEntry e, CancellationToken ct)
        {
            var stream = e.Data as Stream;
            // A plain FileStream (not a subclass, whose reads may differ from the file's bytes):
            // the library reads the rest of the file from a duplicate of its descriptor.
            var fs = stream as FileStream;
            if (fs != null && fs.GetType() == typeof(FileStream) && await TryUploadFileAsync(e, fs, ct).ConfigureAwait(false))
                return;
            long? size = null;
            if (stream != null && stream.CanSeek) size = stream.Length - stream.Position;
            var opened = await Op("upload.open", Args.Of("path", e.Path, "mode", e.Mode, "owner", e.Owner, "group", e.Group, "size", size), ct).ConfigureAwait(false);
            using (var up = SessionEntryHandle.Of(Json.Long(opened, "handle") ?? 0))
            {
                if (stream != null)
                {
                    var buf = new byte[UploadChunk];
                    while (true)
                    {
                        var n = await stream.ReadAsync(buf, 0, buf.Length, ct).ConfigureAwait(false);
                        if (n <= 0) break;
                        await Bridge.UploadWrite(up.Id, buf, 0, n, ct).ConfigureAwait(false);
                    }
                }
                else
                {
                    var chunks = ((IAsyncEnumerable<byte[]>)e.Data).GetAsyncEnumerator(ct);
                    try
                    {
                        while (await chunks.MoveNextAsync().ConfigureAwait(false))
                        {
                            var c = chunks.Current;
                            if (c != null && c.Length > 0) await Bridge.UploadWrite(up.Id, c, 0, c.Length, ct).ConfigureAwait(false);
                        }
                    }
                    finally
                    {
                        await chunks.DisposeAsync().ConfigureAwait(false);
                    }
                }
                // upload.finish takes the handle; the using's release is then a no-op.
                await Bridge.SessionCall("upload.finish", Json.Write(Args.Of("handle", up.Id)), ct).ConfigureAwait(false);
            }
        }

        /// <summary>
        /// Uploads the rest of <paramref name="fs"/> (from its position) with the library reading
        /// the file from a duplicate of its descriptor, at the wire's speed. False, with nothing
        /// done, when that cannot be (not seekable, no Unix descriptor): the caller streams it.
        /// Afterwards the position is the file's end, as reading it whole leaves it, or back
        /// where it was when the upload failed.
        /// </summary>
        private async Task<bool> TryUploadFileAsync(WriteEntry e, FileStream fs, CancellationToken ct)
        {
            long offset, len;
            try
            {
                if (!fs.CanRead || !fs.CanSeek) return false;
                offset = fs.Position;
                len = Math.Max(0, fs.Length - offset);
            }
            catch (Exception x) when (x is IOException || x is NotSupportedException || x is ObjectDisposedException)
            {
                return false;
            }
            var fd = Bridge.DupDescriptor(fs.SafeFileHandle);
            if (fd < 0) return false;
            var args = Scoped(Args.Of("path", e.Path, "mode", e.Mode, "owner", e.Owner, "group", e.Group));
            args["sandbox"] = _core.OpHandle;
            var json = Json.Write(args);
            try
            {
                // The call blocks for the whole transfer: a thread of its own rather than one of
                // the pool's.
                await Task.Factory.StartNew(() =>
                {
                    using (var cancel = CancelHandle.New())
                    using (ct.Register(cancel.Cancel))
                        Bridge.UploadFdBlocking(json, fd, offset, len, cancel, ct);
                }, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default).ConfigureAwait(false);
            }
            catch
            {
                // Where it was, as a stream the upload did not consume; the upload's error is
                // what the caller needs, so a stream disposed meanwhile does not replace it.
                try { fs.Position = offset; } catch (ObjectDisposedException) { }
                throw;
            }
            fs.Position = offset + len;
            return true;
        }

        private static Dictionary<string, object> ReadArgs(string path, string range, int? offset, int? limit)
        {
            Args.Require(path, "path");
            return Args.Of("path", path, "range", range, "offset", offset, "limit", limit);
        }

        public async Task<string> ReadFileAsync(string path, ReadFileOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new ReadFileOptions();
            var enc = options.Encoding;
            if (!string.IsNullOrEmpty(enc) && !IsUtf8(enc))
            {
                var bytes = await ReadBytesAsync(path, new ReadBytesOptions { Range = options.Range, Offset = options.Offset, Limit = options.Limit }, cancellationToken).ConfigureAwait(false);
                return Encoding.GetEncoding(enc).GetString(bytes);
            }
            var r = await Op("files.read_file", ReadArgs(path, options.Range, options.Offset, options.Limit), cancellationToken).ConfigureAwait(false);
            return Json.Str(r, "text") ?? "";
        }

        private static bool IsUtf8(string enc)
        {
            var e = enc.Replace("-", "").Replace("_", "").ToLowerInvariant();
            return e == "utf8";
        }

        public async Task<byte[]> ReadBytesAsync(string path, ReadBytesOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new ReadBytesOptions();
            var r = await Op("files.read_bytes", ReadArgs(path, options.Range, options.Offset, options.Limit), cancellationToken).ConfigureAwait(false);
            return Convert.FromBase64String(Json.Str(r, "data_b64") ?? "");
        }

        public IAsyncEnumerable<byte[]> ReadBytesStreamAsync(string path, ReadBytesOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new ReadBytesOptions();
            return new DownloadEnumerable(_core, Scoped(ReadArgs(path, options.Range, options.Offset, options.Limit)), cancellationToken);
        }

        public Task DeleteFilesAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("files.delete_files", Args.Of("paths", Args.List(paths)), cancellationToken);
        }

        public Task MoveFilesAsync(IEnumerable<MoveEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            var l = PermEntries(entries, e => Args.Of("src", e.Src, "dest", e.Dest));
            return Op("files.move_files", Args.Of("entries", l), cancellationToken);
        }

        private static List<object> ReplaceEntries(IEnumerable<ContentReplaceEntry> entries)
        {
            return PermEntries(entries, e => Args.Of("path", e.Path, "old_content", e.OldContent, "new_content", e.NewContent));
        }

        public Task ReplaceContentsAsync(IEnumerable<ContentReplaceEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("files.replace_contents", Args.Of("entries", ReplaceEntries(entries)), cancellationToken);
        }

        public async Task<IReadOnlyList<ContentReplaceResult>> ReplaceContentsDetailedAsync(IEnumerable<ContentReplaceEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await Op("files.replace_contents_detailed", Args.Of("entries", ReplaceEntries(entries)), cancellationToken).ConfigureAwait(false);
            var l = new List<ContentReplaceResult>();
            foreach (var x in InfoList(r))
                l.Add(new ContentReplaceResult { Path = Json.Str(x, "path"), ReplacedCount = Json.Long(x, "replaced_count") ?? 0 });
            return l;
        }

        public Task SetPermissionsAsync(IEnumerable<SetPermissionEntry> entries, CancellationToken cancellationToken = default(CancellationToken))
        {
            var l = PermEntries(entries, e => Args.Of("path", e.Path, "mode", e.Mode, "owner", e.Owner, "group", e.Group));
            return Op("files.set_permissions", Args.Of("entries", l), cancellationToken);
        }
    }

    /// <summary>
    /// IAsyncEnumerable of download chunks; the request starts on the first MoveNextAsync.
    /// The bytes come in batches: a pool thread opens the download with a blocking
    /// download.open (so the library opens it on a driver of its own) and fills a batch with
    /// blocking osb_session_download_read calls, reading the socket itself, straight into the
    /// pinned array. The chunks handed out are small copies of the batch, made on the caller's
    /// thread, while the next batch is already being read on a pool thread.
    ///
    /// Why small copies: every chunk is memory the caller keeps, so it is fresh memory. Mono
    /// maps an array above ~1 MiB afresh and unmaps it when collected (sgen's large-object
    /// space), so yielding the batches themselves (8 MiB chunks until 2026-12-07) had the
    /// kernel zero 256 MiB of new pages per 256 MiB download: a third of the client's CPU in a
    /// perf profile (clear_page under the page faults of the copy into the chunk). An array
    /// under 8000 bytes comes from the nursery instead, memory Mono reuses after every minor
    /// collection and that stays in the cache; on the CoreCLR an array under 85,000 bytes is
    /// in generation 0, its equivalent.
    /// </summary>
    internal sealed class DownloadEnumerable : IAsyncEnumerable<byte[]>
    {
        // The largest chunk yielded: just under Mono's nursery limit for an object (8000
        // bytes with the array's 32-byte header), or under the CoreCLR's large-object
        // threshold (85,000 bytes). See the class comment.
        internal static readonly int ChunkSize = Type.GetType("Mono.Runtime") != null ? 7936 : 65536;
        // The first batch is small, so a small file costs no large array; the next ones
        // alternate between two arrays of BatchSize, one read while the other is handed out.
        internal const int FirstBatch = 64 * 1024;
        internal const int BatchSize = 1024 * 1024;

        private readonly SandboxCore _sandbox;
        private readonly Dictionary<string, object> _args;
        private readonly CancellationToken _token;

        public DownloadEnumerable(SandboxCore sandbox, Dictionary<string, object> args, CancellationToken token)
        {
            _sandbox = sandbox;
            _args = args;
            _token = token;
        }

        public IAsyncEnumerator<byte[]> GetAsyncEnumerator(CancellationToken cancellationToken = default(CancellationToken))
        {
            return new Enumerator(this, cancellationToken);
        }

        private sealed class Enumerator : IAsyncEnumerator<byte[]>
        {
            private readonly DownloadEnumerable _owner;
            private readonly CancellationTokenSource _cts;
            // One native cancel for the open and every read: the token cancels whichever is
            // in flight (the library closes the connection), later calls fail at once.
            private readonly CancelHandle _cancel;
            private readonly CancellationTokenRegistration _registration;
            private readonly object _gate = new object();
            private SessionEntryHandle _download;
            private bool _done;
            private bool _disposed;

            // The batch being handed out (bytes _pos.._len), the two large batch arrays, the
            // read in flight (into the array that is not being handed out) and whether a read
            // came back short, which only the last one does.
            private byte[] _batch;
            private int _pos;
            private int _len;
            private byte[] _large0;
            private byte[] _large1;
            private Task<int> _reading;
            private byte[] _readingInto;
            private bool _lastRead;

            public Enumerator(DownloadEnumerable owner, CancellationToken extra)
            {
                _owner = owner;
                _cts = CancellationTokenSource.CreateLinkedTokenSource(owner._token, extra);
                _cancel = CancelHandle.New();
                _registration = _cts.Token.Register(_cancel.Cancel);
            }

            public byte[] Current { get; private set; }

            public ValueTask<bool> MoveNextAsync()
            {
                if (_done) return new ValueTask<bool>(false);
                if (_pos < _len)
                {
                    if (_cts.IsCancellationRequested)
                    {
                        _done = true;
                        return new ValueTask<bool>(Task.FromCanceled<bool>(_cts.Token));
                    }
                    Current = TakeChunk();
                    return new ValueTask<bool>(true);
                }
                return new ValueTask<bool>(NextBatchAsync());
            }

            private byte[] TakeChunk()
            {
                var n = Math.Min(ChunkSize, _len - _pos);
                var chunk = new byte[n];
                Buffer.BlockCopy(_batch, _pos, chunk, 0, n);
                _pos += n;
                return chunk;
            }

            /// <summary>The current batch is handed out: waits for the next (starting its read if none is in flight).</summary>
            private async Task<bool> NextBatchAsync()
            {
                try
                {
                    var ct = _cts.Token;
                    if (_reading == null)
                    {
                        if (_lastRead)
                        {
                            _done = true;
                            return false;
                        }
                        StartRead(_batch == null ? new byte[FirstBatch] : SpareBatch());
                    }
                    var n = await _reading.ConfigureAwait(false);
                    ct.ThrowIfCancellationRequested();
                    _batch = _readingInto;
                    _pos = 0;
                    _len = n;
                    _reading = null;
                    _readingInto = null;
                    _lastRead = n < _batch.Length;
                    if (n == 0)
                    {
                        _done = true;
                        return false;
                    }
                    // Read the next batch while this one is handed out.
                    if (!_lastRead) StartRead(SpareBatch());
                    Current = TakeChunk();
                    return true;
                }
                catch
                {
                    _done = true;
                    throw;
                }
            }

            /// <summary>The large batch array not being handed out (allocated on first use).</summary>
            private byte[] SpareBatch()
            {
                if (_large0 == null) _large0 = new byte[BatchSize];
                if (!ReferenceEquals(_batch, _large0)) return _large0;
                if (_large1 == null) _large1 = new byte[BatchSize];
                return _large1;
            }

            private void StartRead(byte[] into)
            {
                var ct = _cts.Token;
                _readingInto = into;
                _reading = Task.Run(() => Fill(into, ct), ct);
            }

            /// <summary>Blocks (a pool thread): opens the download if needed, fills <paramref name="into"/>; the bytes read (fewer only at the end).</summary>
            private int Fill(byte[] into, CancellationToken ct)
            {
                var d = _download;
                if (d == null)
                {
                    var opened = _owner._sandbox.OpBlocking("download.open", new Dictionary<string, object>(_owner._args), _cancel, ct);
                    d = SessionEntryHandle.Of(Json.Long(opened, "handle") ?? 0);
                    lock (_gate)
                    {
                        // Disposed while opening (an abandoned MoveNextAsync): nobody would release it.
                        if (_disposed)
                        {
                            d.Dispose();
                            throw new ObjectDisposedException("download");
                        }
                        _download = d;
                    }
                }
                return Bridge.DownloadRead(d.Id, into, 0, into.Length, _cancel, ct);
            }

            public ValueTask DisposeAsync()
            {
                SessionEntryHandle d;
                Task<int> reading;
                lock (_gate)
                {
                    _done = true;
                    _disposed = true;
                    d = _download;
                    reading = _reading;
                }
                // A batch read ahead that nobody will take: cancel it if still in flight (the
                // library closes the connection) and observe its failure, so it is not
                // reported as an unobserved task exception.
                if (reading != null)
                {
                    if (!reading.IsCompleted) _cancel.Cancel();
                    reading.ContinueWith(t => { var ignored = t.Exception; }, CancellationToken.None,
                        TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
                }
                // Releasing the handle ends the download (its connection is closed); the
                // cancel of a read still in flight stays valid until that read returns (the
                // read holds a SafeHandle reference to it).
                if (d != null) d.Dispose();
                _registration.Dispose();
                _cancel.Dispose();
                _cts.Dispose();
                return default(ValueTask);
            }
        }
    }

    internal sealed class HealthService : IExecdHealth
    {
        private readonly SandboxCore _core;

        public HealthService(SandboxCore core) { _core = core; }

        public async Task<bool> PingAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await _core.OpAsync("sandbox.is_healthy", null, cancellationToken).ConfigureAwait(false);
            return Json.Bool(r, "healthy") == true;
        }
    }

    internal sealed class MetricsService : IExecdMetrics
    {
        private readonly SandboxCore _core;

        public MetricsService(SandboxCore core) { _core = core; }

        public async Task<SandboxMetrics> GetMetricsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return SandboxMetrics.FromJson(await _core.OpAsync("sandbox.get_metrics", null, cancellationToken).ConfigureAwait(false));
        }

        public IAsyncEnumerable<SandboxMetrics> WatchMetricsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return new BatchEnumerable<SandboxMetrics>(_core, "metrics.start", new Dictionary<string, object>(),
                (type, ev) => SandboxMetrics.FromJson(ev), cancellationToken);
        }
    }

    internal sealed class EgressService : IEgress
    {
        private readonly SandboxCore _core;

        public EgressService(SandboxCore core) { _core = core; }

        public async Task<NetworkPolicy> GetPolicyAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return NetworkPolicy.FromJson(await _core.OpAsync("sandbox.get_egress_policy", null, cancellationToken).ConfigureAwait(false));
        }

        public Task PatchRulesAsync(IEnumerable<NetworkRule> rules, CancellationToken cancellationToken = default(CancellationToken))
        {
            var l = new List<object>();
            if (rules != null) foreach (var r in rules) l.Add(r.ToJson());
            return _core.OpAsync("sandbox.patch_egress_rules", Args.Of("rules", l), cancellationToken);
        }

        public Task DeleteRulesAsync(IEnumerable<string> targets, CancellationToken cancellationToken = default(CancellationToken))
        {
            return _core.OpAsync("sandbox.delete_egress_rules", Args.Of("targets", Args.List(targets)), cancellationToken);
        }
    }
}
