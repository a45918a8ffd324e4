using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using OpenSandbox.Config;
using OpenSandbox.Models;

namespace OpenSandbox
{
    /// <summary>The SDK's own logging hooks (kept for source compatibility; the native core logs through RUST_LOG).</summary>
    public class SdkDiagnosticsOptions
    {
        /// <summary>A Microsoft.Extensions.Logging ILoggerFactory; accepted and currently unused.</summary>
        public object LoggerFactory { get; set; }
    }

    public class SandboxCreateOptions
    {
        public ConnectionConfig ConnectionConfig { get; set; }
        public SdkDiagnosticsOptions Diagnostics { get; set; }
        /// <summary>Image URI, e.g. "python:3.11". Exactly one of Image and SnapshotId.</summary>
        public string Image { get; set; }
        public ImageAuth ImageAuth { get; set; }
        public string SnapshotId { get; set; }
        public IReadOnlyList<string> Entrypoint { get; set; }
        public IReadOnlyDictionary<string, string> Env { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        /// <summary>(1.1) Hooks run inside the sandbox: before the entrypoint, and on schedules.</summary>
        public SandboxLifecycle Lifecycle { get; set; }
        public NetworkPolicy NetworkPolicy { get; set; }
        /// <summary>Starts the credential-vault proxy (needed by <see cref="Sandbox.CredentialVault"/>).</summary>
        public CredentialProxyConfig CredentialProxy { get; set; }
        public PlatformSpec Platform { get; set; }
        public IReadOnlyList<Volume> Volumes { get; set; }
        public IReadOnlyDictionary<string, string> Extensions { get; set; }
        public bool? SecureAccess { get; set; }
        public IReadOnlyDictionary<string, string> Resource { get; set; }
        /// <summary>(1.1) Guaranteed minimums (Kubernetes Burstable QoS when below Resource).</summary>
        public IReadOnlyDictionary<string, string> ResourceRequests { get; set; }
        /// <summary>Sandbox TTL in seconds; default 600. Ignored with ManualCleanup.</summary>
        public int? TimeoutSeconds { get; set; }
        /// <summary>No TTL: the sandbox lives until killed.</summary>
        public bool ManualCleanup { get; set; }
        public bool SkipHealthCheck { get; set; }
        public Func<Sandbox, Task<bool>> HealthCheck { get; set; }
        public int? ReadyTimeoutSeconds { get; set; }
        /// <summary>Milliseconds between health checks; default 200.</summary>
        public int? HealthCheckPollingInterval { get; set; }
    }

    /// <summary>
    /// (1.1) Options of <see cref="Sandbox.CreateFromTemplateAsync"/>: the template fixes the
    /// workload (entrypoint, env, resources, volumes, platform, lifecycle); only metadata,
    /// network policy and extensions may accompany it, and the timeout is required.
    /// </summary>
    public class SandboxCreateFromTemplateOptions
    {
        public ConnectionConfig ConnectionConfig { get; set; }
        public SdkDiagnosticsOptions Diagnostics { get; set; }
        /// <summary>Id of a Succeeded template (see <see cref="SandboxManager.CreateTemplateAsync"/>). Required.</summary>
        public string TemplateId { get; set; }
        /// <summary>Sandbox TTL in seconds. Required (positive).</summary>
        public int TimeoutSeconds { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public NetworkPolicy NetworkPolicy { get; set; }
        public IReadOnlyDictionary<string, string> Extensions { get; set; }
        public bool SkipHealthCheck { get; set; }
        public Func<Sandbox, Task<bool>> HealthCheck { get; set; }
        public int? ReadyTimeoutSeconds { get; set; }
        public int? HealthCheckPollingInterval { get; set; }
    }

    public class SandboxConnectOptions
    {
        public ConnectionConfig ConnectionConfig { get; set; }
        public SdkDiagnosticsOptions Diagnostics { get; set; }
        public string SandboxId { get; set; }
        public bool SkipHealthCheck { get; set; }
        public Func<Sandbox, Task<bool>> HealthCheck { get; set; }
        public int? ReadyTimeoutSeconds { get; set; }
        public int? HealthCheckPollingInterval { get; set; }
    }

    public class SandboxResumeOptions
    {
        public bool SkipHealthCheck { get; set; }
        public Func<Sandbox, Task<bool>> HealthCheck { get; set; }
        public int? ReadyTimeoutSeconds { get; set; }
        public int? HealthCheckPollingInterval { get; set; }
    }

    public class WaitUntilReadyOptions
    {
        public int ReadyTimeoutSeconds { get; set; }
        public int PollingIntervalMillis { get; set; }
        public Func<Sandbox, Task<bool>> HealthCheck { get; set; }
    }

    public class SandboxManagerOptions
    {
        public ConnectionConfig ConnectionConfig { get; set; }
        public SdkDiagnosticsOptions Diagnostics { get; set; }
    }

    public class SandboxFilter
    {
        public IReadOnlyList<string> States { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public int? Page { get; set; }
        public int? PageSize { get; set; }
    }

    /// <summary>(1.1) Filter of <see cref="SandboxManager.ListTemplatesAsync"/>.</summary>
    public class TemplateFilter
    {
        /// <summary>Metadata to match (AND).</summary>
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        /// <summary>1-based page.</summary>
        public int? Page { get; set; }
        /// <summary>1..200.</summary>
        public int? PageSize { get; set; }
    }
}
