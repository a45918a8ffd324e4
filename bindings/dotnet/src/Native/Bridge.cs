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
//   cancelling the token cancels the core future (the connection is closed and, for
//   execution streams opened with interrupt_on_drop, the command is interrupted on the
//   server). The Task then ends as cancelled (OperationCanceledException).
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
    /// <summary>One event of an execution or metrics stream, copied out of native memory.</summary>
    internal sealed class NativeEvent
    {
        public int Type;
        public string Text;
        public long Timestamp;
        /// <summary>The full event (osb_event_json), parsed; null for init/stdout/stderr/status.</summary>
        public object Json;
    }

    internal static class Bridge
    {
        private enum ResultKind
        {
            None,
            String,
            Handle,
            Event,
            Chunk,
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

        static Bridge()
        {
            // Mono (6.8) waits at shutdown, forever, for the native runtime's worker threads
            // once they have called back into managed code (they never end: the runtime lives
            // for the process). ProcessExit still fires before that wait, so on Mono the SDK
            // ends the process there, after flushing the console, with the exit code already
            // decided. .NET (CoreCLR) does not wait for such threads and is left alone.
            // Measured (2026-12-01, Mono 6.8): a program whose calls all go through an op-layer
            // session on an explicit runtime (osb_runtime_new) that is freed at ProcessExit exits
            // in 0.6 s without _exit(); on the never-ending process-wide runtime it hangs. The
            // handle-based functions (lifecycle, files, metrics) still use that runtime, so the
            // workaround stays until they are ported to the session (bindings/ffi/API.md §7).
            if (Type.GetType("Mono.Runtime") != null)
                AppDomain.CurrentDomain.ProcessExit += OnProcessExit;
        }

        private static void OnProcessExit(object sender, EventArgs e)
        {
            try
            {
                Console.Out.Flush();
                Console.Error.Flush();
            }
            catch (Exception)
            {
                // nothing useful to do at exit
            }
            _exit(Environment.ExitCode);
        }

        [DllImport("libc", EntryPoint = "_exit")]
        private static extern void _exit(int status);

        private static long _nextId;
        private static readonly ConcurrentDictionary<long, Pending> PendingOps = new ConcurrentDictionary<long, Pending>();

        // Never collected: the runtime may call them at any time from any thread.
        private static unsafe readonly NativeMethods.osb_manager_call_callback_delegate ManagerCallCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_create_callback_delegate SandboxCreateCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_connect_callback_delegate SandboxConnectCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_resume_callback_delegate SandboxResumeCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_call_callback_delegate SandboxCallCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_open_stream_callback_delegate OpenStreamCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_sandbox_download_callback_delegate DownloadCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_stream_next_callback_delegate StreamNextCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_download_next_callback_delegate DownloadNextCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_upload_write_callback_delegate UploadWriteCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_upload_finish_callback_delegate UploadFinishCb = OnComplete;
        private static unsafe readonly NativeMethods.osb_session_call_callback_delegate SessionCallCb = OnComplete;

        // ------------------------------------------------------------------ op-layer session

        private static readonly object SessionLock = new object();
        private static SessionHandle _session;

        /// <summary>
        /// The package's session of the op layer (bindings/common behind osb_session_call), on
        /// the process-wide default runtime, which the handle-based functions use too: the
        /// process has one tokio runtime. Kept for the process.
        /// </summary>
        internal static unsafe SessionHandle Session
        {
            get
            {
                lock (SessionLock)
                {
                    if (_session != null) return _session;
                    OsbError* err = null;
                    var rt = NativeMethods.osb_runtime_default(&err);
                    if (rt == null) throw TakeError(err, CancellationToken.None);
                    try
                    {
                        var s = NativeMethods.osb_session_new(rt, &err);
                        if (s == null) throw TakeError(err, CancellationToken.None);
                        var h = new SessionHandle();
                        h.Set((IntPtr)s);
                        _session = h;
                        return h;
                    }
                    finally
                    {
                        NativeMethods.osb_runtime_free(rt);
                    }
                }
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

        /// <summary>Releases a session handle (a run is cancelled: its command is interrupted).</summary>
        public static unsafe bool SessionRelease(long handle)
        {
            if (handle <= 0) return false;
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

        // ------------------------------------------------------------------ sync constructors

        public static unsafe ConfigHandle ConfigNew(string optionsJson)
        {
            var h = new ConfigHandle();
            var json = Utf8z(optionsJson);
            OsbError* err = null;
            OsbConfig* p;
            fixed (byte* j = json) p = NativeMethods.osb_config_new(j, &err);
            if (p == null) throw TakeError(err, CancellationToken.None);
            h.Set((IntPtr)p);
            return h;
        }

        public static unsafe string ConfigDescribe(ConfigHandle c)
        {
            var added = false;
            try
            {
                c.DangerousAddRef(ref added);
                return TakeString(NativeMethods.osb_config_describe((OsbConfig*)c.DangerousGetHandle()));
            }
            finally
            {
                if (added) c.DangerousRelease();
            }
        }

        public static unsafe ManagerHandle ManagerNew(ConfigHandle c)
        {
            var h = new ManagerHandle();
            var added = false;
            try
            {
                c.DangerousAddRef(ref added);
                OsbError* err = null;
                var p = NativeMethods.osb_manager_new((OsbConfig*)c.DangerousGetHandle(), &err);
                if (p == null) throw TakeError(err, CancellationToken.None);
                h.Set((IntPtr)p);
                return h;
            }
            finally
            {
                if (added) c.DangerousRelease();
            }
        }

        public static unsafe string SandboxId(SandboxHandle s)
        {
            var added = false;
            try
            {
                s.DangerousAddRef(ref added);
                return PtrToString(NativeMethods.osb_sandbox_id((OsbSandbox*)s.DangerousGetHandle()));
            }
            finally
            {
                if (added) s.DangerousRelease();
            }
        }

        public static unsafe UploadHandle Upload(SandboxHandle s, string argsJson)
        {
            var h = new UploadHandle();
            var json = Utf8z(argsJson);
            var added = false;
            try
            {
                s.DangerousAddRef(ref added);
                OsbError* err = null;
                OsbUpload* p;
                fixed (byte* j = json) p = NativeMethods.osb_sandbox_upload((OsbSandbox*)s.DangerousGetHandle(), j, &err);
                if (p == null) throw TakeError(err, CancellationToken.None);
                h.Set((IntPtr)p);
                return h;
            }
            finally
            {
                if (added) s.DangerousRelease();
            }
        }

        // ------------------------------------------------------------------ async operations

        public static unsafe Task<string> ManagerCall(ManagerHandle m, string op, string argsJson, CancellationToken ct)
        {
            var opz = Utf8z(op);
            var json = Utf8z(argsJson);
            var r = Start(ResultKind.String, ct, m, (target, cancel, ud) =>
            {
                fixed (byte* o = opz)
                fixed (byte* j = json)
                    NativeMethods.osb_manager_call((OsbManager*)target, o, j, (OsbCancel*)cancel, ManagerCallCb, ud);
            });
            return Map(r, x => (string)x);
        }

        public static unsafe Task<string> SandboxCall(SandboxHandle s, string op, string argsJson, CancellationToken ct)
        {
            var opz = Utf8z(op);
            var json = Utf8z(argsJson);
            var r = Start(ResultKind.String, ct, s, (target, cancel, ud) =>
            {
                fixed (byte* o = opz)
                fixed (byte* j = json)
                    NativeMethods.osb_sandbox_call((OsbSandbox*)target, o, j, (OsbCancel*)cancel, SandboxCallCb, ud);
            });
            return Map(r, x => (string)x);
        }

        public enum OpenKind { Create, Connect, Resume }

        public static unsafe Task<SandboxHandle> SandboxOpen(OpenKind kind, ConfigHandle c, string optionsJson, CancellationToken ct)
        {
            var json = Utf8z(optionsJson);
            var r = Start(ResultKind.Handle, ct, c, (target, cancel, ud) =>
            {
                fixed (byte* j = json)
                {
                    switch (kind)
                    {
                        case OpenKind.Create:
                            NativeMethods.osb_sandbox_create((OsbConfig*)target, j, (OsbCancel*)cancel, SandboxCreateCb, ud);
                            break;
                        case OpenKind.Connect:
                            NativeMethods.osb_sandbox_connect((OsbConfig*)target, j, (OsbCancel*)cancel, SandboxConnectCb, ud);
                            break;
                        default:
                            NativeMethods.osb_sandbox_resume((OsbConfig*)target, j, (OsbCancel*)cancel, SandboxResumeCb, ud);
                            break;
                    }
                }
            });
            return Map(r, x => { var h = new SandboxHandle(); h.Set((IntPtr)x); return h; });
        }

        public static unsafe Task<StreamHandle> OpenStream(SandboxHandle s, string op, string argsJson, CancellationToken ct)
        {
            var opz = Utf8z(op);
            var json = Utf8z(argsJson);
            var r = Start(ResultKind.Handle, ct, s, (target, cancel, ud) =>
            {
                fixed (byte* o = opz)
                fixed (byte* j = json)
                    NativeMethods.osb_sandbox_open_stream((OsbSandbox*)target, o, j, (OsbCancel*)cancel, OpenStreamCb, ud);
            });
            return Map(r, x => { var h = new StreamHandle(); h.Set((IntPtr)x); return h; });
        }

        /// <summary>The next event, or null at the end of the stream.</summary>
        public static unsafe Task<NativeEvent> StreamNext(StreamHandle st, CancellationToken ct)
        {
            var r = Start(ResultKind.Event, ct, st, (target, cancel, ud) =>
                NativeMethods.osb_stream_next((OsbStream*)target, (OsbCancel*)cancel, StreamNextCb, ud));
            return Map(r, x => (NativeEvent)x);
        }

        /// <summary>
        /// Blocking next (osb_stream_next_blocking): the event, or null at the end. For pumps on
        /// a dedicated managed thread, where it avoids a callback and a task per event.
        /// </summary>
        public static unsafe NativeEvent StreamNextBlocking(StreamHandle st, CancelHandle cancel, CancellationToken ct)
        {
            var stAdded = false;
            var cAdded = false;
            try
            {
                st.DangerousAddRef(ref stAdded);
                cancel.DangerousAddRef(ref cAdded);
                OsbError* err = null;
                var ev = NativeMethods.osb_stream_next_blocking((OsbStream*)st.DangerousGetHandle(), (OsbCancel*)cancel.DangerousGetHandle(), &err);
                if (err != null)
                {
                    var ex = TakeError(err, ct);
                    if (ev != null) NativeMethods.osb_event_free(ev);
                    throw ex;
                }
                return TakeEvent(ev);
            }
            finally
            {
                if (cAdded) cancel.DangerousRelease();
                if (stAdded) st.DangerousRelease();
            }
        }

        public static unsafe Task<DownloadHandle> Download(SandboxHandle s, string argsJson, CancellationToken ct)
        {
            var json = Utf8z(argsJson);
            var r = Start(ResultKind.Handle, ct, s, (target, cancel, ud) =>
            {
                fixed (byte* j = json)
                    NativeMethods.osb_sandbox_download((OsbSandbox*)target, j, (OsbCancel*)cancel, DownloadCb, ud);
            });
            return Map(r, x => { var h = new DownloadHandle(); h.Set((IntPtr)x); return h; });
        }

        /// <summary>The next chunk, or null at the end of the body.</summary>
        public static unsafe Task<byte[]> DownloadNext(DownloadHandle d, CancellationToken ct)
        {
            var r = Start(ResultKind.Chunk, ct, d, (target, cancel, ud) =>
                NativeMethods.osb_download_next((OsbDownload*)target, (OsbCancel*)cancel, DownloadNextCb, ud));
            return Map(r, x => (byte[])x);
        }

        public static unsafe Task UploadWrite(UploadHandle u, byte[] data, int offset, int count, CancellationToken ct)
        {
            if (offset < 0 || count < 0 || offset + count > data.Length) throw new ArgumentOutOfRangeException("count");
            // The ABI copies the bytes before osb_upload_write returns: pinning for the call is enough.
            return Start(ResultKind.None, ct, u, (target, cancel, ud) =>
            {
                fixed (byte* p = data)
                    NativeMethods.osb_upload_write((OsbUpload*)target, p + offset, (UIntPtr)count, (OsbCancel*)cancel, UploadWriteCb, ud);
            });
        }

        public static unsafe Task UploadFinish(UploadHandle u, CancellationToken ct)
        {
            return Start(ResultKind.None, ct, u, (target, cancel, ud) =>
                NativeMethods.osb_upload_finish((OsbUpload*)target, (OsbCancel*)cancel, UploadFinishCb, ud));
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
                case ResultKind.Handle:
                    if (result == null) throw new SandboxInternalException("native operation returned no handle");
                    return (IntPtr)result;
                case ResultKind.Event:
                    return TakeEvent((OsbEvent*)result);
                case ResultKind.Chunk:
                    return TakeChunk((OsbChunk*)result);
                default:
                    throw new InvalidOperationException("unknown result kind");
            }
        }

        private static unsafe NativeEvent TakeEvent(OsbEvent* e)
        {
            if (e == null) return null;
            try
            {
                OsbEventView view;
                NativeMethods.osb_event_view(e, &view);
                var ev = new NativeEvent { Type = view.event_type, Timestamp = view.timestamp };
                if (view.text != null)
                    ev.Text = Encoding.UTF8.GetString(view.text, (int)view.text_len.ToUInt64());
                switch (view.event_type)
                {
                    case NativeMethods.OSB_EVENT_INIT:
                    case NativeMethods.OSB_EVENT_STDOUT:
                    case NativeMethods.OSB_EVENT_STDERR:
                    case NativeMethods.OSB_EVENT_STATUS:
                        break;
                    default:
                        ev.Json = Json.Parse(TakeString(NativeMethods.osb_event_json(e)) ?? "null");
                        break;
                }
                return ev;
            }
            finally
            {
                NativeMethods.osb_event_free(e);
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
