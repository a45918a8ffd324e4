using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;
using OpenSandbox.Services;

namespace OpenSandbox
{
    /// <summary>
    /// One sandbox. Create it with <see cref="CreateAsync"/>, or bind to an existing one with
    /// <see cref="ConnectAsync"/>. <see cref="KillAsync"/> deletes the remote sandbox;
    /// <see cref="DisposeAsync"/> only frees local resources.
    /// </summary>
    public sealed class Sandbox : IAsyncDisposable, IDisposable
    {
        private readonly SandboxCore _core;
        private readonly EgressService _egress;

        private Sandbox(string id, long handle, ConnectionConfig config, SandboxOrigin origin)
        {
            Id = id;
            Origin = origin;
            _core = new SandboxCore(handle);
            ConnectionConfig = config;
            var commands = new CommandsService(_core);
            Commands = commands;
            CommandInventory = commands;
            Files = new FilesService(_core);
            Health = new HealthService(_core);
            Metrics = new MetricsService(_core);
            Pty = new PtyService(_core);
            Isolation = new IsolatedSessionsService(_core);
            CredentialVault = new CredentialVaultService(_core);
            _egress = new EgressService(_core);
        }

        public string Id { get; private set; }
        /// <summary>(1.1) What backs this sandbox (<see cref="SandboxOrigin"/>).</summary>
        public SandboxOrigin Origin { get; private set; }
        public ConnectionConfig ConnectionConfig { get; private set; }
        public IExecdCommands Commands { get; private set; }
        /// <summary>The command inventory (GET /command): <see cref="IExecdCommandInventory.ListCommandsAsync"/>.</summary>
        public IExecdCommandInventory CommandInventory { get; private set; }
        public ISandboxFiles Files { get; private set; }
        public IExecdHealth Health { get; private set; }
        public IExecdMetrics Metrics { get; private set; }
        /// <summary>Interactive PTY sessions and live background logs (extension).</summary>
        public IExecdPty Pty { get; private set; }
        /// <summary>(1.1) Isolated sessions inside this sandbox.</summary>
        public IIsolatedSessions Isolation { get; private set; }
        /// <summary>The sandbox-scoped credential vault (create the sandbox with CredentialProxy.Enabled).</summary>
        public ICredentialVault CredentialVault { get; private set; }

        internal SandboxCore Core { get { return _core; } }

        // ------------------------------------------------------------------ factories

        public static async Task<Sandbox> CreateAsync(SandboxCreateOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (options == null) throw new InvalidArgumentException("options are required");
            var hasImage = !string.IsNullOrEmpty(options.Image);
            var hasSnapshot = !string.IsNullOrEmpty(options.SnapshotId);
            if (hasImage == hasSnapshot) throw new InvalidArgumentException("exactly one of Image and SnapshotId must be set");
            if (hasSnapshot && options.Entrypoint != null) throw new InvalidArgumentException("Entrypoint must be omitted when SnapshotId is provided");
            if (!options.ManualCleanup && options.TimeoutSeconds.HasValue && options.TimeoutSeconds.Value <= 0)
                throw new InvalidArgumentException("TimeoutSeconds must be positive (use ManualCleanup for no TTL)");
            var config = options.ConnectionConfig ?? new ConnectionConfig();
            var o = new Dictionary<string, object>();
            if (hasImage) o["image"] = options.Image;
            if (hasSnapshot) o["snapshot_id"] = options.SnapshotId;
            if (options.ImageAuth != null)
                // The op layer knows username/password only (a token was never sent on).
                o["image_auth"] = Args.Of("username", options.ImageAuth.Username, "password", options.ImageAuth.Password);
            if (options.Entrypoint != null) o["entrypoint"] = Args.List(options.Entrypoint);
            if (options.ManualCleanup) o["timeout_s"] = null;
            else if (options.TimeoutSeconds.HasValue) o["timeout_s"] = (long)options.TimeoutSeconds.Value;
            ReadyArgs(o, "ready_timeout_s", options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval);
            if (options.Env != null) o["env"] = ModelJson.StrMapToJson(options.Env);
            if (options.Metadata != null) o["metadata"] = ModelJson.StrMapToJson(options.Metadata);
            if (options.Resource != null) o["resource"] = ModelJson.StrMapToJson(options.Resource);
            if (options.ResourceRequests != null) o["resource_requests"] = ModelJson.StrMapToJson(options.ResourceRequests);
            if (options.Lifecycle != null) o["lifecycle"] = options.Lifecycle.ToJson();
            if (options.Platform != null) o["platform"] = Args.Of("os", options.Platform.Os, "arch", options.Platform.Arch);
            if (options.NetworkPolicy != null) o["network_policy"] = options.NetworkPolicy.ToJson();
            if (options.CredentialProxy != null) o["credential_proxy"] = Args.Of("enabled", options.CredentialProxy.Enabled);
            if (options.Volumes != null)
            {
                var v = new List<object>();
                foreach (var vol in options.Volumes) v.Add(vol.ToJson());
                o["volumes"] = v;
            }
            if (options.Extensions != null) o["extensions"] = ModelJson.StrMapToJson(options.Extensions);
            if (options.SecureAccess.HasValue) o["secure_access"] = options.SecureAccess.Value;
            return await CreateWithAsync(config, o, options.SkipHealthCheck, options.HealthCheck, options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>
        /// (1.1) Creates a sandbox from a Succeeded template: the template fixes entrypoint,
        /// env, resources, volumes, platform and lifecycle; TimeoutSeconds is required.
        /// </summary>
        public static async Task<Sandbox> CreateFromTemplateAsync(SandboxCreateFromTemplateOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (options == null) throw new InvalidArgumentException("options are required");
            if (string.IsNullOrWhiteSpace(options.TemplateId)) throw new InvalidArgumentException("TemplateId is required");
            if (options.TimeoutSeconds <= 0) throw new InvalidArgumentException("TimeoutSeconds is required in template mode and must be positive");
            var config = options.ConnectionConfig ?? new ConnectionConfig();
            var o = new Dictionary<string, object>
            {
                { "template_id", options.TemplateId },
                { "timeout_s", (long)options.TimeoutSeconds },
            };
            ReadyArgs(o, "ready_timeout_s", options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval);
            if (options.Metadata != null) o["metadata"] = ModelJson.StrMapToJson(options.Metadata);
            if (options.NetworkPolicy != null) o["network_policy"] = options.NetworkPolicy.ToJson();
            if (options.Extensions != null) o["extensions"] = ModelJson.StrMapToJson(options.Extensions);
            return await CreateWithAsync(config, o, options.SkipHealthCheck, options.HealthCheck, options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval, cancellationToken).ConfigureAwait(false);
        }

        private static async Task<Sandbox> CreateWithAsync(ConnectionConfig config, Dictionary<string, object> o, bool skipHealthCheck, Func<Sandbox, Task<bool>> healthCheck,
            int? readyTimeoutSeconds, int? pollingMillis, CancellationToken cancellationToken)
        {
            // A custom health check runs here, so the core only creates and resolves.
            o["skip_health_check"] = skipHealthCheck || healthCheck != null;
            var sandbox = await OpenAsync("sandbox.create", config, o, cancellationToken).ConfigureAwait(false);
            if (healthCheck != null && !skipHealthCheck)
            {
                try
                {
                    await sandbox.WaitUntilReadyAsync(ReadyOptions(readyTimeoutSeconds, pollingMillis, healthCheck), cancellationToken).ConfigureAwait(false);
                }
                catch
                {
                    // zombie clean-up: the sandbox exists but never became ready
                    try { await sandbox.KillAsync(CancellationToken.None).ConfigureAwait(false); }
                    catch (Exception) { /* best effort; the original error matters */ }
                    sandbox.Dispose();
                    throw;
                }
            }
            return sandbox;
        }

        private static void ReadyArgs(Dictionary<string, object> o, string timeoutKey, int? readyTimeoutSeconds, int? pollingMillis)
        {
            if (readyTimeoutSeconds.HasValue) o[timeoutKey] = (long)readyTimeoutSeconds.Value;
            if (pollingMillis.HasValue) o["health_check_polling_interval_s"] = pollingMillis.Value / 1000.0;
        }

        /// <summary>Runs sandbox.create / connect / resume and wraps the session handle it returns.</summary>
        private static async Task<Sandbox> OpenAsync(string op, ConnectionConfig config, Dictionary<string, object> o, CancellationToken ct)
        {
            o["connection"] = config.ToSessionConnection();
            var r = Json.Parse(await Bridge.SessionCall(op, Json.Write(o), ct).ConfigureAwait(false));
            return new Sandbox(Json.Str(r, "id"), Json.Long(r, "handle") ?? 0, config, SandboxOrigins.Parse(Json.Str(r, "origin")));
        }

        private static WaitUntilReadyOptions ReadyOptions(int? readyTimeoutSeconds, int? pollingMillis, Func<Sandbox, Task<bool>> check)
        {
            return new WaitUntilReadyOptions
            {
                ReadyTimeoutSeconds = readyTimeoutSeconds ?? Constants.DefaultReadyTimeoutSeconds,
                PollingIntervalMillis = pollingMillis ?? Constants.DefaultHealthCheckPollingIntervalMillis,
                HealthCheck = check,
            };
        }

        public static Task<Sandbox> ConnectAsync(SandboxConnectOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            return OpenExistingAsync("sandbox.connect", options, cancellationToken);
        }

        /// <summary>Resumes a paused sandbox on the server, then connects to it.</summary>
        public static Task<Sandbox> ResumeAsync(SandboxConnectOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            return OpenExistingAsync("sandbox.resume", options, cancellationToken);
        }

        /// <summary>Resumes this (paused) sandbox and returns a fresh, connected Sandbox.</summary>
        public Task<Sandbox> ResumeAsync(SandboxResumeOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new SandboxResumeOptions();
            return OpenExistingAsync("sandbox.resume", new SandboxConnectOptions
            {
                ConnectionConfig = ConnectionConfig,
                SandboxId = Id,
                SkipHealthCheck = options.SkipHealthCheck,
                HealthCheck = options.HealthCheck,
                ReadyTimeoutSeconds = options.ReadyTimeoutSeconds,
                HealthCheckPollingInterval = options.HealthCheckPollingInterval,
            }, cancellationToken);
        }

        private static async Task<Sandbox> OpenExistingAsync(string op, SandboxConnectOptions options, CancellationToken ct)
        {
            if (options == null || string.IsNullOrEmpty(options.SandboxId)) throw new InvalidArgumentException("SandboxId is required");
            var config = options.ConnectionConfig ?? new ConnectionConfig();
            var o = new Dictionary<string, object> { { "sandbox_id", options.SandboxId } };
            ReadyArgs(o, op == "sandbox.resume" ? "resume_timeout_s" : "connect_timeout_s", options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval);
            o["skip_health_check"] = options.SkipHealthCheck || options.HealthCheck != null;
            var sandbox = await OpenAsync(op, config, o, ct).ConfigureAwait(false);
            if (options.HealthCheck != null && !options.SkipHealthCheck)
            {
                try
                {
                    await sandbox.WaitUntilReadyAsync(ReadyOptions(options.ReadyTimeoutSeconds, options.HealthCheckPollingInterval, options.HealthCheck), ct).ConfigureAwait(false);
                }
                catch
                {
                    sandbox.Dispose();
                    throw;
                }
            }
            return sandbox;
        }

        // ------------------------------------------------------------------ lifecycle

        public async Task<SandboxInfo> GetInfoAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return SandboxInfo.FromJson(await _core.OpAsync("sandbox.get_info", null, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Merges <paramref name="patch"/> into the metadata; a null value removes the key.</summary>
        public async Task<SandboxInfo> PatchMetadataAsync(IReadOnlyDictionary<string, string> patch, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (patch == null) throw new InvalidArgumentException("patch is required");
            var p = new Dictionary<string, object>();
            foreach (var kv in patch) p[kv.Key] = kv.Value;
            return SandboxInfo.FromJson(await _core.OpAsync("sandbox.patch_metadata", new Dictionary<string, object> { { "patch", p } }, cancellationToken).ConfigureAwait(false));
        }

        public Task<bool> IsHealthyAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return Health.PingAsync(cancellationToken);
        }

        public Task<SandboxMetrics> GetMetricsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return Metrics.GetMetricsAsync(cancellationToken);
        }

        public Task PauseAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _core.OpAsync("sandbox.pause", null, cancellationToken);
        }

        /// <summary>Deletes the remote sandbox.</summary>
        public Task KillAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _core.OpAsync("sandbox.kill", null, cancellationToken);
        }

        /// <summary>Sets the expiry to now + <paramref name="timeoutSeconds"/> (computed on the client).</summary>
        public async Task<RenewSandboxExpirationResponse> RenewAsync(int timeoutSeconds, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (timeoutSeconds <= 0) throw new InvalidArgumentException("timeoutSeconds must be positive");
            var r = await _core.OpAsync("sandbox.renew", Args.Of("seconds", (long)timeoutSeconds), cancellationToken).ConfigureAwait(false);
            return new RenewSandboxExpirationResponse { ExpiresAt = Json.Time(r, "expiresAt") };
        }

        public async Task<SnapshotInfo> CreateSnapshotAsync(string name = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return SnapshotInfo.FromJson(await _core.OpAsync("sandbox.create_snapshot", Args.Of("name", name), cancellationToken).ConfigureAwait(false));
        }

        public Task<NetworkPolicy> GetEgressPolicyAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _egress.GetPolicyAsync(cancellationToken);
        }

        public Task PatchEgressRulesAsync(IEnumerable<NetworkRule> rules, CancellationToken cancellationToken = default(CancellationToken))
        {
            return _egress.PatchRulesAsync(rules, cancellationToken);
        }

        public Task DeleteEgressRulesAsync(IEnumerable<string> targets, CancellationToken cancellationToken = default(CancellationToken))
        {
            return _egress.DeleteRulesAsync(targets, cancellationToken);
        }

        /// <summary>The endpoint of a sandbox port: an address without scheme and the headers to send to it.</summary>
        public async Task<Endpoint> GetEndpointAsync(int port, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Endpoint.FromJson(await _core.OpAsync("sandbox.get_endpoint", Args.Of("port", (long)port), cancellationToken).ConfigureAwait(false));
        }

        public async Task<Endpoint> GetSignedEndpointAsync(int port, long expires, CancellationToken cancellationToken = default(CancellationToken))
        {
            return Endpoint.FromJson(await _core.OpAsync("sandbox.get_signed_endpoint", Args.Of("port", (long)port, "expires", expires), cancellationToken).ConfigureAwait(false));
        }

        /// <summary>The endpoint as an absolute URL (protocol of the connection config + address).</summary>
        public async Task<string> GetEndpointUrlAsync(int port, CancellationToken cancellationToken = default(CancellationToken))
        {
            var ep = await GetEndpointAsync(port, cancellationToken).ConfigureAwait(false);
            var addr = ep.EndpointAddress ?? "";
            if (addr.StartsWith("http://", StringComparison.OrdinalIgnoreCase) || addr.StartsWith("https://", StringComparison.OrdinalIgnoreCase)) return addr;
            return ConnectionConfig.ProtocolName + "://" + addr;
        }

        /// <summary>Polls the health check (execd ping by default) until it passes or the timeout runs out.</summary>
        public async Task WaitUntilReadyAsync(WaitUntilReadyOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new WaitUntilReadyOptions();
            var timeout = options.ReadyTimeoutSeconds > 0 ? options.ReadyTimeoutSeconds : Constants.DefaultReadyTimeoutSeconds;
            var interval = options.PollingIntervalMillis > 0 ? options.PollingIntervalMillis : Constants.DefaultHealthCheckPollingIntervalMillis;
            if (options.HealthCheck == null)
            {
                await _core.OpAsync("sandbox.wait_until_ready", Args.Of("timeout_s", (long)timeout, "polling_interval_s", interval / 1000.0), cancellationToken).ConfigureAwait(false);
                return;
            }
            var deadline = DateTime.UtcNow.AddSeconds(timeout);
            Exception last = null;
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                try
                {
                    if (await options.HealthCheck(this).ConfigureAwait(false)) return;
                }
                catch (OperationCanceledException)
                {
                    throw;
                }
                catch (Exception e)
                {
                    last = e;
                }
                if (DateTime.UtcNow >= deadline)
                {
                    throw new SandboxReadyTimeoutException(
                        "Sandbox " + Id + " was not ready after " + timeout + "s (domain " + ConnectionConfig.Domain +
                        ", useServerProxy=" + ConnectionConfig.UseServerProxy.ToString().ToLowerInvariant() +
                        "). Check that the health check can reach the sandbox, or raise ReadyTimeoutSeconds.", last);
                }
                await Task.Delay(interval, cancellationToken).ConfigureAwait(false);
            }
        }

        // ------------------------------------------------------------------ credential vault (flat form)

        public Task<CredentialVaultState> CreateCredentialVaultAsync(IReadOnlyList<Credential> credentials, IReadOnlyList<CredentialBinding> bindings, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.CreateAsync(credentials, bindings, cancellationToken);
        }

        public Task<CredentialVaultState> GetCredentialVaultAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.GetAsync(cancellationToken);
        }

        public Task<CredentialVaultState> PatchCredentialVaultAsync(CredentialVaultPatchRequest request, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.PatchAsync(request, cancellationToken);
        }

        public Task DeleteCredentialVaultAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.DeleteAsync(cancellationToken);
        }

        public Task<IReadOnlyList<CredentialMetadata>> ListCredentialVaultCredentialsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.ListCredentialsAsync(cancellationToken);
        }

        public Task<CredentialMetadata> GetCredentialVaultCredentialAsync(string name, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.GetCredentialAsync(name, cancellationToken);
        }

        public Task<IReadOnlyList<CredentialBindingMetadata>> ListCredentialVaultBindingsAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.ListBindingsAsync(cancellationToken);
        }

        public Task<CredentialBindingMetadata> GetCredentialVaultBindingAsync(string name, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CredentialVault.GetBindingAsync(name, cancellationToken);
        }

        /// <summary>Server diagnostics: process output of the sandbox. Extension (not in the official C# SDK).</summary>
        public async Task<DiagnosticContent> GetDiagnosticLogsAsync(string scope, CancellationToken cancellationToken = default(CancellationToken))
        {
            return DiagnosticContent.FromJson(await _core.OpAsync("sandbox.get_diagnostic_logs", Args.Of("scope", scope), cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Server diagnostics: state transitions of the sandbox. Extension (not in the official C# SDK).</summary>
        public async Task<DiagnosticContent> GetDiagnosticEventsAsync(string scope, CancellationToken cancellationToken = default(CancellationToken))
        {
            return DiagnosticContent.FromJson(await _core.OpAsync("sandbox.get_diagnostic_events", Args.Of("scope", scope), cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Frees local resources; the remote sandbox keeps running (see KillAsync).</summary>
        public ValueTask DisposeAsync()
        {
            Dispose();
            return default(ValueTask);
        }

        public void Dispose()
        {
            _core.ReleaseOpHandle();
        }
    }
}
