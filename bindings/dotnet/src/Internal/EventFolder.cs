// Runs executions through the op layer and hands their events to the user's handlers; the
// outcome (exit code and the rest, reference-sdk-api.md §0) is the core's, read from the
// run's last item. Also the raw-event enumerable of RunStreamAsync.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Core;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox.Internal
{
    /// <summary>
    /// Runs an execution through the op layer (bindings/common): a start op
    /// (commands.start, commands.start_in_session, code.start) returns a run handle, whose
    /// events are pulled in batches with execution.next_batch and handed to the user's
    /// handlers in order; the last item carries the outcome the core folded (exit code,
    /// execution count, error, completion, and the kept output), so nothing is derived here.
    /// Cancelling the token or a failing handler releases the run, which interrupts the
    /// command on the server (the one rule of every language).
    /// </summary>
    internal static class EventFolder
    {
        public static async Task<Execution> RunAsync(SandboxCore core, string startOp, Dictionary<string, object> args, ExecutionHandlers handlers, CancellationToken ct)
        {
            args["sandbox"] = core.OpHandle;
            args["handlers"] = handlers != null;
            if (handlers == null)
            {
                // Nothing wants events: the run op (commands.run, commands.run_in_session,
                // code.run, isolation.run) runs it to its end in one native call, instead of a
                // start, a pulling thread of its own and a pull per batch. The same Execution
                // (ServerTests: OneCallRunEqualsTheStreamedRun); cancelling the token drops
                // the op, which interrupts the command as a released run does.
                var ran = await Bridge.SessionCall(RunOp(startOp), Json.Write(args), ct).ConfigureAwait(false);
                return Execution.FromJson(Json.Parse(ran));
            }
            if (handlers != null && handlers.SkipAccumulation) args["skip_accumulation"] = true;
            var started = Json.Parse(await Bridge.SessionCall(startOp, Json.Write(args), ct).ConfigureAwait(false));
            var handle = Json.Long(started, "handle") ?? 0;
            try
            {
                // The batches are pulled with the blocking call on a dedicated thread: a
                // handler that completes synchronously costs no task switch (a 100 MB stdout
                // stays fast); an awaiting handler is awaited.
                return await Task.Factory.StartNew(() => PumpAsync(handle, handlers, ct), CancellationToken.None,
                    TaskCreationOptions.LongRunning | TaskCreationOptions.DenyChildAttach, TaskScheduler.Default).Unwrap().ConfigureAwait(false);
            }
            finally
            {
                Bridge.SessionRelease(handle);
            }
        }

        /// <summary>The op that runs what <paramref name="startOp"/> starts, to its end.</summary>
        internal static string RunOp(string startOp)
        {
            switch (startOp)
            {
                case "commands.start": return "commands.run";
                case "commands.start_in_session": return "commands.run_in_session";
                case "code.start": return "code.run";
                case "isolation.start": return "isolation.run";
                default: throw new ArgumentException("no run op for " + startOp, "startOp");
            }
        }

        /// <summary>Most items one pull takes (the native side queues batches of up to 4096).</summary>
        private const int PullItems = 4096;

        private static async Task<Execution> PumpAsync(long handle, ExecutionHandlers h, CancellationToken ct)
        {
            using (var cancel = CancelHandle.New())
            using (ct.Register(cancel.Cancel))
            {
                while (true)
                {
                    ct.ThrowIfCancellationRequested();
                    // The binary layout of bindings/ffi API.md §4: u8 done, then per item u8 kind
                    // (0 JSON object, 1 stdout, 2 stderr), i64 timestamp, u32 length (little-endian)
                    // and that many UTF-8 bytes. Output lines become strings straight from it.
                    var b = Bridge.NextItemsBlocking(handle, PullItems, cancel, ct);
                    var done = b.Length > 0 && b[0] != 0;
                    var at = 1;
                    while (at + 13 <= b.Length)
                    {
                        var kind = b[at];
                        var ts = ReadInt64(b, at + 1);
                        var len = (int)ReadUInt32(b, at + 9);
                        at += 13;
                        var text = Utf8.GetString(b, at, len);
                        at += len;
                        if (kind == 0)
                        {
                            var ev = Json.Parse(text);
                            if (Json.Str(ev, "type") == "end") return Outcome(ev, ct);
                            if (h == null) continue;
                            var t = DeliverAsync(ev, h);
                            if (t.IsCompleted) t.GetAwaiter().GetResult();
                            else await t.ConfigureAwait(false);
                            continue;
                        }
                        if (h == null) continue;
                        var isErr = kind == 2;
                        Task r;
                        if (h.OnEvent != null)
                        {
                            // The raw-event hook first, then OnStdout/OnStderr (DeliverAsync's order).
                            r = DeliverAsync(new Dictionary<string, object>
                            {
                                { "type", isErr ? ServerStreamEventTypes.Stderr : ServerStreamEventTypes.Stdout },
                                { "text", text },
                                { "timestamp", ts },
                            }, h);
                        }
                        else
                        {
                            var f = isErr ? h.OnStderr : h.OnStdout;
                            if (f == null) continue;
                            r = f(new OutputMessage { Text = text, Timestamp = ts, IsError = isErr });
                        }
                        if (r == null) continue;
                        if (r.IsCompleted) r.GetAwaiter().GetResult();
                        else await r.ConfigureAwait(false);
                    }
                    if (done)
                        throw new SandboxInternalException("the run ended without its outcome");
                }
            }
        }

        private static readonly System.Text.UTF8Encoding Utf8 = new System.Text.UTF8Encoding(false, false);

        private static long ReadInt64(byte[] b, int at)
        {
            return (long)((ulong)ReadUInt32(b, at) | ((ulong)ReadUInt32(b, at + 4) << 32));
        }

        private static uint ReadUInt32(byte[] b, int at)
        {
            return (uint)(b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24));
        }

        /// <summary>The Execution of an end item, or its error as the official exception.</summary>
        internal static Execution Outcome(object end, CancellationToken ct)
        {
            if (Json.Bool(end, "ok") == true) return Execution.FromJson(Json.Get(end, "execution"));
            var e = Json.Get(end, "error");
            var kind = Json.Str(e, "kind") ?? "internal";
            var message = Json.Str(e, "message") ?? kind;
            if (kind == "cancelled" && ct.IsCancellationRequested) throw new OperationCanceledException(message, ct);
            var status = Json.Long(e, "status");
            throw ErrorMapper.ToException(kind, status.HasValue ? (int?)(int)status.Value : null, Json.Str(e, "code"), message, Json.Str(e, "request_id"), null);
        }

        /// <summary>Calls the handlers of one event of a batch, in order (OnEvent first).</summary>
        internal static async Task DeliverAsync(object ev, ExecutionHandlers h)
        {
            var type = Json.Str(ev, "type");
            var ts = Json.Long(ev, "timestamp") ?? 0;
            if (h.OnEvent != null) await h.OnEvent(ToServerEvent(type, ev)).ConfigureAwait(false);
            switch (type)
            {
                case ServerStreamEventTypes.Init:
                    if (h.OnInit != null) await h.OnInit(new ExecutionInit { Id = Json.Str(ev, "id"), Timestamp = ts }).ConfigureAwait(false);
                    break;
                case ServerStreamEventTypes.Stdout:
                case ServerStreamEventTypes.Stderr:
                {
                    var isErr = type == ServerStreamEventTypes.Stderr;
                    var f = isErr ? h.OnStderr : h.OnStdout;
                    if (f != null) await f(new OutputMessage { Text = Json.Str(ev, "text"), Timestamp = ts, IsError = isErr }).ConfigureAwait(false);
                    break;
                }
                case ServerStreamEventTypes.Result:
                    if (h.OnResult != null) await h.OnResult(ResultFromJson(ev)).ConfigureAwait(false);
                    break;
                case ServerStreamEventTypes.Error:
                    if (h.OnError != null) await h.OnError(ErrorFromJson(ev)).ConfigureAwait(false);
                    break;
                case ServerStreamEventTypes.ExecutionComplete:
                    if (h.OnExecutionComplete != null)
                        await h.OnExecutionComplete(new ExecutionComplete { Timestamp = ts, ExecutionTimeMs = Json.Long(ev, "execution_time_ms") ?? 0 }).ConfigureAwait(false);
                    break;
            }
        }

        /// <summary>A batch event as the raw ServerStreamEvent of OnEvent.</summary>
        internal static ServerStreamEvent ToServerEvent(string type, object ev)
        {
            var s = new ServerStreamEvent { Type = type ?? "unknown", Timestamp = Json.Long(ev, "timestamp"), Text = Json.Str(ev, "text") };
            switch (type)
            {
                case ServerStreamEventTypes.Init: s.Text = Json.Str(ev, "id"); break;
                case ServerStreamEventTypes.Result: s.Results = Json.Obj(Json.Get(ev, "raw")); break;
                case ServerStreamEventTypes.Error:
                    var e = ErrorFromJson(ev);
                    var tb = new List<object>();
                    foreach (var t in e.Traceback) tb.Add(t);
                    s.Error = new Dictionary<string, object> { { "ename", e.Name }, { "evalue", e.Value }, { "traceback", tb } };
                    break;
                case ServerStreamEventTypes.ExecutionComplete: s.ExecutionTime = Json.Long(ev, "execution_time_ms"); break;
                case ServerStreamEventTypes.ExecutionCount:
                    var c = Json.Long(ev, "count");
                    s.ExecutionCount = c.HasValue ? (int?)(int)c.Value : null;
                    break;
            }
            return s;
        }

        internal static ExecutionResult ResultFromJson(object j)
        {
            var raw = Json.Obj(Json.Get(j, "raw")) ?? Json.Obj(Json.Get(j, "results"));
            var text = Json.Str(j, "text");
            if (text == null && raw != null) text = Json.Str(raw, "text/plain");
            return new ExecutionResult { Text = text, Timestamp = Json.Long(j, "timestamp") ?? 0, Raw = raw };
        }

        internal static ExecutionError ErrorFromJson(object j)
        {
            return new ExecutionError
            {
                Name = Json.Str(j, "name") ?? Json.Str(j, "ename"),
                Value = Json.Str(j, "value") ?? Json.Str(j, "evalue"),
                Timestamp = Json.Long(j, "timestamp") ?? 0,
                Traceback = Json.StrList(j, "traceback") ?? new List<string>(),
            };
        }
    }

    /// <summary>
    /// IAsyncEnumerable over a pulled run of the op layer (commands.start / code.start with
    /// handlers, metrics.start): started lazily on the first MoveNextAsync, its items pulled
    /// with execution.next_batch, ended by its end item (an error end item is thrown).
    /// Disposing it early releases the run, which interrupts the command on the server.
    /// </summary>
    internal sealed class BatchEnumerable<T> : IAsyncEnumerable<T>
    {
        private readonly SandboxCore _core;
        private readonly string _startOp;
        private readonly Dictionary<string, object> _args;
        private readonly Func<string, object, T> _map;
        private readonly CancellationToken _token;

        public BatchEnumerable(SandboxCore core, string startOp, Dictionary<string, object> args, Func<string, object, T> map, CancellationToken token)
        {
            _core = core;
            _startOp = startOp;
            _args = args;
            _map = map;
            _token = token;
        }

        public IAsyncEnumerator<T> GetAsyncEnumerator(CancellationToken cancellationToken = default(CancellationToken))
        {
            return new Enumerator(this, cancellationToken);
        }

        private sealed class Enumerator : IAsyncEnumerator<T>
        {
            private readonly BatchEnumerable<T> _owner;
            private readonly CancellationTokenSource _cts;
            private readonly Queue<object> _pending = new Queue<object>();
            private SessionEntryHandle _run;
            private bool _done;

            public Enumerator(BatchEnumerable<T> owner, CancellationToken extra)
            {
                _owner = owner;
                _cts = CancellationTokenSource.CreateLinkedTokenSource(owner._token, extra);
            }

            public T Current { get; private set; }

            public async ValueTask<bool> MoveNextAsync()
            {
                if (_done) return false;
                try
                {
                    var ct = _cts.Token;
                    if (_run == null)
                    {
                        var args = new Dictionary<string, object>(_owner._args);
                        args["sandbox"] = _owner._core.OpHandle;
                        // Execution starts report their events only when asked (metrics.start and
                        // commands.follow_logs always do).
                        if (_owner._startOp != "metrics.start" && _owner._startOp != "commands.follow_logs") args["handlers"] = true;
                        var started = Json.Parse(await Bridge.SessionCall(_owner._startOp, Json.Write(args), ct).ConfigureAwait(false));
                        _run = SessionEntryHandle.Of(Json.Long(started, "handle") ?? 0);
                    }
                    while (_pending.Count == 0)
                    {
                        var next = Json.Write(new Dictionary<string, object> { { "handle", _run.Id } });
                        var batch = Json.Parse(await Bridge.SessionCall("execution.next_batch", next, ct).ConfigureAwait(false));
                        foreach (var ev in Json.Arr(Json.Get(batch, "events")) ?? new List<object>()) _pending.Enqueue(ev);
                        if (_pending.Count == 0 && Json.Bool(batch, "done") == true)
                            throw new SandboxInternalException("the run ended without its outcome");
                    }
                    var item = _pending.Dequeue();
                    var type = Json.Str(item, "type");
                    if (type == "end")
                    {
                        _done = true;
                        if (Json.Bool(item, "ok") != true) EventFolder.Outcome(item, ct);
                        return false;
                    }
                    Current = _owner._map(type, item);
                    return true;
                }
                catch
                {
                    _done = true;
                    throw;
                }
            }

            public ValueTask DisposeAsync()
            {
                _done = true;
                if (_run != null) _run.Dispose();
                _cts.Dispose();
                return default(ValueTask);
            }
        }
    }
}
