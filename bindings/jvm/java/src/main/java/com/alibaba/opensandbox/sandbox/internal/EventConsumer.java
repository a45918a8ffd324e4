// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.internal;

/** Receives the execution events of one run, on the Java thread that pulled them. */
public interface EventConsumer {
    int INIT = 0;
    int STDOUT = 1;
    int STDERR = 2;
    int RESULT = 3;
    int COMPLETE = 4;
    int ERROR = 5;

    void onEvent(int type, String text, long timestamp, String extra, long number) throws Exception;
}
