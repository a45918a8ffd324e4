// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import java.util.Locale;

/** Snapshot storage encoding of a published template. */
public enum TemplateFormat {
    NATIVE,
    OVERLAYBD;

    /** The wire name ({@code native}, {@code overlaybd}). */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Internal: from the wire name; {@code null} or an unknown name gives {@code null}. */
    public static TemplateFormat fromWire(String s) {
        if (s == null) {
            return null;
        }
        for (TemplateFormat f : values()) {
            if (f.wireName().equalsIgnoreCase(s)) {
                return f;
            }
        }
        return null; // a format this SDK does not know yet
    }
}
