using System;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Models;

namespace OpenSandbox.Services
{
    /// <summary>Optional caller-bound creation capability (upstream execd's recoverable creation), separate from
    /// <see cref="IExecdCommands"/>. Save the operation id (from <see cref="ExecutionInstance.NewOperationId"/>) with the request
    /// BEFORE creating; after a lost answer send the same id and request again, or look the id up: execd answers the
    /// original handle and never starts a second process.</summary>
    public interface IExecutionOperations
    {
        Task<ExecutionInstance> GetExecutionInstanceAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<ExecutionOperation> GetExecutionOperationAsync(string kind, string operationId, CancellationToken cancellationToken = default(CancellationToken));
        Task<ExecutionOperation> CreateCommandOperationAsync(string operationId, string command, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        Task<ExecutionOperation> CreatePtyOperationAsync(string operationId, string cwd = null, string command = null, CancellationToken cancellationToken = default(CancellationToken));
    }

    /// <summary>Access the optional capability without changing the existing command interface.</summary>
    public static class ExecutionOperationExtensions
    {
        private static IExecutionOperations Operations(IExecdCommands commands)
        {
            var ops = commands as IExecutionOperations;
            if (ops == null) throw new NotSupportedException("Execution creation recovery is unavailable");
            return ops;
        }

        public static Task<ExecutionInstance> GetExecutionInstanceAsync(this IExecdCommands commands, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Operations(commands).GetExecutionInstanceAsync(cancellationToken);
        }

        public static Task<ExecutionOperation> GetExecutionOperationAsync(this IExecdCommands commands, string kind, string operationId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Operations(commands).GetExecutionOperationAsync(kind, operationId, cancellationToken);
        }

        public static Task<ExecutionOperation> CreateCommandOperationAsync(this IExecdCommands commands, string operationId, string command, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Operations(commands).CreateCommandOperationAsync(operationId, command, options, cancellationToken);
        }

        public static Task<ExecutionOperation> CreatePtyOperationAsync(this IExecdCommands commands, string operationId, string cwd = null, string command = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Operations(commands).CreatePtyOperationAsync(operationId, cwd, command, cancellationToken);
        }
    }

    /// <summary>Provides weakly consistent command inventory discovery for a sandbox (GET /command).</summary>
    public interface IExecdCommandInventory
    {
        /// <summary>Lists a page of running and terminal command summaries, newest first.</summary>
        /// <param name="running">Filters to running or terminal commands; omit for both.</param>
        /// <param name="limit">Maximum number of command summaries to return (1 through 100).</param>
        /// <param name="cursor">An opaque cursor from a prior page.</param>
        /// <param name="cancellationToken">Cancellation token.</param>
        /// <exception cref="OpenSandbox.Core.InvalidArgumentException">Thrown when <paramref name="limit"/> is outside 1 through 100.</exception>
        Task<ListCommandsPage> ListCommandsAsync(bool? running = null, int limit = 50, string cursor = null, CancellationToken cancellationToken = default(CancellationToken));
    }
}
