// Keyed execution creation and the command inventory (PROTOCOL.md §2.12) through the
// official C# names: IExecutionOperations (extension methods on IExecdCommands) and
// IExecdCommandInventory (Sandbox.CommandInventory).

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Threading.Tasks;
using OpenSandbox;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox.Conformance
{
    internal static partial class Program
    {
        private static readonly string[] OpsExec =
        {
            "execution.get_instance", "execution.get_operation", "execution.create_command", "execution.create_pty",
            "commands.list",
        };

        private static bool IsExecOp(string op)
        {
            return Array.IndexOf(OpsExec, op) >= 0;
        }

        private static object OpTime(DateTimeOffset t)
        {
            return t == default(DateTimeOffset) ? null : t.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", CultureInfo.InvariantCulture);
        }

        private static Dictionary<string, object> OperationJson(ExecutionOperation o)
        {
            return new Dictionary<string, object>
            {
                { "id", o.Id }, { "kind", o.Kind }, { "state", o.State }, { "expires_at", OpTime(o.ExpiresAt) },
            };
        }

        private static Dictionary<string, object> SummaryJson(CommandSummary c)
        {
            var d = new Dictionary<string, object>
            {
                { "session", c.Session }, { "running", c.Running }, { "background", c.Background },
                { "started_at", OpTime(c.StartedAt) }, { "finished_at", null }, { "exit_code", null }, { "error", null },
            };
            var t = c as TerminalCommandSummary;
            if (t != null)
            {
                d["finished_at"] = OpTime(t.FinishedAt);
                d["exit_code"] = t.ExitCode.HasValue ? (object)(long)t.ExitCode.Value : null;
                d["error"] = t.Error;
            }
            return d;
        }

        private static async Task<object> ExecOp(string op, A a)
        {
            var sb = await GetSandbox(a).ConfigureAwait(false);
            switch (op)
            {
                case "execution.get_instance":
                {
                    var i = await sb.Commands.GetExecutionInstanceAsync().ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "instance_id", i.InstanceId }, { "issued_at", i.IssuedAt },
                        { "retention_seconds", i.RetentionSeconds }, { "capacity", (long)i.Capacity },
                    };
                }
                case "execution.get_operation":
                    return OperationJson(await sb.Commands.GetExecutionOperationAsync(a.OptStr("kind"), a.OptStr("operation_id")).ConfigureAwait(false));
                case "execution.create_command":
                    return OperationJson(await sb.Commands.CreateCommandOperationAsync(a.OptStr("operation_id"), a.Str("command"), CommandOptions(a)).ConfigureAwait(false));
                case "execution.create_pty":
                    return OperationJson(await sb.Commands.CreatePtyOperationAsync(a.OptStr("operation_id"), a.OptStr("cwd"), a.OptStr("command")).ConfigureAwait(false));
                case "commands.list":
                {
                    var running = a.Has("running") && a.Raw("running") is bool ? (bool?)(bool)a.Raw("running") : null;
                    var limit = a.OptLong("limit");
                    var page = await sb.CommandInventory.ListCommandsAsync(running, limit.HasValue ? (int)Math.Min(limit.Value, int.MaxValue) : 50, a.OptStr("cursor")).ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "commands", page.Commands.Select(c => (object)SummaryJson(c)).ToList() },
                        { "pagination", new Dictionary<string, object> { { "limit", (long)page.Pagination.Limit }, { "next_cursor", page.Pagination.NextCursor } } },
                    };
                }
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }
    }
}
