using System;
using System.Collections.Generic;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    public class RunCommandOptions
    {
        public string WorkingDirectory { get; set; }
        public bool Background { get; set; }
        /// <summary>Server-side limit of the command in seconds.</summary>
        public int? TimeoutSeconds { get; set; }
        public long? Uid { get; set; }
        public long? Gid { get; set; }
        public IReadOnlyDictionary<string, string> Envs { get; set; }
    }

    public class CreateSessionOptions
    {
        public string WorkingDirectory { get; set; }
    }

    public class RunInSessionOptions
    {
        public string WorkingDirectory { get; set; }
        public int? TimeoutSeconds { get; set; }
    }

    public class CommandStatus
    {
        public string Id { get; set; }
        public string Content { get; set; }
        public bool? Running { get; set; }
        public int? ExitCode { get; set; }
        public string Error { get; set; }
        public DateTime? StartedAt { get; set; }
        public DateTime? FinishedAt { get; set; }

        internal static CommandStatus FromJson(object j)
        {
            var ec = Json.Long(j, "exit_code");
            return new CommandStatus
            {
                Id = Json.Str(j, "id"),
                Content = Json.Str(j, "content"),
                Running = Json.Bool(j, "running"),
                ExitCode = ec.HasValue ? (int?)(int)ec.Value : null,
                Error = Json.Str(j, "error"),
                StartedAt = Json.Time(j, "started_at"),
                FinishedAt = Json.Time(j, "finished_at"),
            };
        }
    }

    public class CommandLogs
    {
        public string Content { get; set; }
        public long? Cursor { get; set; }
    }

    public class SandboxMetrics
    {
        public int CpuCount { get; set; }
        public double CpuUsedPercentage { get; set; }
        public double MemoryTotalMiB { get; set; }
        public double MemoryUsedMiB { get; set; }
        public long Timestamp { get; set; }

        internal static SandboxMetrics FromJson(object j)
        {
            return new SandboxMetrics
            {
                CpuCount = (int)(Json.Long(j, "cpu_count") ?? 0),
                CpuUsedPercentage = Json.Double(j, "cpu_used_percentage") ?? 0,
                MemoryTotalMiB = Json.Double(j, "memory_total_in_mib") ?? 0,
                MemoryUsedMiB = Json.Double(j, "memory_used_in_mib") ?? 0,
                Timestamp = Json.Long(j, "timestamp") ?? 0,
            };
        }
    }
}
