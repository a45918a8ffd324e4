#!/usr/bin/env bash
# The official Kotlin SDK README's Java examples (tests/readme/OfficialReadme.java: each
# section verbatim but for the marked ADAPTED lines) in a fresh Maven project that
# depends on the installed com.alibaba.opensandbox:sandbox, against a fresh server.
#   bindings/jvm/tests/readme.sh SERVER_BIN WORKDIR
set -euo pipefail
SERVER="${1:?usage: readme.sh SERVER_BIN WORKDIR}"
WORK="${2:?usage: readme.sh SERVER_BIN WORKDIR}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
M2="$REPO/.work/m2"
rm -rf "$WORK"
mkdir -p "$WORK/src/main/java"
cp "$HERE/readme/OfficialReadme.java" "$WORK/src/main/java/"
cat > "$WORK/pom.xml" <<'POM'
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>official-readme</artifactId>
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
        <configuration><mainClass>OfficialReadme</mainClass></configuration>
      </plugin>
    </plugins>
  </build>
</project>
POM
OUT="$WORK/out.txt"
"$REPO/scripts/with-server.sh" "$SERVER" bash -c "cd '$WORK' && mvn -q -B -Dstyle.color=never -Dmaven.repo.local='$M2' compile exec:java" | tee "$OUT"
clean="$(sed 's/\x1b\[[0-9;]*m//g' "$OUT")"
for marker in 'Hello Sandbox!' 'README quickstart ok' 'README 1 ok' 'README 2 ok' 'README 3 ok' 'README 4 ok' \
    'README config 1 ok' 'README config 2 ok' 'README config 3 ok' 'README config 4 ok' 'README 6 ok' \
    'README 5 ok' 'README all ok'; do
  grep -qxF "$marker" <<<"$clean" || { echo "official README test: missing '$marker'"; exit 1; }
done
grep -q '^STDOUT: Count 5$' <<<"$clean" || { echo "official README test: no streamed 'Count 5'"; exit 1; }
echo "official README test: passed (every section of the official Kotlin README's Java examples)"
