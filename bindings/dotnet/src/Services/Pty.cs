// PTY sessions (the execd WebSocket terminal) as a Stream, and the live follow of a
// background command's log. CreateSessionAsync / GetSessionAsync / DeleteSessionAsync
// are the official C# SDK's IExecdPty names; AttachAsync (the official SDK leaves the
// WebSocket to the caller) returns a PtyStream.

using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Internal;
using OpenSandbox.Native;

namespace OpenSandbox.Services
{
    /// <summary>GET /pty/{id}.</summary>
    public class PtySessionStatus
    {
        public string SessionId { get; set; }
        /// <summary>Whether the shell is alive (false before the first attach).</summary>
        public bool Running { get; set; }
        /// <summary>Bytes ever produced: the offset the next byte will get.</summary>
        public long OutputOffset { get; set; }
    }

    /// <summary>Options of <see cref="IExecdPty.AttachAsync"/>.</summary>
    public class PtyAttachOptions
    {
        /// <summary>Replay from this byte offset (null: 0, all that is still buffered).</summary>
        public long? Since { get; set; }
        /// <summary>Start the shell on pipes instead of a terminal (only if this attach starts it).</summary>
        public bool Pipe { get; set; }
        /// <summary>Evict a client holding the session instead of failing with 409.</summary>
        public bool Takeover { get; set; }
    }

    /// <summary>Bounds of one <see cref="PtyStream.ReadChunkAsync"/>.</summary>
    public class PtyReadOptions
    {
        /// <summary>Read until the output of this call contains this text.</summary>
        public string Until { get; set; }
        /// <summary>Read until the shell exits and the connection closes.</summary>
        public bool UntilExit { get; set; }
        /// <summary>Bound the wait (TimedOut then).</summary>
        public TimeSpan? Timeout { get; set; }
    }

    /// <summary>One read of a PTY connection.</summary>
    public class PtyRead
    {
        public byte[] Data { get; set; }
        /// <summary>Absolute offset of Data's first byte (null when empty).</summary>
        public long? Offset { get; set; }
        public long NextOffset { get; set; }
        /// <summary>"stdout", "stderr" (pipe mode) or "replay".</summary>
        public string Channel { get; set; }
        public int? ExitCode { get; set; }
        public bool Closed { get; set; }
        /// <summary>1000 after an exit, 4001 when another client took the session over.</summary>
        public int? CloseCode { get; set; }
        public bool TimedOut { get; set; }
        public bool Done { get; set; }
        public string Text { get { return Encoding.UTF8.GetString(Data ?? new byte[0]); } }
    }

    /// <summary>A slice of a background command's log at byte Offset.</summary>
    public class LogChunk
    {
        public long Offset { get; set; }
        public byte[] Data { get; set; }
    }

    /// <summary>PTY sessions of a sandbox (extension over the official C# SDK for attach and follow).</summary>
    public interface IExecdPty
    {
        /// <summary>Creates a session (its shell starts on the first attach); returns its id.</summary>
        Task<string> CreateSessionAsync(string cwd = null, string command = null, CancellationToken cancellationToken = default(CancellationToken));
        Task<PtySessionStatus> GetSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Kills the session's shell and forgets the session.</summary>
        Task DeleteSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Attaches over the WebSocket: a Stream (read output, write input, Dispose detaches).
        /// A session held by another client throws SandboxApiException (409 ALREADY_CONNECTED) unless Takeover.</summary>
        Task<PtyStream> AttachAsync(string sessionId, PtyAttachOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>A background command's output as it is written, from any process that knows its id:
        /// chunks each starting where the previous ended; ends when the command finished and its log is drained.</summary>
        IAsyncEnumerable<LogChunk> FollowLogsAsync(string executionId, long cursor = 0, CancellationToken cancellationToken = default(CancellationToken));
    }

    /// <summary>An attached PTY session: Read returns terminal output, Write types ("\r" is Enter),
    /// Dispose detaches (the shell keeps running: reattach with Since = NextOffset).</summary>
    public sealed class PtyStream : Stream
    {
        private SessionEntryHandle _handle;
        private byte[] _pending = new byte[0];
        private int _pendingAt;
        private bool _done;

        internal PtyStream(long handle, string sessionId, string mode, long since)
        {
            _handle = SessionEntryHandle.Of(handle);
            SessionId = sessionId;
            Mode = mode;
            NextOffsetRead = since;
        }

        public string SessionId { get; private set; }
        /// <summary>"pty" or "pipe": how the shell really runs.</summary>
        public string Mode { get; private set; }
        private long NextOffsetRead { get; set; }
        /// <summary>The offset after the last byte read: pass it as Since to resume exactly.</summary>
        public long NextOffset { get { return NextOffsetRead - (_pending.Length - _pendingAt); } }
        public int? ExitCode { get; private set; }
        public int? CloseCode { get; private set; }

        private long Handle
        {
            get
            {
                var h = Volatile.Read(ref _handle);
                if (h == null) throw new ObjectDisposedException("PtyStream");
                return h.Id;
            }
        }

        private static async Task<object> Op(string op, Dictionary<string, object> args, CancellationToken ct)
        {
            var r = await Bridge.SessionCall(op, Json.Write(args), ct).ConfigureAwait(false);
            return r == null ? null : Json.Parse(r);
        }

        /// <summary>One read: what has arrived (one channel at a time), or with Until / UntilExit all output to that point.</summary>
        public async Task<PtyRead> ReadChunkAsync(PtyReadOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var o = options ?? new PtyReadOptions();
            var args = Args.Of("handle", Handle, "until", o.Until);
            if (o.UntilExit) args["until_exit"] = true;
            if (o.Timeout.HasValue) args["wait_ms"] = (long)o.Timeout.Value.TotalMilliseconds;
            var r = await Op("pty.read", args, cancellationToken).ConfigureAwait(false);
            var read = new PtyRead
            {
                Data = Convert.FromBase64String(Json.Str(r, "data_b64") ?? ""),
                Offset = Json.Long(r, "offset"),
                NextOffset = Json.Long(r, "next_offset") ?? 0,
                Channel = Json.Str(r, "channel"),
                ExitCode = (int?)Json.Long(r, "exit_code"),
                Closed = Json.Bool(r, "closed") == true,
                CloseCode = (int?)Json.Long(r, "close_code"),
                TimedOut = Json.Bool(r, "timed_out") == true,
                Done = Json.Bool(r, "done") == true,
            };
            NextOffsetRead = read.NextOffset;
            if (read.ExitCode.HasValue) ExitCode = read.ExitCode;
            if (read.CloseCode.HasValue) CloseCode = read.CloseCode;
            _done = read.Done;
            return read;
        }

        public override async Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            while (_pendingAt >= _pending.Length)
            {
                if (_done || Volatile.Read(ref _handle) == null) return 0;
                var r = await ReadChunkAsync(null, cancellationToken).ConfigureAwait(false);
                _pending = r.Data;
                _pendingAt = 0;
            }
            var n = Math.Min(count, _pending.Length - _pendingAt);
            Array.Copy(_pending, _pendingAt, buffer, offset, n);
            _pendingAt += n;
            return n;
        }

        public override int Read(byte[] buffer, int offset, int count)
        {
            return ReadAsync(buffer, offset, count, CancellationToken.None).GetAwaiter().GetResult();
        }

        public override async Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            if (count == 0) return;
            var b64 = Convert.ToBase64String(buffer, offset, count);
            await Op("pty.write", Args.Of("handle", Handle, "data_b64", b64), cancellationToken).ConfigureAwait(false);
        }

        public override void Write(byte[] buffer, int offset, int count)
        {
            WriteAsync(buffer, offset, count, CancellationToken.None).GetAwaiter().GetResult();
        }

        /// <summary>Types text (UTF-8).</summary>
        public Task WriteAsync(string text, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("pty.write", Args.Of("handle", Handle, "text", text), cancellationToken);
        }

        /// <summary>Sets the terminal size (the foreground program gets SIGWINCH).</summary>
        public Task ResizeAsync(int cols, int rows, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("pty.resize", Args.Of("handle", Handle, "cols", (long)cols, "rows", (long)rows), cancellationToken);
        }

        /// <summary>SIGINT, SIGTERM, SIGKILL, SIGQUIT or SIGHUP to the shell's process group.</summary>
        public Task SignalAsync(string signal, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Op("pty.signal", Args.Of("handle", Handle, "signal", signal), cancellationToken);
        }

        /// <summary>Detaches; returns the offset to pass as Since to resume exactly here.</summary>
        public async Task<long> DetachAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            var h = Interlocked.Exchange(ref _handle, null);
            _done = true;
            if (h == null) return NextOffset;
            var r = await Op("pty.close", Args.Of("handle", h.Id), cancellationToken).ConfigureAwait(false);
            NextOffsetRead = Json.Long(r, "next_offset") ?? NextOffsetRead;
            _pending = new byte[0];
            _pendingAt = 0;
            // pty.close released the handle already; releasing again is a no-op.
            h.Dispose();
            return NextOffsetRead;
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing && Volatile.Read(ref _handle) != null)
            {
                try { DetachAsync().GetAwaiter().GetResult(); }
                catch (Exception) { /* already gone: nothing to detach */ }
            }
            base.Dispose(disposing);
        }

        public override bool CanRead { get { return true; } }
        public override bool CanWrite { get { return true; } }
        public override bool CanSeek { get { return false; } }
        public override void Flush() { }
        public override long Length { get { throw new NotSupportedException("a PTY stream has no length"); } }
        public override long Position
        {
            get { throw new NotSupportedException("a PTY stream cannot seek"); }
            set { throw new NotSupportedException("a PTY stream cannot seek"); }
        }
        public override long Seek(long offset, SeekOrigin origin) { throw new NotSupportedException("a PTY stream cannot seek"); }
        public override void SetLength(long value) { throw new NotSupportedException("a PTY stream has no length"); }
    }
}

namespace OpenSandbox.Internal
{
    using OpenSandbox.Services;

    internal sealed class PtyService : IExecdPty
    {
        private readonly SandboxCore _core;

        public PtyService(SandboxCore core) { _core = core; }

        public async Task<string> CreateSessionAsync(string cwd = null, string command = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await _core.OpAsync("pty.create", Args.Of("cwd", cwd, "command", command), cancellationToken).ConfigureAwait(false);
            return Json.Str(r, "session_id");
        }

        public async Task<PtySessionStatus> GetSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            var r = await _core.OpAsync("pty.get", Args.Of("session_id", sessionId), cancellationToken).ConfigureAwait(false);
            return new PtySessionStatus
            {
                SessionId = Json.Str(r, "session_id"),
                Running = Json.Bool(r, "running") == true,
                OutputOffset = Json.Long(r, "output_offset") ?? 0,
            };
        }

        public Task DeleteSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            return _core.OpAsync("pty.delete", Args.Of("session_id", sessionId), cancellationToken);
        }

        public async Task<PtyStream> AttachAsync(string sessionId, PtyAttachOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            var o = options ?? new PtyAttachOptions();
            var args = Args.Of("session_id", sessionId, "since", o.Since, "mode", o.Pipe ? "pipe" : "pty", "takeover", o.Takeover);
            var r = await _core.OpAsync("pty.attach", args, cancellationToken).ConfigureAwait(false);
            return new PtyStream(Json.Long(r, "handle") ?? 0, sessionId, Json.Str(r, "mode"), Json.Long(r, "since") ?? 0);
        }

        public IAsyncEnumerable<LogChunk> FollowLogsAsync(string executionId, long cursor = 0, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(executionId, "executionId");
            return new BatchEnumerable<LogChunk>(_core, "commands.follow_logs", Args.Of("id", executionId, "cursor", cursor),
                (type, ev) => new LogChunk { Offset = Json.Long(ev, "offset") ?? 0, Data = Convert.FromBase64String(Json.Str(ev, "data_b64") ?? "") },
                cancellationToken);
        }
    }
}
