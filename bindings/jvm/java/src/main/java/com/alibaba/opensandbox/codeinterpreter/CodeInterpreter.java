// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.codeinterpreter;

import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.services.Commands;
import com.alibaba.opensandbox.sandbox.domain.services.Filesystem;
import com.alibaba.opensandbox.sandbox.domain.services.Metrics;

/** Code interpreter over a sandbox: {@code CodeInterpreter.builder().fromSandbox(sb).build()}. */
public final class CodeInterpreter {
    private final Sandbox sandbox;
    private final Codes codes;

    private CodeInterpreter(Sandbox sandbox) {
        this.sandbox = sandbox;
        this.codes = new Codes(sandbox.nativeHandle());
    }

    public static Builder builder() {
        return new Builder();
    }

    public Sandbox sandbox() {
        return sandbox;
    }

    public String getId() {
        return sandbox.getId();
    }

    public Filesystem files() {
        return sandbox.files();
    }

    public Commands commands() {
        return sandbox.commands();
    }

    public Metrics metrics() {
        return sandbox.metrics();
    }

    public Codes codes() {
        return codes;
    }

    /** Builder of {@link CodeInterpreter}. */
    public static final class Builder {
        private Sandbox sandbox;

        public Builder fromSandbox(Sandbox sandbox) {
            this.sandbox = sandbox;
            return this;
        }

        public CodeInterpreter build() {
            if (sandbox == null) {
                throw new InvalidArgumentException("fromSandbox(...) is required");
            }
            return new CodeInterpreter(sandbox);
        }
    }
}
