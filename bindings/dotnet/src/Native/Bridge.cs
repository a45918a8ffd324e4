// The one place that talks to the C ABI (bindings/ffi/API.md). Everything above it works
// with managed strings, byte arrays, SafeHandles and Tasks.
//
// Async operations: every osb_* async function takes (cancel, callback, user_data) and calls
// the callback exactly once, usually from a tokio worker thread, sometimes synchronously.
// - The callbacks are delegates held in static readonly fields: they live for the whole
//   process, so native code can never call a delegate the GC has collected. One field per
//   delegate type csbindgen generated, all pointing at the same static method.
// - user_data is an integer id into a table of pending operations (no GCHandle, nothing
//   pinned); the callback looks the id up, converts the result (copies strings, events and
//   chunks into managed memory and frees the native ones right there, so an abandoned Task
//   leaks nothing) and completes a TaskCompletionSource created with
//   RunContinuationsAsynchronously, so user code never runs on a tokio worker.
// - A CancellationToken that can be cancelled gets a native OsbCancel for the operation;
//   cancelling the token cancels the core future (the connection is closed). The Task then
//   ends as cancelled (OperationCanceledException). Runs are stopped by releasing their
//   session handle, which interrupts the command on the server.
// - Nothing thrown in the callback may reach native code: it is caught and put on the Task.

using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Core;
using OpenSandbox.Internal;

namespace OpenSandbox.Native
{
    internal static class Bridge
    {
        private enum ResultKind
        {
            None,
            String,
        }

        private sealed class Pending
        {
            public TaskCompletionSource<object> Tcs;
            public ResultKind Kind;
            public CancellationToken Token;
            public CancelHandle Cancel;
            public CancellationTokenRegistration Registration;
        }

        [ThreadStatic]
        private static bool _threadMarked;

        private static long _nextId;
        private static readonly ConcurrentDictionary<long, Pending> PendingOps = new ConcurrentDictionary<long, Pending>();

        // Never collected: the runtime may call them at any time from any thread.
        private static unsafe readonly NativeMethods.osb_session_call_callback_delegate SessionCallCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_session_upload_write_callback_delegate UploadWriteCb = OnComplete;

        // ------------------------------------------------------------------ runtime and session

        private static readonly object SessionLock = new object();
        private static SessionHandle _session;
        private static IntPtr _runtime;

        /// <summary>
        /// The package's session of the op layer (bindings/common behind osb_session_call), on
        /// an explicit runtime (osb_runtime_new) that this bridge owns: both are freed at
        /// ProcessExit, so the runtime's worker threads end before the process does (Mono
        /// waits for native threads that called into managed code; measured 2026-12-01, a
        /// program exits in 0.6 s this way, with no _exit() needed). Calls after exit fail.
        /// </summary>
        internal static unsafe SessionHandle Session
        {
            get
            {
                lock (SessionLock)
                {
                    if (_session != null) return _session;
                    if (_exited) throw new ObjectDisposedException("OpenSandbox native session", "the process is exiting");
                    OsbError* err = null;
                    var opts = Utf8z("{\"thread_name\":\"opensandbox-dotnet-worker\"}");
                    OsbRuntime* rt;
                    fixed (byte* o = opts) rt = NativeMethods.osb_runtime_new(o, &err);
                    if (rt == null) throw TakeError(err, CancellationToken.None);
                    var s = NativeMethods.osb_session_new(rt, &err);
                    if (s == null)
                    {
                        NativeMethods.osb_runtime_free(rt);
                        throw TakeError(err, CancellationToken.None);
                    }
                    var h = new SessionHandle();
                    h.Set((IntPtr)s);
                    _runtime = (IntPtr)rt;
                    _session = h;
                    AppDomain.CurrentDomain.ProcessExit += OnProcessExit;
                    return h;
                }
            }
        }

        private static bool _exited;

        /// <summary>Frees the session (its handles: runs are cancelled) and then the runtime.</summary>
        private static unsafe void OnProcessExit(object sender, EventArgs e)
        {
            try
            {
                lock (SessionLock)
                {
                    _exited = true;
                    if (_session != null) _session.Dispose();
                    _session = null;
                    if (_runtime != IntPtr.Zero) NativeMethods.osb_runtime_free((OsbRuntime*)_runtime);
                    _runtime = IntPtr.Zero;
                }
            }
            catch (Exception)
            {
                // nothing useful to do at exit
            }
        }

        /// <summary>Test hook: sees every op and its JSON arguments before they are sent.</summary>
        internal static Action<string, string> OpTrace { get; set; }

        /// <summary>Runs one op of the session; the result is its JSON text.</summary>
        public static unsafe Task<string> SessionCall(string op, string argsJson, CancellationToken ct)
        {
            var trace = OpTrace;
            if (trace != null) trace(op, argsJson);
            var opz = Utf8z(op);
            var json = Utf8z(argsJson);
            var r = Start(ResultKind.String, ct, Session, (target, cancel, ud) =>
            {
                fixed (byte* o = opz)
                fixed (byte* j = json)
                    NativeMethods.osb_session_call((OsbSession*)target, o, j, (OsbCancel*)cancel, SessionCallCb, ud);
            });
            return Map(r, x => (string)x);
        }

        /// <summary>Blocking form of <see cref="SessionCall"/>, for pumps on a dedicated thread.</summary>
        public static unsafe string SessionCallBlocking(string op, string argsJson, CancelHandle cancel, CancellationToken ct)
        {
            var trace = OpTrace;
            if (trace != null) trace(op, argsJson);
            var s = Session;
            var opz = Utf8z(op);
            var json = Utf8z(argsJson);
            var sAdded = false;
            var cAdded = false;
            try
            {
                s.DangerousAddRef(ref sAdded);
                cancel.DangerousAddRef(ref cAdded);
                OsbError* err = null;
                byte* res;
                fixed (byte* o = opz)
                fixed (byte* j = json)
                    res = NativeMethods.osb_session_call_blocking((OsbSession*)s.DangerousGetHandle(), o, j, (OsbCancel*)cancel.DangerousGetHandle(), &err);
                if (res == null) throw TakeError(err, ct);
                return TakeString(res);
            }
            finally
            {
                if (cAdded) cancel.DangerousRelease();
                if (sAdded) s.DangerousRelease();
            }
        }

        /// <summary>
        /// The next items of run <paramref name="handle"/> (up to <paramref name="max"/>, waiting
        /// for the first) in the binary layout of osb_session_next_items_blocking (bindings/ffi
        /// API.md §4), copied out of the library's chunk; for pumps on a dedicated thread.
        /// </summary>
        public static unsafe byte[] NextItemsBlocking(long handle, int max, CancelHandle cancel, CancellationToken ct)
        {
            var s = Session;
            var sAdded = false;
            var cAdded = false;
            try
            {
                s.DangerousAddRef(ref sAdded);
                cancel.DangerousAddRef(ref cAdded);
                OsbError* err = null;
                var c = NativeMethods.osb_session_next_items_blocking((OsbSession*)s.DangerousGetHandle(), (ulong)handle,
                    new UIntPtr((uint)max), (OsbCancel*)cancel.DangerousGetHandle(), &err);
                if (c == null) throw TakeError(err, ct);
                return TakeChunk(c);
            }
            finally
            {
                if (cAdded) cancel.DangerousRelease();
                if (sAdded) s.DangerousRelease();
            }
        }

        /// <summary>Releases a session handle (a run is cancelled: its command is interrupted).</summary>
        public static unsafe bool SessionRelease(long handle)
        {
            if (handle <= 0) return false;
            lock (SessionLock)
            {
                // Finalizers may release after ProcessExit freed the session: nothing left to free.
                if (_exited) return false;
            }
            var s = Session;
            var added = false;
            try
            {
                s.DangerousAddRef(ref added);
                return NativeMethods.osb_session_release((OsbSession*)s.DangerousGetHandle(), (ulong)handle);
            }
            finally
            {
                if (added) s.DangerousRelease();
            }
        }

        /// <summary>The op layer's manifest (osb_ops_manifest) as JSON.</summary>
        public static unsafe string OpsManifest() { return TakeString(NativeMethods.osb_ops_manifest()); }

        // ------------------------------------------------------------------ misc

        public static unsafe string Version { get { return PtrToString(NativeMethods.osb_version()); } }

        public static unsafe uint AbiVersion { get { return NativeMethods.osb_abi_version(); } }

        /// <summary>Number of async operations whose callback has not fired yet (tests use it to prove nothing leaks).</summary>
        public static int PendingCount { get { return PendingOps.Count; } }

        // ------------------------------------------------------------------ bytes

        /// <summary>Sends a chunk to upload <paramref name="handle"/> (from upload.open); the bytes are copied before the call returns.</summary>
        public static unsafe Task UploadWrite(long handle, byte[] data, int offset, int count, CancellationToken ct)
        {
            if (offset < 0 || count < 0 || offset + count > data.Length) throw new ArgumentOutOfRangeException("count");
            return Start(ResultKind.None, ct, Session, (target, cancel, ud) =>
            {
                fixed (byte* p = data)
                    NativeMethods.osb_session_upload_write((OsbSession*)target, (ulong)handle, p + offset, (UIntPtr)count, (OsbCancel*)cancel, UploadWriteCb, ud);
            });
        }

        /// <summary>
        /// Uploads <paramref name="len"/> bytes of the regular file open as <paramref name="fd"/>
        /// from <paramref name="offset"/> (osb_session_upload_fd_blocking): the library reads the
        /// file itself, no chunk crosses into it. Takes <paramref name="fd"/> in every case (pass
        /// a duplicate, <see cref="DupDescriptor"/>). Blocks; for a dedicated thread.
        /// </summary>
        public static unsafe void UploadFdBlocking(string argsJson, int fd, long offset, long len, CancelHandle cancel, CancellationToken ct)
        {
            var trace = OpTrace;
            // The arguments are upload.open's (upload.file is no op of the manifest), as Go traces them.
            if (trace != null) trace("upload.open", argsJson);
            var s = Session;
            var json = Utf8z(argsJson);
            var sAdded = false;
            var cAdded = false;
            try
            {
                s.DangerousAddRef(ref sAdded);
                cancel.DangerousAddRef(ref cAdded);
                OsbError* err = null;
                int rc;
                fixed (byte* j = json)
                    rc = NativeMethods.osb_session_upload_fd_blocking((OsbSession*)s.DangerousGetHandle(), j, fd, (ulong)offset, (ulong)len, (OsbCancel*)cancel.DangerousGetHandle(), &err);
                if (rc != 0) throw TakeError(err, ct);
            }
            finally
            {
                if (cAdded) cancel.DangerousRelease();
                if (sAdded) s.DangerousRelease();
            }
        }

        [DllImport("libc", EntryPoint = "dup", SetLastError = true)]
        private static extern int PosixDup(int fd);

        [DllImport("libc", EntryPoint = "fcntl", SetLastError = true)]
        private static extern int PosixFcntl(int fd, int cmd, int arg);

        /// <summary>
        /// A duplicate of the Unix descriptor of <paramref name="h"/> (sharing its offset), closed
        /// on exec; -1 when there is none (Windows, a closed handle, no libc to call).
        /// </summary>
        public static int DupDescriptor(Microsoft.Win32.SafeHandles.SafeFileHandle h)
        {
            var p = Environment.OSVersion.Platform;
            if (p != PlatformID.Unix && p != PlatformID.MacOSX) return -1;
            if (h == null || h.IsClosed || h.IsInvalid) return -1;
            var added = false;
            try
            {
                h.DangerousAddRef(ref added);
                var fd = PosixDup(checked((int)h.DangerousGetHandle().ToInt64()));
                if (fd < 0) return -1;
                // F_SETFD (2) FD_CLOEXEC (1), the same numbers on Linux and macOS: a process
                // started meanwhile must not inherit the duplicate (F_DUPFD_CLOEXEC's number
                // differs between the two).
                PosixFcntl(fd, 2, 1);
                return fd;
            }
            catch (Exception e) when (e is DllNotFoundException || e is EntryPointNotFoundException || e is OverflowException || e is ObjectDisposedException)
            {
                return -1;
            }
            finally
            {
                if (added) h.DangerousRelease();
            }
        }

        /// <summary>
        /// Fills <paramref name="buf"/> from <paramref name="offset"/> with the next bytes of
        /// download <paramref name="handle"/> (osb_session_download_read, copied straight into
        /// the pinned array: no native chunk, no second copy), reading until
        /// <paramref name="count"/> bytes or the end; returns the bytes read (less than
        /// <paramref name="count"/> only at the end). Blocks: for a pool thread. A download
        /// opened by a blocking download.open (<see cref="SessionCallBlocking"/>) is on a
        /// driver of its own, so this thread reads the socket itself (bindings/common
        /// block_on_read).
        /// </summary>
        public static unsafe int DownloadRead(long handle, byte[] buf, int offset, int count, CancelHandle cancel, CancellationToken ct)
        {
            if (offset < 0 || count < 0 || offset + count > buf.Length) throw new ArgumentOutOfRangeException("count");
            var s = Session;
            var sAdded = false;
            var cAdded = false;
            try
            {
                s.DangerousAddRef(ref sAdded);
                cancel.DangerousAddRef(ref cAdded);
                var sp = (OsbSession*)s.DangerousGetHandle();
                var cp = (OsbCancel*)cancel.DangerousGetHandle();
                var n = 0;
                fixed (byte* p = buf)
                {
                    while (n < count)
                    {
                        OsbError* err = null;
                        var r = NativeMethods.osb_session_download_read(sp, (ulong)handle, p + offset + n, (UIntPtr)(count - n), cp, &err);
                        if (r < 0) throw TakeError(err, ct);
                        if (r == 0) break;
                        n += (int)r;
                    }
                }
                return n;
            }
            finally
            {
                if (cAdded) cancel.DangerousRelease();
                if (sAdded) s.DangerousRelease();
            }
        }

        private static async Task<T> Map<T>(Task<object> t, Func<object, T> f)
        {
            return f(await t.ConfigureAwait(false));
        }

        private delegate void Invoke(IntPtr target, IntPtr cancel, UIntPtr userData);

        private static Task<object> Start(ResultKind kind, CancellationToken ct, SafeHandle target, Invoke invoke)
        {
            var tcs = new TaskCompletionSource<object>(TaskCreationOptions.RunContinuationsAsynchronously);
            if (ct.IsCancellationRequested)
            {
                tcs.SetCanceled();
                return tcs.Task;
            }
            var pending = new Pending { Tcs = tcs, Kind = kind, Token = ct };
            var id = Interlocked.Increment(ref _nextId);
            if (ct.CanBeCanceled)
            {
                pending.Cancel = CancelHandle.New();
                var cancel = pending.Cancel;
                pending.Registration = ct.Register(cancel.Cancel);
            }
            PendingOps[id] = pending;
            var targetAdded = false;
            var cancelAdded = false;
            try
            {
                target.DangerousAddRef(ref targetAdded);
                var cancelPtr = IntPtr.Zero;
                if (pending.Cancel != null)
                {
                    pending.Cancel.DangerousAddRef(ref cancelAdded);
                    cancelPtr = pending.Cancel.DangerousGetHandle();
                }
                invoke(target.DangerousGetHandle(), cancelPtr, (UIntPtr)id);
            }
            catch (Exception e)
            {
                Pending p;
                if (PendingOps.TryRemove(id, out p))
                {
                    Cleanup(p);
                    tcs.TrySetException(e);
                }
            }
            finally
            {
                if (cancelAdded) pending.Cancel.DangerousRelease();
                if (targetAdded) target.DangerousRelease();
            }
            return tcs.Task;
        }

        private static void Cleanup(Pending p)
        {
            if (p.Cancel != null)
            {
                p.Registration.Dispose();
                p.Cancel.Dispose();
            }
        }

        private static unsafe void OnComplete(UIntPtr userData, void* result, OsbError* error)
        {
            // Runs on a tokio worker (or synchronously inside the osb_* call). Must not throw.
            try
            {
                if (!_threadMarked)
                {
                    // Mono attaches a native thread on its first callback as a foreground thread
                    // and would then wait for the (never ending) tokio worker at process exit.
                    _threadMarked = true;
                    var t = Thread.CurrentThread;
                    if (!t.IsBackground) t.IsBackground = true;
                }
                Pending p;
                if (!PendingOps.TryRemove((long)userData.ToUInt64(), out p))
                {
                    // Unknown id: nobody will take ownership, free what we were given.
                    if (error != null) NativeMethods.osb_error_free(error);
                    return;
                }
                Cleanup(p);
                if (error != null)
                {
                    var ex = TakeError(error, p.Token);
                    if (ex is OperationCanceledException) p.Tcs.TrySetCanceled(p.Token);
                    else p.Tcs.TrySetException(ex);
                    return;
                }
                object value;
                try
                {
                    value = Convert(p.Kind, result);
                }
                catch (Exception e)
                {
                    p.Tcs.TrySetException(e);
                    return;
                }
                p.Tcs.TrySetResult(value);
            }
            catch (Exception)
            {
                // Never unwind into native code.
            }
        }

        private static unsafe object Convert(ResultKind kind, void* result)
        {
            switch (kind)
            {
                case ResultKind.None:
                    if (result != null) NativeMethods.osb_string_free((byte*)result);
                    return null;
                case ResultKind.String:
                    return TakeString((byte*)result);
                default:
                    throw new InvalidOperationException("unknown result kind");
            }
        }

        private static unsafe byte[] TakeChunk(OsbChunk* c)
        {
            if (c == null) return null;
            try
            {
                UIntPtr len;
                var data = NativeMethods.osb_chunk_data(c, &len);
                var n = (int)len.ToUInt64();
                var buf = new byte[n];
                if (n > 0) Marshal.Copy((IntPtr)data, buf, 0, n);
                return buf;
            }
            finally
            {
                NativeMethods.osb_chunk_free(c);
            }
        }

        // ------------------------------------------------------------------ errors

        /// <summary>Turns an owned OsbError into the official exception class and frees it.</summary>
        internal static unsafe Exception TakeError(OsbError* e, CancellationToken ct)
        {
            if (e == null) return new SandboxInternalException("native call failed without an error");
            try
            {
                var kind = PtrToString(NativeMethods.osb_error_kind(e)) ?? "internal";
                int status = NativeMethods.osb_error_status(e);
                var code = PtrToString(NativeMethods.osb_error_code(e));
                var message = PtrToString(NativeMethods.osb_error_message(e)) ?? kind;
                var requestId = PtrToString(NativeMethods.osb_error_request_id(e));
                var body = PtrToString(NativeMethods.osb_error_body(e));
                if (kind == "cancelled" && ct.IsCancellationRequested) return new OperationCanceledException(message, ct);
                return ErrorMapper.ToException(kind, status == 0 ? (int?)null : status, code, message, requestId, body);
            }
            finally
            {
                NativeMethods.osb_error_free(e);
            }
        }

        // ------------------------------------------------------------------ strings

        internal static byte[] Utf8z(string s)
        {
            if (s == null) return null;
            var n = Encoding.UTF8.GetByteCount(s);
            var b = new byte[n + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
            return b;
        }

        internal static unsafe string PtrToString(byte* p)
        {
            if (p == null) return null;
            var n = 0;
            while (p[n] != 0) n++;
            return Encoding.UTF8.GetString(p, n);
        }

        /// <summary>Copies an owned char* and frees it with osb_string_free.</summary>
        internal static unsafe string TakeString(byte* p)
        {
            if (p == null) return null;
            try
            {
                return PtrToString(p);
            }
            finally
            {
                NativeMethods.osb_string_free(p);
            }
        }
    }
}
