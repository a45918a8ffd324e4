# The JVM package (bindings/jvm): the JNI library (crate opensandbox-jvm) packaged in
# the Maven artifact com.alibaba.opensandbox:sandbox under native/linux-x86_64/.
# Maven's local repository is .work/m2; the conformance language name is `java`.
MVN ?= mvn
JVM_DIR := bindings/jvm/java
# com.alibaba.opensandbox:sandbox-pool-redis (RedisPoolStateStore over Jedis), as officially a
# separate artifact; its tests start their own redis-server.
JVM_REDIS_DIR := bindings/jvm/pool-redis
JVM_WORK := $(CURDIR)/.work/jvm
JVM_VERSION := 1.1.1
JVM_MVN := $(MVN) -q -B -Dstyle.color=never -Dmaven.repo.local=$(CURDIR)/.work/m2 -Dnative.dir=$(JVM_WORK)/native
JVM_LIB := $(CARGO_TARGET_DIR)/debug/libopensandbox_jvm.so
# The conformance driver's Redis pool store: the sandbox-pool-redis sources compiled into a
# jar beside Jedis and its runtime dependencies (from .work/m2, fetched by prefetch-jvm),
# all in $(JVM_WORK)/driver-lib (the driver's classpath: conformance/drivers/java/driver.json).
JVM_M2 := $(CURDIR)/.work/m2
JVM_REDIS_JARS := $(JVM_M2)/redis/clients/jedis/7.4.1/jedis-7.4.1.jar \
    $(JVM_M2)/org/apache/commons/commons-pool2/2.12.1/commons-pool2-2.12.1.jar \
    $(JVM_M2)/org/slf4j/slf4j-api/1.7.36/slf4j-api-1.7.36.jar \
    $(JVM_M2)/org/json/json/20251224/json-20251224.jar \
    $(JVM_M2)/com/google/code/gson/gson/2.13.2/gson-2.13.2.jar \
    $(JVM_M2)/redis/clients/authentication/redis-authx-core/0.1.1-beta2/redis-authx-core-0.1.1-beta2.jar

.PHONY: setup-jvm prefetch-jvm build-jvm build-java test-jvm bench-jvm bench-prepare-java

setup-jvm:
	@command -v javac >/dev/null && command -v $(MVN) >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; }
	@mkdir -p $(JVM_WORK)/native $(JVM_WORK)/driver

# Maven's plugins and dependencies into .work/m2 while cargo builds (a lifecycle run
# without the native library and with no test selected: go-offline misses plugin
# components that `package` and surefire load).
prefetch-jvm: setup-jvm
	@mkdir -p $(JVM_WORK)/prefetch-native
	cd $(JVM_DIR) && $(MVN) -q -B -Dstyle.color=never -Dmaven.repo.local=$(CURDIR)/.work/m2 \
	    -Dnative.dir=$(JVM_WORK)/prefetch-native -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false install
	# The Redis pool store module (Jedis); its `sandbox` dependency is the jar just installed
	# (without the native library: test-jvm installs the real one over it).
	cd $(JVM_REDIS_DIR) && $(MVN) -q -B -Dstyle.color=never -Dmaven.repo.local=$(CURDIR)/.work/m2 \
	    -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false verify

# The library (debug build, debug info stripped for the jar), the jar, the driver.
build-jvm: setup-jvm build
	objcopy --strip-debug $(JVM_LIB) $(JVM_WORK)/native/libopensandbox_jvm.so
	cd $(JVM_DIR) && $(JVM_MVN) -DskipTests package
	cp $(JVM_DIR)/target/sandbox-$(JVM_VERSION).jar $(JVM_WORK)/sandbox.jar
	@test -f $(JVM_M2)/redis/clients/jedis/7.4.1/jedis-7.4.1.jar || $(MAKE) --no-print-directory prefetch-jvm
	rm -rf $(JVM_WORK)/driver-lib $(JVM_WORK)/pool-redis && mkdir -p $(JVM_WORK)/driver-lib $(JVM_WORK)/pool-redis
	cp $(JVM_REDIS_JARS) $(JVM_WORK)/driver-lib/
	javac -Xlint:all,-serial -Werror --release 11 -cp "$(JVM_WORK)/sandbox.jar:$(JVM_WORK)/driver-lib/*" -d $(JVM_WORK)/pool-redis \
	    $$(find $(JVM_REDIS_DIR)/src/main/java -name '*.java')
	jar cf $(JVM_WORK)/driver-lib/sandbox-pool-redis.jar -C $(JVM_WORK)/pool-redis .
	javac -Xlint:all -Werror -cp "$(JVM_WORK)/sandbox.jar:$(JVM_WORK)/driver-lib/*" -d $(JVM_WORK)/driver conformance/drivers/java/Driver.java

build-java: build-jvm

# JUnit 5 against the real server and `mvn install` (the package, then the Redis pool store
# module against it), then the packaging test: a fresh Maven project depending on the
# installed artifact runs the quickstart; then the official Kotlin README's Java examples
# (bindings/jvm/tests/readme/OfficialReadme.java) the same way.
test-jvm: build-jvm
	rm -rf $(JVM_WORK)/lint && javac -Xlint:all -Werror --release 11 -d $(JVM_WORK)/lint $$(find $(JVM_DIR)/src/main/java -name '*.java')
	scripts/with-server.sh "$(SERVER_DEBUG)" bash -c 'cd $(JVM_DIR) && $(JVM_MVN) install && cd $(CURDIR)/$(JVM_REDIS_DIR) && $(JVM_MVN) install'
	bindings/jvm/tests/packaging.sh "$(SERVER_DEBUG)" $(JVM_WORK)/pkgtest
	bindings/jvm/tests/readme.sh "$(SERVER_DEBUG)" $(JVM_WORK)/readmetest

# Ours (release library) and the stand-in client: `make bench` runs
# bindings/jvm/bench/bench.sh after this (as language `java`).
bench-prepare-java: setup-jvm build-release
	mkdir -p $(JVM_WORK)/bench
	cd $(JVM_DIR) && $(JVM_MVN) -DskipTests package
	javac -cp $(JVM_DIR)/target/classes -d $(JVM_WORK)/bench bindings/jvm/bench/Bench.java

bench-jvm: bench-prepare-java
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py java

BENCH_LANGS += java
BINDING_TESTS += test-jvm
SETUP_ALL += prefetch-jvm
DRIVER_BUILDS += build-jvm
