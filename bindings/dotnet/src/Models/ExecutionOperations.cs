using System;
using System.Collections.Generic;
using System.Globalization;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    /// <summary>Recovery scope for one execd lifetime (GET /execution/instance).</summary>
    public sealed class ExecutionInstance
    {
        public string InstanceId { get; set; }
        /// <summary>The server's Unix time (seconds) when it answered.</summary>
        public long IssuedAt { get; set; }
        public long RetentionSeconds { get; set; }
        public int Capacity { get; set; }

        /// <summary>Generate once and persist before creation. Never refresh during recovery.</summary>
        public string NewOperationId()
        {
            return InstanceId + "." + IssuedAt.ToString(CultureInfo.InvariantCulture) + "." + Guid.NewGuid().ToString("N");
        }

        internal static ExecutionInstance FromJson(object j)
        {
            return new ExecutionInstance
            {
                InstanceId = Json.Str(j, "instance_id"),
                IssuedAt = Json.Long(j, "issued_at") ?? 0,
                RetentionSeconds = Json.Long(j, "retention_seconds") ?? 0,
                Capacity = (int)(Json.Long(j, "capacity") ?? 0),
            };
        }
    }

    /// <summary>Creation acknowledgement only (State "creating", "created" or "failed"); Created does not mean script success.</summary>
    public sealed class ExecutionOperation
    {
        /// <summary>The command id (status, logs, interrupt) or PTY session id.</summary>
        public string Id { get; set; }
        /// <summary>"command" or "pty".</summary>
        public string Kind { get; set; }
        public string State { get; set; }
        public DateTimeOffset ExpiresAt { get; set; }

        internal static ExecutionOperation FromJson(object j)
        {
            return new ExecutionOperation
            {
                Id = Json.Str(j, "id"),
                Kind = Json.Str(j, "kind"),
                State = Json.Str(j, "state"),
                ExpiresAt = Offset(Json.Time(j, "expires_at")) ?? default(DateTimeOffset),
            };
        }

        internal static DateTimeOffset? Offset(DateTime? t)
        {
            if (!t.HasValue) return null;
            return new DateTimeOffset(DateTime.SpecifyKind(t.Value, DateTimeKind.Utc));
        }
    }

    /// <summary>A command inventory summary.</summary>
    public abstract class CommandSummary
    {
        /// <summary>The command identity, equal to the command status id.</summary>
        public string Session { get; set; }
        /// <summary>Whether the command is still running.</summary>
        public abstract bool Running { get; }
        /// <summary>Whether the command runs in the background.</summary>
        public bool Background { get; set; }
        /// <summary>When the command started.</summary>
        public DateTimeOffset StartedAt { get; set; }

        internal static CommandSummary FromJson(object j)
        {
            var started = ExecutionOperation.Offset(Json.Time(j, "started_at")) ?? default(DateTimeOffset);
            if (Json.Bool(j, "running") == true)
            {
                return new RunningCommandSummary { Session = Json.Str(j, "session"), Background = Json.Bool(j, "background") == true, StartedAt = started };
            }
            var ec = Json.Long(j, "exit_code");
            return new TerminalCommandSummary
            {
                Session = Json.Str(j, "session"),
                Background = Json.Bool(j, "background") == true,
                StartedAt = started,
                FinishedAt = ExecutionOperation.Offset(Json.Time(j, "finished_at")) ?? default(DateTimeOffset),
                ExitCode = ec.HasValue ? (int?)(int)ec.Value : null,
                Error = Json.Str(j, "error"),
            };
        }
    }

    /// <summary>A command inventory summary for a command that is still running.</summary>
    public sealed class RunningCommandSummary : CommandSummary
    {
        public override bool Running { get { return true; } }
    }

    /// <summary>A command inventory summary for a command that has finished.</summary>
    public sealed class TerminalCommandSummary : CommandSummary
    {
        public override bool Running { get { return false; } }
        public DateTimeOffset FinishedAt { get; set; }
        /// <summary>The exit code, which may be null.</summary>
        public int? ExitCode { get; set; }
        /// <summary>The optional terminal error message.</summary>
        public string Error { get; set; }
    }

    /// <summary>Pagination metadata for a command inventory page.</summary>
    public sealed class CommandPagination
    {
        /// <summary>The page limit used by the server.</summary>
        public int Limit { get; set; }
        /// <summary>The opaque cursor for the next page, or null for the final page.</summary>
        public string NextCursor { get; set; }
    }

    /// <summary>A weakly consistent page of command inventory entries.</summary>
    public sealed class ListCommandsPage
    {
        public IReadOnlyList<CommandSummary> Commands { get; set; }
        public CommandPagination Pagination { get; set; }

        internal static ListCommandsPage FromJson(object j)
        {
            var commands = new List<CommandSummary>();
            foreach (var c in Json.Arr(Json.Get(j, "commands")) ?? new List<object>()) commands.Add(CommandSummary.FromJson(c));
            var p = Json.Get(j, "pagination");
            return new ListCommandsPage
            {
                Commands = commands,
                Pagination = new CommandPagination { Limit = (int)(Json.Long(p, "limit") ?? 0), NextCursor = Json.Str(p, "next_cursor") },
            };
        }
    }
}
