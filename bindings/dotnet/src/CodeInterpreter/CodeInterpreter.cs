// Alibaba.OpenSandbox.CodeInterpreter: stateful code contexts over a Sandbox.
// Built into its own assembly (Alibaba.OpenSandbox.CodeInterpreter.dll), as the official package.

using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.CodeInterpreter.Models;
using OpenSandbox.CodeInterpreter.Services;
using OpenSandbox.Core;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox.CodeInterpreter.Models
{
    public static class SupportedLanguage
    {
        public const string Python = "python";
        public const string Java = "java";
        public const string Go = "go";
        public const string TypeScript = "typescript";
        public const string JavaScript = "javascript";
        public const string Bash = "bash";
    }

    public class CodeContext
    {
        public string Id { get; set; }
        public string Language { get; set; }
    }

    public class RunCodeRequest
    {
        public string Code { get; set; }
        public CodeContext Context { get; set; }
    }

    public class RunCodeOptions
    {
        /// <summary>Run in this context (exclusive with Language).</summary>
        public CodeContext Context { get; set; }
        /// <summary>Run in the default context of this language (exclusive with Context).</summary>
        public string Language { get; set; }
        public ExecutionHandlers Handlers { get; set; }
    }
}

namespace OpenSandbox.CodeInterpreter.Services
{
    public interface ICodes
    {
        Task<CodeContext> CreateContextAsync(string language, CancellationToken cancellationToken = default(CancellationToken));
        Task<CodeContext> GetContextAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken));
        Task<IReadOnlyList<CodeContext>> ListContextsAsync(string language = null, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteContextAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken));
        Task DeleteContextsAsync(string language, CancellationToken cancellationToken = default(CancellationToken));
        Task<Execution> RunAsync(string code, RunCodeOptions options = null, CancellationToken cancellationToken = default(CancellationToken));
        IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(RunCodeRequest request, CancellationToken cancellationToken = default(CancellationToken));
        /// <summary>Interrupts a running execution (the parameter is the execution id, as in the official SDK).</summary>
        Task InterruptAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken));
    }
}

namespace OpenSandbox.CodeInterpreter
{
    /// <summary>Extensions over the official ICodes surface.</summary>
    public static class CodesExtensions
    {
        /// <summary>Creates a context whose working directory is <paramref name="cwd"/> (not in the official SDK).</summary>
        public static Task<CodeContext> CreateContextAsync(this ICodes codes, string language, string cwd, CancellationToken cancellationToken = default(CancellationToken))
        {
            var impl = codes as CodesService;
            if (impl == null) throw new InvalidArgumentException("CreateContextAsync with a cwd needs the SDK's own ICodes");
            return impl.CreateContextAsync(language, cwd, cancellationToken);
        }
    }

    public class CodeInterpreterCreateOptions
    {
        public SdkDiagnosticsOptions Diagnostics { get; set; }
    }

    /// <summary>A code interpreter bound to a sandbox (whose image must provide the interpreters).</summary>
    public sealed class CodeInterpreter
    {
        private CodeInterpreter(Sandbox sandbox)
        {
            Sandbox = sandbox;
            Codes = new CodesService(sandbox);
        }

        public Sandbox Sandbox { get; private set; }
        public ICodes Codes { get; private set; }
        public string Id { get { return Sandbox.Id; } }
        public ISandboxFiles Files { get { return Sandbox.Files; } }
        public IExecdCommands Commands { get { return Sandbox.Commands; } }
        public IExecdMetrics Metrics { get { return Sandbox.Metrics; } }

        public static Task<CodeInterpreter> CreateAsync(Sandbox sandbox, CodeInterpreterCreateOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (sandbox == null) throw new InvalidArgumentException("sandbox is required");
            return Task.FromResult(new CodeInterpreter(sandbox));
        }
    }

    internal sealed class CodesService : ICodes
    {
        private readonly Sandbox _sandbox;

        public CodesService(Sandbox sandbox) { _sandbox = sandbox; }

        private async Task<object> CallAsync(string op, Dictionary<string, object> args, CancellationToken ct)
        {
            return await _sandbox.Core.OpAsync(op, args, ct).ConfigureAwait(false);
        }

        private static CodeContext Ctx(object j)
        {
            return new CodeContext { Id = OpenSandbox.Internal.Json.Str(j, "id"), Language = OpenSandbox.Internal.Json.Str(j, "language") };
        }

        public async Task<CodeContext> CreateContextAsync(string language, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(language, "language");
            return Ctx(await CallAsync("code.create_context", OpenSandbox.Internal.Args.Of("language", language), cancellationToken).ConfigureAwait(false));
        }

        public async Task<CodeContext> CreateContextAsync(string language, string cwd, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(language, "language");
            return Ctx(await CallAsync("code.create_context", OpenSandbox.Internal.Args.Of("language", language, "cwd", cwd), cancellationToken).ConfigureAwait(false));
        }

        public async Task<CodeContext> GetContextAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(contextId, "contextId");
            return Ctx(await CallAsync("code.get_context", OpenSandbox.Internal.Args.Of("context_id", contextId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<IReadOnlyList<CodeContext>> ListContextsAsync(string language = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var r = await CallAsync("code.list_contexts", OpenSandbox.Internal.Args.Of("language", language), cancellationToken).ConfigureAwait(false);
            var l = new List<CodeContext>();
            var a = OpenSandbox.Internal.Json.Arr(r);
            if (a != null) foreach (var x in a) l.Add(Ctx(x));
            return l;
        }

        public Task DeleteContextAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(contextId, "contextId");
            return CallAsync("code.delete_context", OpenSandbox.Internal.Args.Of("context_id", contextId), cancellationToken);
        }

        public Task DeleteContextsAsync(string language, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(language, "language");
            return CallAsync("code.delete_contexts", OpenSandbox.Internal.Args.Of("language", language), cancellationToken);
        }

        private static Dictionary<string, object> RunArgs(string code, CodeContext context, string language)
        {
            OpenSandbox.Internal.Args.Require(code, "code");
            if (context != null && !string.IsNullOrEmpty(language))
                throw new InvalidArgumentException("Context and Language cannot both be set");
            return OpenSandbox.Internal.Args.Of(
                "code", code,
                "context_id", context == null ? null : context.Id,
                "language", context != null && context.Id == null ? context.Language : language);
        }

        public async Task<Execution> RunAsync(string code, RunCodeOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            options = options ?? new RunCodeOptions();
            var args = RunArgs(code, options.Context, options.Language);
            return await OpenSandbox.Internal.EventFolder.RunAsync(_sandbox.Core, "code.start", args, options.Handlers, cancellationToken).ConfigureAwait(false);
        }

        public IAsyncEnumerable<ServerStreamEvent> RunStreamAsync(RunCodeRequest request, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new InvalidArgumentException("request is required");
            var args = RunArgs(request.Code, request.Context, null);
            return new OpenSandbox.Internal.BatchEnumerable<ServerStreamEvent>(_sandbox.Core, "code.start", args,
                OpenSandbox.Internal.EventFolder.ToServerEvent, cancellationToken);
        }

        public Task InterruptAsync(string contextId, CancellationToken cancellationToken = default(CancellationToken))
        {
            OpenSandbox.Internal.Args.Require(contextId, "contextId");
            return CallAsync("code.interrupt", OpenSandbox.Internal.Args.Of("id", contextId), cancellationToken);
        }
    }
}
