// (1.1) Lifecycle hooks of sandbox creation (SandboxCreateOptions.Lifecycle).

using System.Collections.Generic;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    /// <summary>A command run inside the sandbox before its entrypoint starts; a failure fails the create.</summary>
    public class LifecycleHook
    {
        public IReadOnlyList<string> Command { get; set; }
        /// <summary>Seconds; the server's maximum is 300.</summary>
        public int? TimeoutSeconds { get; set; }
    }

    /// <summary>A named command run on a schedule (cron expression or descriptor such as "@every 1m").</summary>
    public class PeriodicLifecycleHook
    {
        public string Name { get; set; }
        public string Schedule { get; set; }
        public IReadOnlyList<string> Command { get; set; }
        public int? TimeoutSeconds { get; set; }
    }

    public class SandboxLifecycle
    {
        public LifecycleHook PreStart { get; set; }
        public IReadOnlyList<PeriodicLifecycleHook> Periodic { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            if (PreStart != null)
            {
                if (PreStart.Command == null || PreStart.Command.Count == 0)
                    throw new Core.InvalidArgumentException("Lifecycle.PreStart.Command must not be empty");
                if (PreStart.TimeoutSeconds.HasValue && PreStart.TimeoutSeconds.Value <= 0)
                    throw new Core.InvalidArgumentException("Lifecycle.PreStart.TimeoutSeconds must be positive");
                o["pre_start"] = Args.Of("command", Args.List(PreStart.Command), "timeout_seconds", (object)PreStart.TimeoutSeconds);
            }
            if (Periodic != null)
            {
                var l = new List<object>();
                foreach (var p in Periodic)
                {
                    if (p == null || string.IsNullOrEmpty(p.Name) || string.IsNullOrEmpty(p.Schedule) || p.Command == null || p.Command.Count == 0)
                        throw new Core.InvalidArgumentException("every periodic lifecycle hook needs Name, Schedule and a non-empty Command");
                    if (p.TimeoutSeconds.HasValue && p.TimeoutSeconds.Value <= 0)
                        throw new Core.InvalidArgumentException("periodic hook " + p.Name + ": TimeoutSeconds must be positive");
                    l.Add(Args.Of("name", p.Name, "schedule", p.Schedule, "command", Args.List(p.Command), "timeout_seconds", (object)p.TimeoutSeconds));
                }
                o["periodic"] = l;
            }
            return o;
        }
    }

    /// <summary>Credential-vault proxy settings of a new sandbox.</summary>
    public class CredentialProxyConfig
    {
        public bool Enabled { get; set; }
    }
}
