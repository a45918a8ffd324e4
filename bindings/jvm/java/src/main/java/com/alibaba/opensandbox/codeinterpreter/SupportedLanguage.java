// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.codeinterpreter;

/** Language names understood by the code interpreter. */
public final class SupportedLanguage {
    public static final String PYTHON = "python";
    public static final String JAVA = "java";
    public static final String GO = "go";
    public static final String TYPESCRIPT = "typescript";
    public static final String JAVASCRIPT = "javascript";
    public static final String BASH = "bash";

    private SupportedLanguage() {}
}
