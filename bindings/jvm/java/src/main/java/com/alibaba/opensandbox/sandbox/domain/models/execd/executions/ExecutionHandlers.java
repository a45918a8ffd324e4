// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.EventConsumer;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Callbacks called in event order while a run streams. With {@code skipAccumulation},
 * stdout/stderr go to the handlers only and are not kept in the returned Execution.
 */
public final class ExecutionHandlers implements EventConsumer {
    private final OutputHandler<OutputMessage> onStdout;
    private final OutputHandler<OutputMessage> onStderr;
    private final OutputHandler<ExecutionResult> onResult;
    private final OutputHandler<ExecutionComplete> onExecutionComplete;
    private final OutputHandler<ExecutionError> onError;
    private final OutputHandler<String> onInit;
    private final boolean skipAccumulation;

    private ExecutionHandlers(Builder b) {
        this.onStdout = b.onStdout;
        this.onStderr = b.onStderr;
        this.onResult = b.onResult;
        this.onExecutionComplete = b.onExecutionComplete;
        this.onError = b.onError;
        this.onInit = b.onInit;
        this.skipAccumulation = b.skipAccumulation;
    }

    public static Builder builder() {
        return new Builder();
    }

    public boolean getSkipAccumulation() {
        return skipAccumulation;
    }

    /** Internal: dispatches one native event. */
    @Override
    public void onEvent(int type, String text, long timestamp, String extra, long number) throws Exception {
        switch (type) {
            case INIT:
                if (onInit != null) {
                    onInit.handle(text);
                }
                break;
            case STDOUT:
                if (onStdout != null) {
                    onStdout.handle(new OutputMessage(text, timestamp, false));
                }
                break;
            case STDERR:
                if (onStderr != null) {
                    onStderr.handle(new OutputMessage(text, timestamp, true));
                }
                break;
            case RESULT:
                if (onResult != null) {
                    Map<String, Object> raw = new LinkedHashMap<>();
                    Object o = extra == null ? null : Json.parse(extra);
                    if (o instanceof Map) {
                        for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                            raw.put(String.valueOf(e.getKey()), e.getValue());
                        }
                    }
                    onResult.handle(new ExecutionResult(text, timestamp, raw));
                }
                break;
            case COMPLETE:
                if (onExecutionComplete != null) {
                    onExecutionComplete.handle(new ExecutionComplete(timestamp, number));
                }
                break;
            case ERROR:
                if (onError != null) {
                    Object o = extra == null ? null : Json.parse(extra);
                    Map<?, ?> d = o instanceof Map ? (Map<?, ?>) o : Map.of();
                    List<String> tb = Json.strList(d.get("traceback"));
                    onError.handle(new ExecutionError(text, Json.str(d.get("value")), timestamp, tb));
                }
                break;
            default:
                break;
        }
    }

    /** Builder of {@link ExecutionHandlers}. */
    public static final class Builder {
        private OutputHandler<OutputMessage> onStdout;
        private OutputHandler<OutputMessage> onStderr;
        private OutputHandler<ExecutionResult> onResult;
        private OutputHandler<ExecutionComplete> onExecutionComplete;
        private OutputHandler<ExecutionError> onError;
        private OutputHandler<String> onInit;
        private boolean skipAccumulation;

        public Builder onStdout(OutputHandler<OutputMessage> h) {
            this.onStdout = h;
            return this;
        }

        public Builder onStderr(OutputHandler<OutputMessage> h) {
            this.onStderr = h;
            return this;
        }

        public Builder onResult(OutputHandler<ExecutionResult> h) {
            this.onResult = h;
            return this;
        }

        public Builder onExecutionComplete(OutputHandler<ExecutionComplete> h) {
            this.onExecutionComplete = h;
            return this;
        }

        public Builder onError(OutputHandler<ExecutionError> h) {
            this.onError = h;
            return this;
        }

        /** Called with the execution id when {@code init} arrives. */
        public Builder onInit(OutputHandler<String> h) {
            this.onInit = h;
            return this;
        }

        public Builder skipAccumulation(boolean skip) {
            this.skipAccumulation = skip;
            return this;
        }

        public Builder skipAccumulation() {
            return skipAccumulation(true);
        }

        public ExecutionHandlers build() {
            return new ExecutionHandlers(this);
        }
    }
}
