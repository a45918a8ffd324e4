# The .NET package (bindings/dotnet): C# over the C ABI of bindings/ffi, built and tested
# with Debian's Mono (mcs + nunit-console 2.6); a .csproj builds the same sources with a
# modern dotnet for users who have one. Outputs go to .work/dotnet/.

DOTNET_DIR := bindings/dotnet
DOTNET_OUT := $(CURDIR)/.work/dotnet
DOTNET_LIB := $(DOTNET_OUT)/lib
DOTNET_FFI_DIR := $(CARGO_TARGET_DIR)/debug
DOTNET_NUNIT := /usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll
DOTNET_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
MCS_FLAGS := -langversion:7.2 -warnaserror -nowarn:1591 -debug -optimize+
DOTNET_CORE_SRC = $(shell find $(DOTNET_DIR)/src -name '*.cs' -not -path '*/CodeInterpreter/*')
DOTNET_CI_SRC = $(shell find $(DOTNET_DIR)/src/CodeInterpreter -name '*.cs')

.PHONY: setup-dotnet build-dotnet build-csharp test-dotnet bench-dotnet bench-prepare-dotnet pack-dotnet test-dotnet-package

setup-dotnet:
	@if ! command -v mcs >/dev/null || ! command -v nunit-console >/dev/null || ! command -v nuget >/dev/null \
	    || [ ! -f $(DOTNET_NUNIT) ]; then \
	    echo "setup-dotnet: installing Mono, NUnit 2.6 and NuGet (apt)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	        mono-mcs mono-runtime nunit-console libnunit-cil-dev nuget >/dev/null; \
	fi

# The native library (debug, shared target dir) plus the two managed assemblies and the
# conformance driver; everything `make conformance-csharp` needs.
build-dotnet: setup-dotnet build
	@mkdir -p $(DOTNET_LIB) $(DOTNET_OUT)/driver $(DOTNET_OUT)/tests
	mcs $(MCS_FLAGS) -target:library -unsafe -out:$(DOTNET_LIB)/Alibaba.OpenSandbox.dll $(DOTNET_CORE_SRC)
	mcs $(MCS_FLAGS) -target:library -out:$(DOTNET_LIB)/Alibaba.OpenSandbox.CodeInterpreter.dll \
	    -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.dll $(DOTNET_CI_SRC)
	cp $(DOTNET_LIB)/*.dll $(DOTNET_LIB)/*.mdb $(DOTNET_OUT)/driver/
	mcs $(MCS_FLAGS) -target:exe -out:$(DOTNET_OUT)/driver/OpenSandbox.Conformance.exe \
	    -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.dll -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.CodeInterpreter.dll \
	    conformance/drivers/csharp/*.cs $(DOTNET_DIR)/src/Internal/Json.cs

build-csharp: build-dotnet

# NUnit tests under nunit-console against the real server (target/debug/opensandbox-server),
# plus the generator's drift test and the packaging test.
# (The generator's drift tests are Rust tests of opensandbox-dotnet-gen: `make test-rust`.)
test-dotnet: build-dotnet
	cp $(DOTNET_LIB)/*.dll $(DOTNET_LIB)/*.mdb $(DOTNET_NUNIT) $(DOTNET_OUT)/tests/
	mcs $(MCS_FLAGS) -target:library -out:$(DOTNET_OUT)/tests/Alibaba.OpenSandbox.Tests.dll \
	    -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.dll -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.CodeInterpreter.dll \
	    -r:$(DOTNET_NUNIT) $(DOTNET_DIR)/tests/*.cs
	cd $(DOTNET_OUT)/tests && LD_LIBRARY_PATH=$(DOTNET_FFI_DIR) OPENSANDBOX_SERVER_BIN=$(SERVER_DEBUG) \
	    nunit-console -nologo -labels -domain=None -noshadow -result=$(DOTNET_OUT)/tests/TestResult.xml Alibaba.OpenSandbox.Tests.dll
	@python3 $(DOTNET_DIR)/scripts/nunit_summary.py $(DOTNET_OUT)/tests/TestResult.xml
	$(MAKE) --no-print-directory test-dotnet-package

# The .nupkg: managed assemblies (lib/netstandard2.0) + runtimes/linux-x64/native/libopensandbox_ffi.so.
# `make test` packs the debug library; a release pack sets DOTNET_FFI_DIR=$(CARGO_TARGET_DIR)/release.
pack-dotnet: build-dotnet
	$(DOTNET_DIR)/scripts/pack.sh "$(DOTNET_LIB)" "$(DOTNET_FFI_DIR)/libopensandbox_ffi.so" "$(DOTNET_VERSION)" "$(DOTNET_OUT)/nupkg"

# Consumes the .nupkg in a fresh program (README quickstart) against a fresh server.
test-dotnet-package: pack-dotnet
	scripts/with-server.sh "$(SERVER_DEBUG)" $(DOTNET_DIR)/scripts/package_test.sh "$(DOTNET_OUT)/nupkg" "$(DOTNET_OUT)/package-test"

# `make bench` runs bindings/dotnet/bench/bench.sh after this (ours only: nuget.org is
# not reachable here).
bench-prepare-dotnet: build-dotnet build-release
	mcs $(MCS_FLAGS) -target:exe -out:$(DOTNET_OUT)/driver/Bench.exe \
	    -r:$(DOTNET_LIB)/Alibaba.OpenSandbox.dll $(DOTNET_DIR)/bench/Bench.cs

bench-dotnet: bench-prepare-dotnet
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py dotnet

BENCH_LANGS += dotnet
BINDING_TESTS += test-dotnet
SETUP_ALL += setup-dotnet
DRIVER_BUILDS += build-dotnet
