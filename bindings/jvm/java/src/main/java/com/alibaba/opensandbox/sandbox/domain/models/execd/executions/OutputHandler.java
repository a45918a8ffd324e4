// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

/** A callback for one kind of execution event. */
@FunctionalInterface
public interface OutputHandler<T> {
    void handle(T value) throws Exception;
}
