using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Models;

namespace OpenSandbox.Services
{
    /// <summary>Commands and bash sessions inside a sandbox.</summary>
    public interface IExecdCommands
    {
        /// <summary>(1.1) Runs an executable with literal arguments (no shell) and yields its raw events.</summary>
        IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(IReadOnlyList<string> argv, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>(1.1) Runs an executable with literal arguments (no shell) and folds its events.</summary>
        Task<Execution> RunAsync(IReadOnlyList<string> argv, RunCommandOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Runs a command and yields its raw events as they arrive.</summary>
        IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(string command, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Runs a command to completion (or, with Background, until it started) and folds its events.</summary>
        Task<Execution> RunAsync(string command, RunCommandOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Interrupts a running command by its execution id.</summary>
        Task InterruptAsync(string executionId, CancellationToken cancellationToken = default(CancellationToken));

        Task<CommandStatus> GetCommandStatusAsync(string executionId, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>(1.1) Persists <paramref name="key"/>=<paramref name="value"/> for later commands and new sessions: appends it to the
        /// sandbox env file (the file named by the sandbox's <c>EXECD_ENVS</c>) with a shell command. Keys must match
        /// <c>[A-Za-z_][A-Za-z0-9_]*</c> and the value may not hold NUL (<see cref="OpenSandbox.Core.InvalidArgumentException"/>); a value with a single
        /// quote uses the file's double-quoted form, in which <c>$NAME</c> may be expanded when the file is read. The last write of a
        /// key wins. Throws <see cref="OpenSandbox.Core.SandboxException"/> if the sandbox fails to persist it.</summary>
        Task SetEnvAsync(string key, string value, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Output of a background command from <paramref name="cursor"/> on; the result's Cursor continues it.</summary>
        Task<CommandLogs> GetBackgroundCommandLogsAsync(string executionId, long? cursor = null, CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Creates a bash session; returns its id.</summary>
        Task<string> CreateSessionAsync(CreateSessionOptions options = null, CancellationToken cancellationToken = default(CancellationToken));

        Task<Execution> RunInSessionAsync(string sessionId, string command, RunInSessionOptions options = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken));

        Task DeleteSessionAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken));
    }

    /// <summary>Files and directories inside a sandbox.</summary>
    public interface ISandboxFiles
    {
        Task<IReadOnlyDictionary<string, SandboxFileInfo>> GetFileInfoAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<SandboxFileInfo>> SearchAsync(SearchEntry entry, CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<SandboxFileInfo>> ListDirectoryAsync(string path, int? depth = null, CancellationToken cancellationToken = default(CancellationToken));
        Task CreateDirectoriesAsync(IEnumerable<CreateDirectoryEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteDirectoriesAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken));
        Task WriteFilesAsync(IEnumerable<WriteEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
        Task<string> ReadFileAsync(string path, ReadFileOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        Task<byte[]> ReadBytesAsync(string path, ReadBytesOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        IAsyncEnumerable<byte[]> ReadBytesStreamAsync(string path, ReadBytesOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteFilesAsync(IEnumerable<string> paths, CancellationToken cancellationToken = default(CancellationToken));
        Task MoveFilesAsync(IEnumerable<MoveEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
        Task ReplaceContentsAsync(IEnumerable<ContentReplaceEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<ContentReplaceResult>> ReplaceContentsDetailedAsync(IEnumerable<ContentReplaceEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
        Task SetPermissionsAsync(IEnumerable<SetPermissionEntry> entries, CancellationToken cancellationToken = default(CancellationToken));
    }

    public interface IExecdHealth
    {
        /// <summary>True when execd answers its ping.</summary>
        Task<bool> PingAsync(CancellationToken cancellationToken = default(CancellationToken));
    }

    public interface IExecdMetrics
    {
        Task<SandboxMetrics> GetMetricsAsync(CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Live metrics (GET /metrics/watch); an extension over the official C# SDK.</summary>
        IAsyncEnumerable<SandboxMetrics> WatchMetricsAsync(CancellationToken cancellationToken = default(CancellationToken));
    }

    public interface IEgress
    {
        Task<NetworkPolicy> GetPolicyAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task PatchRulesAsync(IEnumerable<NetworkRule> rules, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteRulesAsync(IEnumerable<string> targets, CancellationToken cancellationToken = default(CancellationToken));
    }
}
