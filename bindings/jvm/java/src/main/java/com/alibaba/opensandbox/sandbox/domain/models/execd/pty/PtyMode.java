// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.pty;

/**
 * How a PTY session's shell streams: {@link #PTY} a real terminal (ANSI, resize; the
 * default), {@link #PIPE} stdout and stderr as separate frames without a TTY (the URL
 * gets {@code pty=0}). Counts only on the attach that starts the shell.
 */
public enum PtyMode {
    PTY,
    PIPE
}
