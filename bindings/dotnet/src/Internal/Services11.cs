// (1.1) Implementations over the op layer: credential_vault.* and isolation.*.

using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Core;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox.Internal
{
    internal sealed class CredentialVaultService : ICredentialVault
    {
        private readonly SandboxCore _core;

        public CredentialVaultService(SandboxCore core) { _core = core; }

        public async Task<CredentialVaultState> CreateAsync(IReadOnlyList<Credential> credentials, IReadOnlyList<CredentialBinding> bindings, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (credentials == null) throw new InvalidArgumentException("credentials are required (may be empty)");
            if (bindings == null) throw new InvalidArgumentException("bindings are required (may be empty)");
            var args = Args.Of("credentials", VaultJson.CredentialList(credentials), "bindings", VaultJson.BindingList(bindings));
            return CredentialVaultState.FromJson(await _core.OpAsync("credential_vault.create", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<CredentialVaultState> GetAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVaultState.FromJson(await _core.OpAsync("credential_vault.get", null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<CredentialVaultState> PatchAsync(CredentialVaultPatchRequest request, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new InvalidArgumentException("request is required");
            var args = Args.Of("expected_revision", request.ExpectedRevision.HasValue ? (object)(long)request.ExpectedRevision.Value : null);
            if (request.Credentials != null)
                args["credentials"] = VaultJson.Mutation(request.Credentials.Add, request.Credentials.Replace, request.Credentials.Delete);
            if (request.Bindings != null)
                args["bindings"] = VaultJson.Mutation(request.Bindings.Add, request.Bindings.Replace, request.Bindings.Delete);
            return CredentialVaultState.FromJson(await _core.OpAsync("credential_vault.patch", args, cancellationToken).ConfigureAwait(false));
        }

        public Task DeleteAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _core.OpAsync("credential_vault.delete", null, cancellationToken);
        }

        public async Task<IReadOnlyList<CredentialMetadata>> ListCredentialsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return VaultJson.Credentials(await _core.OpAsync("credential_vault.list_credentials", null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<CredentialMetadata> GetCredentialAsync(string name, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(name, "name");
            return CredentialMetadata.FromJson(await _core.OpAsync("credential_vault.get_credential", Args.Of("name", name), cancellationToken).ConfigureAwait(false));
        }

        public async Task<IReadOnlyList<CredentialBindingMetadata>> ListBindingsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return VaultJson.Bindings(await _core.OpAsync("credential_vault.list_bindings", null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<CredentialBindingMetadata> GetBindingAsync(string name, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(name, "name");
            return CredentialBindingMetadata.FromJson(await _core.OpAsync("credential_vault.get_binding", Args.Of("name", name), cancellationToken).ConfigureAwait(false));
        }
    }

    internal sealed class IsolatedSessionsService : IIsolatedSessions
    {
        private readonly SandboxCore _core;

        public IsolatedSessionsService(SandboxCore core) { _core = core; }

        public async Task<IIsolationSession> CreateAsync(CreateIsolatedSessionRequest request, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new InvalidArgumentException("request is required");
            var info = IsolatedSessionInfo.FromJson(await _core.OpAsync("isolation.create", request.ToJson(), cancellationToken).ConfigureAwait(false));
            return new IsolationSession(_core, info);
        }

        public async Task<IIsolationSession> AttachAsync(string sessionId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(sessionId, "sessionId");
            var info = IsolatedSessionInfo.FromJson(await _core.OpAsync("isolation.attach", Args.Of("session_id", sessionId), cancellationToken).ConfigureAwait(false));
            return new IsolationSession(_core, info);
        }

        public async Task<IsolatedCapabilities> CapabilitiesAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return IsolatedCapabilities.FromJson(await _core.OpAsync("isolation.capabilities", null, cancellationToken).ConfigureAwait(false));
        }

        public async Task<IReadOnlyList<IsolatedSessionSummary>> ListAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            var l = new List<IsolatedSessionSummary>();
            foreach (var x in Json.Arr(await _core.OpAsync("isolation.list", null, cancellationToken).ConfigureAwait(false)) ?? new List<object>())
                l.Add(IsolatedSessionSummary.FromJson(x));
            return l;
        }
    }

    internal sealed class IsolationSession : IIsolationSession
    {
        private readonly SandboxCore _core;

        public IsolationSession(SandboxCore core, IsolatedSessionInfo info)
        {
            _core = core;
            Info = info;
            Files = new FilesService(core, "isolated_session", info.SessionId);
        }

        public string SessionId { get { return Info.SessionId; } }
        public IsolatedSessionInfo Info { get; private set; }
        public ISandboxFiles Files { get; private set; }

        private Dictionary<string, object> RunArgs(string code, IsolatedRunOpts opts)
        {
            Args.Require(code, "code");
            if (opts != null && opts.TimeoutSeconds.HasValue && opts.TimeoutSeconds.Value <= 0)
                throw new InvalidArgumentException("IsolatedRunOpts.TimeoutSeconds must be positive");
            return Args.Of("session_id", SessionId, "code", code,
                "envs", opts == null ? null : ModelJson.StrMapToJson(opts.Envs),
                "timeout_s", opts == null || !opts.TimeoutSeconds.HasValue ? null : (object)(long)opts.TimeoutSeconds.Value);
        }

        public Task<Execution> RunAsync(string code, IsolatedRunOpts opts = null, ExecutionHandlers handlers = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return EventFolder.RunAsync(_core, "isolation.start", RunArgs(code, opts), handlers, cancellationToken);
        }

        public async Task<IsolatedSessionState> GetAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return IsolatedSessionState.FromJson(await _core.OpAsync("isolation.get", Args.Of("session_id", SessionId), cancellationToken).ConfigureAwait(false));
        }

        public Task DeleteAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _core.OpAsync("isolation.delete", Args.Of("session_id", SessionId), cancellationToken);
        }

        public async Task<IsolatedBackgroundRun> RunBackgroundAsync(string code, IsolatedRunOpts opts = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return IsolatedBackgroundRun.FromJson(await _core.OpAsync("isolation.run_background", RunArgs(code, opts), cancellationToken).ConfigureAwait(false));
        }

        public async Task<IsolatedRunStatus> GetRunStatusAsync(string runId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(runId, "runId");
            return IsolatedRunStatus.FromJson(await _core.OpAsync("isolation.run_status", Args.Of("session_id", SessionId, "run_id", runId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<IsolatedRunLogs> GetRunLogsAsync(string runId, long cursor = 0, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(runId, "runId");
            if (cursor < 0) throw new InvalidArgumentException("cursor must not be negative");
            var r = await _core.OpAsync("isolation.run_logs", Args.Of("session_id", SessionId, "run_id", runId, "cursor", cursor), cancellationToken).ConfigureAwait(false);
            return new IsolatedRunLogs { Text = Json.Str(r, "text") ?? "", Cursor = Json.Long(r, "cursor") ?? cursor };
        }
    }
}
