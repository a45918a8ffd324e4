// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.codeinterpreter;

import com.alibaba.opensandbox.sandbox.domain.models.execd.code.CodeContext;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;

/** A code run: code, target context (or language) and handlers. */
public final class RunCodeRequest {
    private final String code;
    private final CodeContext context;
    private final ExecutionHandlers handlers;

    private RunCodeRequest(Builder b) {
        this.code = b.code;
        this.context = b.context;
        this.handlers = b.handlers;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getCode() {
        return code;
    }

    public CodeContext getContext() {
        return context;
    }

    public ExecutionHandlers getHandlers() {
        return handlers;
    }

    /** Builder of {@link RunCodeRequest}. */
    public static final class Builder {
        private String code;
        private CodeContext context;
        private ExecutionHandlers handlers;

        public Builder code(String code) {
            this.code = code;
            return this;
        }

        public Builder context(CodeContext context) {
            this.context = context;
            return this;
        }

        public Builder handlers(ExecutionHandlers handlers) {
            this.handlers = handlers;
            return this;
        }

        public RunCodeRequest build() {
            return new RunCodeRequest(this);
        }
    }
}
