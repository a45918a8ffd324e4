// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.codeinterpreter;

import com.alibaba.opensandbox.sandbox.domain.models.execd.code.CodeContext;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Code contexts and code runs ({@code interpreter.codes()}). */
public final class Codes {
    private final long handle;

    Codes(long handle) {
        this.handle = handle;
    }

    public CodeContext createContext(String language, String cwd) {
        return CodeContext.fromJson(NativeBridge.invoke("code.create_context",
                Json.obj("sandbox", handle, "language", language, "cwd", cwd)));
    }

    public CodeContext createContext(String language) {
        return createContext(language, null);
    }

    public CodeContext getContext(String contextId) {
        return CodeContext.fromJson(NativeBridge.invoke("code.get_context", Json.obj("sandbox", handle, "context_id", contextId)));
    }

    public List<CodeContext> listContexts(String language) {
        return Json.list(NativeBridge.invoke("code.list_contexts", Json.obj("sandbox", handle, "language", language)),
                CodeContext::fromJson);
    }

    public void deleteContext(String contextId) {
        NativeBridge.invoke("code.delete_context", Json.obj("sandbox", handle, "context_id", contextId));
    }

    public void deleteContexts(String language) {
        NativeBridge.invoke("code.delete_contexts", Json.obj("sandbox", handle, "language", language));
    }

    private Map<String, Object> args(RunCodeRequest r) {
        Map<String, Object> a = Json.obj("sandbox", handle, "code", r.getCode());
        CodeContext c = r.getContext();
        if (c != null && c.getId() != null) {
            a.put("context_id", c.getId());
        } else if (c != null && c.getLanguage() != null) {
            a.put("language", c.getLanguage());
        }
        ExecutionHandlers h = r.getHandlers();
        a.put("skip_accumulation", h != null && h.getSkipAccumulation());
        return a;
    }

    public Execution run(RunCodeRequest request) {
        return Execution.fromJson(NativeBridge.invoke("code.run", args(request), request.getHandlers()));
    }

    /**
     * As {@link #run(RunCodeRequest)}, without blocking. {@code cancel(true)} on the returned future
     * stops the run and interrupts the cell on the server.
     */
    public CompletableFuture<Execution> runAsync(RunCodeRequest request) {
        return NativeBridge.mapCancellable(
                NativeBridge.invokeAsync("code.run", args(request), request.getHandlers()), Execution::fromJson);
    }

    public Execution run(String code, CodeContext context, ExecutionHandlers handlers) {
        return run(RunCodeRequest.builder().code(code).context(context).handlers(handlers).build());
    }

    public Execution run(String code, CodeContext context) {
        return run(code, context, null);
    }

    /** Runs in the default context of {@code language}. */
    public Execution run(String code, String language, ExecutionHandlers handlers) {
        return run(code, CodeContext.builder().language(language).build(), handlers);
    }

    public Execution run(String code, String language) {
        return run(code, language, null);
    }

    /** Interrupts the running execution of a context. */
    public void interrupt(String id) {
        NativeBridge.invoke("code.interrupt", Json.obj("sandbox", handle, "id", id));
    }
}
