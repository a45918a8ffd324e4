using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    /// <summary>One stdout/stderr message (a line without its newline; a blank line is "\n").</summary>
    public class OutputMessage
    {
        public string Text { get; set; }
        public long Timestamp { get; set; }
        public bool IsError { get; set; }
    }

    public class ExecutionResult
    {
        public string Text { get; set; }
        public long Timestamp { get; set; }
        /// <summary>The raw mime map of the result event.</summary>
        public IReadOnlyDictionary<string, object> Raw { get; set; }
    }

    public class ExecutionError
    {
        public string Name { get; set; }
        public string Value { get; set; }
        public long Timestamp { get; set; }
        public IReadOnlyList<string> Traceback { get; set; }
    }

    public class ExecutionComplete
    {
        public long Timestamp { get; set; }
        public long ExecutionTimeMs { get; set; }
    }

    public class ExecutionInit
    {
        public string Id { get; set; }
        public long Timestamp { get; set; }
    }

    public class ExecutionLogs
    {
        private readonly List<OutputMessage> _stdout = new List<OutputMessage>();
        private readonly List<OutputMessage> _stderr = new List<OutputMessage>();
        public List<OutputMessage> Stdout { get { return _stdout; } }
        public List<OutputMessage> Stderr { get { return _stderr; } }
    }

    /// <summary>The folded outcome of a command, session run or code run.</summary>
    public class Execution
    {
        private readonly ExecutionLogs _logs = new ExecutionLogs();
        private readonly List<ExecutionResult> _results = new List<ExecutionResult>();

        public string Id { get; set; }
        public int? ExecutionCount { get; set; }
        public ExecutionLogs Logs { get { return _logs; } }
        public List<ExecutionResult> Results { get { return _results; } }
        public ExecutionError Error { get; set; }
        public ExecutionComplete Complete { get; set; }
        /// <summary>Foreground commands and session runs: 0 on complete, int(Error.Value) on error; else null.</summary>
        public int? ExitCode { get; set; }

        internal static Execution FromJson(object j)
        {
            var e = new Execution
            {
                Id = Json.Str(j, "id"),
                ExecutionCount = (int?)Json.Long(j, "execution_count"),
            };
            var ec = Json.Long(j, "exit_code");
            if (ec.HasValue) e.ExitCode = (int)ec.Value;
            var logs = Json.Get(j, "logs");
            if (logs != null)
            {
                AddMessages(e.Logs.Stdout, Json.Arr(Json.Get(logs, "stdout")), false);
                AddMessages(e.Logs.Stderr, Json.Arr(Json.Get(logs, "stderr")), true);
            }
            else
            {
                // The op layer's dialect: lines, with parallel timestamps.
                AddLines(e.Logs.Stdout, Json.Arr(Json.Get(j, "stdout")), Json.Arr(Json.Get(j, "stdout_timestamps")), false);
                AddLines(e.Logs.Stderr, Json.Arr(Json.Get(j, "stderr")), Json.Arr(Json.Get(j, "stderr_timestamps")), true);
            }
            var results = Json.Arr(Json.Get(j, "result")) ?? Json.Arr(Json.Get(j, "results"));
            if (results != null)
                foreach (var r in results) e.Results.Add(EventFolder.ResultFromJson(r));
            var err = Json.Get(j, "error");
            if (err != null) e.Error = EventFolder.ErrorFromJson(err);
            var c = Json.Get(j, "complete");
            if (c != null)
                e.Complete = new ExecutionComplete { Timestamp = Json.Long(c, "timestamp") ?? 0, ExecutionTimeMs = Json.Long(c, "execution_time_ms") ?? 0 };
            return e;
        }

        private static void AddLines(List<OutputMessage> into, List<object> lines, List<object> times, bool isError)
        {
            if (lines == null) return;
            for (var i = 0; i < lines.Count; i++)
            {
                var ts = times != null && i < times.Count ? Json.AsLong(times[i]) : null;
                into.Add(new OutputMessage { Text = lines[i] as string, Timestamp = ts ?? 0, IsError = isError });
            }
        }

        private static void AddMessages(List<OutputMessage> into, List<object> src, bool isError)
        {
            if (src == null) return;
            foreach (var m in src)
                into.Add(new OutputMessage { Text = Json.Str(m, "text"), Timestamp = Json.Long(m, "timestamp") ?? 0, IsError = Json.Bool(m, "is_error") ?? isError });
        }
    }

    /// <summary>Callbacks invoked, in event order, while an execution streams. Each handler is awaited before the next event is read.</summary>
    public class ExecutionHandlers
    {
        /// <summary>Every raw event (a <see cref="ServerStreamEvent"/>), before the typed handler.</summary>
        public Func<object, Task> OnEvent { get; set; }
        public Func<OutputMessage, Task> OnStdout { get; set; }
        public Func<OutputMessage, Task> OnStderr { get; set; }
        public Func<ExecutionResult, Task> OnResult { get; set; }
        public Func<ExecutionComplete, Task> OnExecutionComplete { get; set; }
        public Func<ExecutionError, Task> OnError { get; set; }
        public Func<ExecutionInit, Task> OnInit { get; set; }
        /// <summary>Do not keep stdout/stderr/results in the returned Execution (constant memory for huge outputs).</summary>
        public bool SkipAccumulation { get; set; }
    }

    /// <summary>A raw event of an execution stream (RunStreamAsync).</summary>
    public class ServerStreamEvent
    {
        public string Type { get; set; }
        public long? Timestamp { get; set; }
        public string Text { get; set; }
        public Dictionary<string, object> Results { get; set; }
        public Dictionary<string, object> Error { get; set; }
        public int? ExecutionCount { get; set; }
        public long? ExecutionTime { get; set; }
    }

    public static class ServerStreamEventTypes
    {
        public const string Init = "init";
        public const string Stdout = "stdout";
        public const string Stderr = "stderr";
        public const string Result = "result";
        public const string ExecutionCount = "execution_count";
        public const string ExecutionComplete = "execution_complete";
        public const string Error = "error";
        public const string Status = "status";
        public const string Ping = "ping";
    }
}
