using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Core;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox.Internal
{
    /// <summary>Keyed creation and the command inventory, over the op layer (execution.*, commands.list).</summary>
    internal sealed partial class CommandsService : IExecutionOperations, IExecdCommandInventory
    {
        public async Task<ExecutionInstance> GetExecutionInstanceAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return ExecutionInstance.FromJson(await _core.OpAsync("execution.get_instance", Args.Of(), cancellationToken).ConfigureAwait(false));
        }

        public async Task<ExecutionOperation> GetExecutionOperationAsync(string kind, string operationId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(kind, "kind");
            Args.Require(operationId, "operationId");
            return ExecutionOperation.FromJson(await _core.OpAsync("execution.get_operation", Args.Of("kind", kind, "operation_id", operationId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<ExecutionOperation> CreateCommandOperationAsync(string operationId, string command, RunCommandOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (string.IsNullOrWhiteSpace(operationId)) throw new InvalidArgumentException("operationId is required");
            var args = RunArgs(command, options);
            args["operation_id"] = operationId;
            return ExecutionOperation.FromJson(await _core.OpAsync("execution.create_command", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<ExecutionOperation> CreatePtyOperationAsync(string operationId, string cwd = null, string command = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (string.IsNullOrWhiteSpace(operationId)) throw new InvalidArgumentException("operationId is required");
            var args = Args.Of("operation_id", operationId, "cwd", cwd, "command", command);
            return ExecutionOperation.FromJson(await _core.OpAsync("execution.create_pty", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<ListCommandsPage> ListCommandsAsync(bool? running = null, int limit = 50, string cursor = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (limit < 1 || limit > 100) throw new InvalidArgumentException("limit must be between 1 and 100");
            var args = Args.Of("running", running, "limit", (long)limit, "cursor", string.IsNullOrWhiteSpace(cursor) ? null : cursor);
            return ListCommandsPage.FromJson(await _core.OpAsync("commands.list", args, cancellationToken).ConfigureAwait(false));
        }
    }
}
