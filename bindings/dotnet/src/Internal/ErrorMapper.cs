// Maps the core's stable error kinds (bindings/ffi/API.md §2) to the official exception
// classes. The exact kind stays available as SandboxException.Kind.

using OpenSandbox.Core;

namespace OpenSandbox.Internal
{
    internal static class ErrorMapper
    {
        public static SandboxException ToException(string kind, int? status, string code, string message, string requestId, string body)
        {
            SandboxException ex;
            switch (kind)
            {
                case "api":
                case "not_found":
                case "unauthorized":
                case "timeout":
                    ex = new SandboxApiException(message, status, requestId, body,
                        new SandboxError(code ?? SandboxErrorCodes.UnexpectedResponse, message));
                    break;
                case "ready_timeout":
                    ex = new SandboxReadyTimeoutException(message, null, requestId);
                    break;
                case "invalid_argument":
                    ex = new InvalidArgumentException(message);
                    break;
                default:
                    // connection, stream, cancelled (not by the caller's token), internal, unknown
                    ex = new SandboxInternalException(message, null,
                        new SandboxError(code ?? SandboxErrorCodes.InternalUnknownError, message), requestId);
                    break;
            }
            ex.Kind = kind;
            return ex;
        }
    }
}
