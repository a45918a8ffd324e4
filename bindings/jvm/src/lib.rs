//! JNI library of the JVM package (skeleton: the owner of this crate fills it in).
