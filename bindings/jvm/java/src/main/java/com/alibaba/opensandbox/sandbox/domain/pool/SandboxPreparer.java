// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import com.alibaba.opensandbox.sandbox.Sandbox;

/** Prepares a freshly warmed sandbox before it joins the idle buffer (install, download, ...). */
@FunctionalInterface
public interface SandboxPreparer {
    void prepare(Sandbox sandbox) throws Exception;
}
