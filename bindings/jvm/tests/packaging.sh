#!/usr/bin/env bash
# Packaging test: a fresh Maven project that depends on the installed artifact
# com.alibaba.opensandbox:sandbox (from `mvn install` into .work/m2) runs the README
# quickstart (bindings/jvm/QUICKSTART.md) against a fresh server, with the native
# library loaded from inside the jar.
#   bindings/jvm/tests/packaging.sh SERVER_BIN WORKDIR
set -euo pipefail
SERVER="${1:?usage: packaging.sh SERVER_BIN WORKDIR}"
WORK="${2:?usage: packaging.sh SERVER_BIN WORKDIR}"
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
M2="$REPO/.work/m2"
rm -rf "$WORK"
mkdir -p "$WORK/src/main/java"
# The quickstart exactly as documented (the java block of QUICKSTART.md).
python3 - "$REPO/bindings/jvm/QUICKSTART.md" "$WORK/src/main/java/QuickStart.java" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"```java\n(.*?)```", text, re.S).group(1)
open(sys.argv[2], "w").write(block)
PY
cat > "$WORK/pom.xml" <<'POM'
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>quickstart</artifactId>
  <version>1</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>11</maven.compiler.release>
  </properties>
  <dependencies>
    <dependency>
      <groupId>com.alibaba.opensandbox</groupId>
      <artifactId>sandbox</artifactId>
      <version>1.1.1</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
      <plugin>
        <groupId>org.codehaus.mojo</groupId>
        <artifactId>exec-maven-plugin</artifactId>
        <version>3.1.0</version>
        <configuration><mainClass>QuickStart</mainClass></configuration>
      </plugin>
    </plugins>
  </build>
</project>
POM
OUT="$WORK/out.txt"
"$REPO/scripts/with-server.sh" "$SERVER" bash -c "cd '$WORK' && mvn -q -B -Dstyle.color=never -Dmaven.repo.local='$M2' compile exec:java" | tee "$OUT"
sed 's/\x1b\[[0-9;]*m//g' "$OUT" | grep -qx 'Hello Sandbox!' || { echo "packaging test: quickstart did not print 'Hello Sandbox!'"; exit 1; }
echo "packaging test: passed (artifact from $M2, native library from the jar)"
