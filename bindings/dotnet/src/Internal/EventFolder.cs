// Folds execution events into an Execution and calls the user's handlers, with the
// official rules (reference-sdk-api.md §0): exit code 0 on complete, int(error.value) on
// error, for foreground commands and session runs only; code runs never set one.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox.Internal
{
    internal sealed class EventFolder
    {
        private readonly Execution _execution = new Execution();
        private readonly ExecutionHandlers _handlers;
        private readonly bool _inferExitCode;
        private readonly bool _keep;

        public EventFolder(ExecutionHandlers handlers, bool inferExitCode)
        {
            _handlers = handlers;
            _inferExitCode = inferExitCode;
            _keep = handlers == null || !handlers.SkipAccumulation;
        }

        public Execution Execution { get { return _execution; } }

        public async Task ApplyAsync(NativeEvent ev)
        {
            var h = _handlers;
            if (h != null && h.OnEvent != null) await h.OnEvent(ToServerEvent(ev)).ConfigureAwait(false);
            switch (ev.Type)
            {
                case NativeMethods.OSB_EVENT_INIT:
                    _execution.Id = ev.Text;
                    if (h != null && h.OnInit != null)
                        await h.OnInit(new ExecutionInit { Id = ev.Text, Timestamp = ev.Timestamp }).ConfigureAwait(false);
                    break;
                case NativeMethods.OSB_EVENT_STDOUT:
                case NativeMethods.OSB_EVENT_STDERR:
                {
                    var isErr = ev.Type == NativeMethods.OSB_EVENT_STDERR;
                    var m = new OutputMessage { Text = ev.Text, Timestamp = ev.Timestamp, IsError = isErr };
                    if (_keep) (isErr ? _execution.Logs.Stderr : _execution.Logs.Stdout).Add(m);
                    if (h != null)
                    {
                        var f = isErr ? h.OnStderr : h.OnStdout;
                        if (f != null) await f(m).ConfigureAwait(false);
                    }
                    break;
                }
                case NativeMethods.OSB_EVENT_RESULT:
                {
                    var r = ResultFromJson(ev.Json);
                    if (_keep) _execution.Results.Add(r);
                    if (h != null && h.OnResult != null) await h.OnResult(r).ConfigureAwait(false);
                    break;
                }
                case NativeMethods.OSB_EVENT_EXECUTION_COUNT:
                {
                    var c = Json.Long(ev.Json, "count");
                    if (c.HasValue) _execution.ExecutionCount = (int)c.Value;
                    break;
                }
                case NativeMethods.OSB_EVENT_ERROR:
                {
                    var e = ErrorFromJson(ev.Json);
                    _execution.Error = e;
                    if (_inferExitCode)
                    {
                        int code;
                        _execution.ExitCode = int.TryParse(e.Value, NumberStyles.Integer, CultureInfo.InvariantCulture, out code) ? (int?)code : null;
                    }
                    if (h != null && h.OnError != null) await h.OnError(e).ConfigureAwait(false);
                    break;
                }
                case NativeMethods.OSB_EVENT_EXECUTION_COMPLETE:
                {
                    var c = new ExecutionComplete
                    {
                        Timestamp = Json.Long(ev.Json, "timestamp") ?? ev.Timestamp,
                        ExecutionTimeMs = Json.Long(ev.Json, "execution_time_ms") ?? 0,
                    };
                    _execution.Complete = c;
                    if (_inferExitCode && _execution.Error == null) _execution.ExitCode = 0;
                    if (h != null && h.OnExecutionComplete != null) await h.OnExecutionComplete(c).ConfigureAwait(false);
                    break;
                }
            }
        }

        /// <summary>
        /// Drains a stream into this folder and frees it (which interrupts a still running
        /// execution on cancellation or handler failure). The events are pulled with the
        /// blocking next on a dedicated thread: a handler that completes synchronously costs no
        /// task switch, which keeps a 100 MB stdout fast; an awaiting handler is awaited.
        /// </summary>
        public Task<Execution> RunAsync(StreamHandle stream, CancellationToken ct)
        {
            return Task.Factory.StartNew(() => PumpAsync(stream, ct), CancellationToken.None,
                TaskCreationOptions.LongRunning | TaskCreationOptions.DenyChildAttach, TaskScheduler.Default).Unwrap();
        }

        private async Task<Execution> PumpAsync(StreamHandle stream, CancellationToken ct)
        {
            using (stream)
            using (var cancel = CancelHandle.New())
            using (ct.Register(cancel.Cancel))
            {
                while (true)
                {
                    ct.ThrowIfCancellationRequested();
                    var ev = Bridge.StreamNextBlocking(stream, cancel, ct);
                    if (ev == null) return _execution;
                    var t = ApplyAsync(ev);
                    if (t.IsCompleted) t.GetAwaiter().GetResult();
                    else await t.ConfigureAwait(false);
                }
            }
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

        internal static ServerStreamEvent ToServerEvent(NativeEvent ev)
        {
            var s = new ServerStreamEvent { Timestamp = ev.Timestamp, Text = ev.Text };
            switch (ev.Type)
            {
                case NativeMethods.OSB_EVENT_INIT: s.Type = ServerStreamEventTypes.Init; break;
                case NativeMethods.OSB_EVENT_STDOUT: s.Type = ServerStreamEventTypes.Stdout; break;
                case NativeMethods.OSB_EVENT_STDERR: s.Type = ServerStreamEventTypes.Stderr; break;
                case NativeMethods.OSB_EVENT_STATUS: s.Type = ServerStreamEventTypes.Status; break;
                case NativeMethods.OSB_EVENT_RESULT:
                    s.Type = ServerStreamEventTypes.Result;
                    s.Text = Json.Str(ev.Json, "text");
                    s.Results = Json.Obj(Json.Get(ev.Json, "raw"));
                    break;
                case NativeMethods.OSB_EVENT_EXECUTION_COUNT:
                    s.Type = ServerStreamEventTypes.ExecutionCount;
                    var c = Json.Long(ev.Json, "count");
                    s.ExecutionCount = c.HasValue ? (int?)(int)c.Value : null;
                    break;
                case NativeMethods.OSB_EVENT_ERROR:
                    s.Type = ServerStreamEventTypes.Error;
                    var e = ErrorFromJson(ev.Json);
                    var tb = new List<object>();
                    foreach (var t in e.Traceback) tb.Add(t);
                    s.Error = new Dictionary<string, object> { { "ename", e.Name }, { "evalue", e.Value }, { "traceback", tb } };
                    break;
                case NativeMethods.OSB_EVENT_EXECUTION_COMPLETE:
                    s.Type = ServerStreamEventTypes.ExecutionComplete;
                    s.ExecutionTime = Json.Long(ev.Json, "execution_time_ms");
                    break;
                default:
                    s.Type = Json.Str(ev.Json, "type") ?? "unknown";
                    break;
            }
            return s;
        }
    }

    /// <summary>IAsyncEnumerable over a native stream, opened lazily on the first MoveNextAsync.</summary>
    internal sealed class NativeStreamEnumerable<T> : IAsyncEnumerable<T>
    {
        private readonly Func<CancellationToken, Task<StreamHandle>> _open;
        private readonly Func<NativeEvent, T> _map;
        private readonly CancellationToken _token;

        public NativeStreamEnumerable(Func<CancellationToken, Task<StreamHandle>> open, Func<NativeEvent, T> map, CancellationToken token)
        {
            _open = open;
            _map = map;
            _token = token;
        }

        public IAsyncEnumerator<T> GetAsyncEnumerator(CancellationToken cancellationToken = default(CancellationToken))
        {
            return new Enumerator(this, cancellationToken);
        }

        private sealed class Enumerator : IAsyncEnumerator<T>
        {
            private readonly NativeStreamEnumerable<T> _owner;
            private readonly CancellationTokenSource _cts;
            private StreamHandle _stream;
            private bool _done;

            public Enumerator(NativeStreamEnumerable<T> owner, CancellationToken extra)
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
                    if (_stream == null) _stream = await _owner._open(_cts.Token).ConfigureAwait(false);
                    var ev = await Bridge.StreamNext(_stream, _cts.Token).ConfigureAwait(false);
                    if (ev == null)
                    {
                        _done = true;
                        return false;
                    }
                    Current = _owner._map(ev);
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
                if (_stream != null) _stream.Dispose();
                _cts.Dispose();
                return default(ValueTask);
            }
        }
    }
}
