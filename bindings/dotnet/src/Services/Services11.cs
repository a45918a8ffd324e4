// (1.1) Service interfaces of the newest official C# sources: the credential vault,
// isolated sessions and identity-scoped files.

using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Models;

namespace OpenSandbox.Services
{
    /// <summary>The sandbox-scoped credential vault (on the egress endpoint; needs CredentialProxy.Enabled at create).</summary>
    public interface ICredentialVault
    {
        Task<CredentialVaultState> CreateAsync(IReadOnlyList<Credential> credentials, IReadOnlyList<CredentialBinding> bindings, CancellationToken cancellationToken = default(CancellationToken));
        Task<CredentialVaultState> GetAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<CredentialVaultState> PatchAsync(CredentialVaultPatchRequest request, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<CredentialMetadata>> ListCredentialsAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<CredentialMetadata> GetCredentialAsync(string name, CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<CredentialBindingMetadata>> ListBindingsAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<CredentialBindingMetadata> GetBindingAsync(string name, CancellationToken cancellationToken = default(CancellationToken));
    }

    /// <summary>File operations that can act as an explicit Linux user.</summary>
    public interface IIdentitySandboxFiles : ISandboxFiles
    {
        /// <summary>The file API performed as uid:gid (/v1/filesystem/{uid}/{gid}); 4294967295 is refused.</summary>
        ISandboxFiles WithIdentity(uint uid, uint gid);
    }

    /// <summary>One isolated session (a nested sandbox with its own namespaces, overlays and uid).</summary>
    public interface IIsolationSession
    {
        string SessionId { get; }
        IsolatedSessionInfo Info { get; }
        /// <summary>The file API inside the session's mounts.</summary>
        ISandboxFiles Files { get; }

        /// <summary>Runs <paramref name="code"/> in the session's shell (state such as cwd and variables is kept between runs).</summary>
        Task<Execution> RunAsync(string code, IsolatedRunOpts opts = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken));
        Task<IsolatedSessionState> GetAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteAsync(CancellationToken cancellationToken = default(CancellationToken));

        /// <summary>Extension (Python/Go 1.1): starts a background run and returns its id.</summary>
        Task<IsolatedBackgroundRun> RunBackgroundAsync(string code, IsolatedRunOpts opts = null, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Extension: status of a background run.</summary>
        Task<IsolatedRunStatus> GetRunStatusAsync(string runId, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Extension: output of a background run from <paramref name="cursor"/>; the result's Cursor continues.</summary>
        Task<IsolatedRunLogs> GetRunLogsAsync(string runId, long cursor = 0, CancellationToken cancellationToken = default(CancellationToken));
    }

    public interface IIsolatedSessions
    {
        Task<IIsolationSession> CreateAsync(CreateIsolatedSessionRequest request, CancellationToken cancellationToken = default(CancellationToken));
        Task<IsolatedCapabilities> CapabilitiesAsync(CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<IsolatedSessionSummary>> ListAsync(CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Extension (Go's IsolationAttach): binds to an existing session by id (404 when it is gone).</summary>
        Task<IIsolationSession> AttachAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken));
    }
}
