using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox
{
    /// <summary>Helpers that create an isolated session, use it and delete it (best effort) afterwards.</summary>
    public static class IsolatedSessionsExtensions
    {
        public static Task<Execution> RunOnceAsync(
            this IIsolatedSessions service,
            string code,
            string workspace,
            string workspaceMode = null,
            IsolatedRunOpts opts = null,
            ExecutionHandlers handlers = null,
            string profile = null,
            bool? shareNet = null,
            List<BindMount> binds = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var request = new CreateIsolatedSessionRequest(Workspace: new IsolatedWorkspaceSpec(workspace, workspaceMode), Profile: profile, ShareNet: shareNet, Binds: binds);
            return service.WithSessionAsync(request, s => s.RunAsync(code, opts, handlers, cancellationToken), cancellationToken);
        }

        public static async Task<T> WithSessionAsync<T>(
            this IIsolatedSessions service,
            CreateIsolatedSessionRequest request,
            Func<IIsolationSession, Task<T>> fn,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            if (fn == null) throw new ArgumentNullException("fn");
            var session = await service.CreateAsync(request, cancellationToken).ConfigureAwait(false);
            try
            {
                return await fn(session).ConfigureAwait(false);
            }
            finally
            {
                try { await session.DeleteAsync(CancellationToken.None).ConfigureAwait(false); }
                catch (Exception) { /* best effort: the caller's outcome matters */ }
            }
        }

        public static Task WithSessionAsync(
            this IIsolatedSessions service,
            CreateIsolatedSessionRequest request,
            Func<IIsolationSession, Task> fn,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            if (fn == null) throw new ArgumentNullException("fn");
            return service.WithSessionAsync<bool>(request, async s => { await fn(s).ConfigureAwait(false); return true; }, cancellationToken);
        }
    }
}
