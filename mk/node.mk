# The Node package (bindings/node): the napi-rs addon (crate opensandbox-node, built once
# in the shared target dir and copied next to the JS as opensandbox.node), the JS/TS
# layer, `node --test` suites against the real server, the conformance driver, a
# packaging test (npm pack → fresh project under .work/ → README quickstart) and the
# benchmark against the official @alibaba-group/opensandbox from npm.

NODE_DIR := bindings/node
NODE_WORK := $(CURDIR)/.work/node
NODE_ADDON := $(NODE_DIR)/opensandbox.node
NODE_SO_DEBUG := $(CARGO_TARGET_DIR)/debug/libopensandbox_node.so
NODE_SO_RELEASE := $(CARGO_TARGET_DIR)/release/libopensandbox_node.so
NODE_OFFICIAL := @alibaba-group/opensandbox@0.1.11
NODE_TOOLS := $(NODE_WORK)/tools
NODE_TSC := $(NODE_TOOLS)/node_modules/.bin/tsc
NODE_ESLINT := $(NODE_TOOLS)/node_modules/.bin/eslint
NODE_REDIS := $(NODE_TOOLS)/node_modules/redis

.PHONY: setup-node setup-node-tools lint-node build-node test-node test-node-types lint-node test-node-package test-node-alias bench-node bench-prepare-node

# Node >= 20 and npm; Debian's packages when missing.
setup-node:
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null \
	    || [ "$$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then \
	    echo "setup-node: installing nodejs and npm (apt)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	fi

# The debug addon from the one workspace build (`make build`), copied as a .node,
# without its DWARF sections when binutils is there (115 MB → ~15 MB; symbols stay).
# The tools bring node-redis, which the conformance driver's Redis pool cases use.
build-node: setup-node setup-node-tools build
	@if command -v strip >/dev/null; then strip --strip-debug -o $(NODE_ADDON).tmp $(NODE_SO_DEBUG); \
	  else cp -f $(NODE_SO_DEBUG) $(NODE_ADDON).tmp; fi && mv -f $(NODE_ADDON).tmp $(NODE_ADDON)

# Unit + integration tests (node --test) against a fresh debug server (the idle-exit
# check among them; the pool's Redis-store test starts its own redis-server), the
# declarations type check, then the packaging test.
test-node: build-node setup-node-tools
	scripts/with-server.sh "$(SERVER_DEBUG)" node --test --test-concurrency=1 $(NODE_DIR)/tests/
	$(MAKE) --no-print-directory test-node-types lint-node test-node-package test-node-alias

# index.d.ts + code written for the official API, under tsc --strict (TypeScript 5.9
# from npm into .work/node/tools, once), and node-redis (the client the pool's Redis
# store is used with, an optional peer dependency of the package) for
# tests/pool-redis.test.mjs, which finds it there.
setup-node-tools: setup-node
	@[ -x $(NODE_TSC) ] && [ -x $(NODE_ESLINT) ] && [ -d $(NODE_REDIS) ] || { mkdir -p $(NODE_TOOLS) && cd $(NODE_TOOLS) && \
	    printf '{"name":"tools","private":true}\n' > package.json && \
	    npm install --silent --no-audit --no-fund typescript@5.9 @types/node@20 eslint@10.15.0 @eslint/js@10.0.1 globals@17.14.0 \
	        redis@6.3.1; }

# eslint over the package's JS and the conformance driver (config: eslint.config.mjs).
lint-node: setup-node-tools
	$(NODE_ESLINT) --max-warnings 0 -c $(NODE_DIR)/eslint.config.mjs $(NODE_DIR) conformance/drivers/node

test-node-types: setup-node-tools
	$(NODE_TSC) -p $(NODE_DIR)/tests/types/tsconfig.json --typeRoots $(NODE_TOOLS)/node_modules/@types

# npm pack → install the tarball into a fresh project → run the README quickstart.
test-node-package: build-node
	@rm -rf $(NODE_WORK)/package && mkdir -p $(NODE_WORK)/package
	cd $(NODE_DIR) && npm pack --silent --pack-destination $(NODE_WORK)/package >/dev/null
	cd $(NODE_WORK)/package && printf '{"name":"quickstart","private":true,"type":"module"}\n' > package.json \
	    && npm install --silent --no-audit --no-fund --offline ./opensandbox-node-*.tgz
	$(NODE_DIR)/tests/extract_quickstart.sh $(NODE_DIR)/README.md > $(NODE_WORK)/package/quickstart.mjs
	cd $(NODE_WORK)/package && $(CURDIR)/scripts/with-server.sh "$(SERVER_DEBUG)" node quickstart.mjs

# The tarball installed under the official name (npm alias to the file, offline), then
# programs written against the official README, ESM and CommonJS, unchanged.
test-node-alias: build-node setup-node-tools
	TSC=$(NODE_TSC) TYPE_ROOTS=$(NODE_TOOLS)/node_modules/@types \
	    scripts/with-server.sh "$(SERVER_DEBUG)" $(NODE_DIR)/tests/alias/run.sh $(NODE_WORK)/alias

# Ours (release addon) vs the official package from npm: `make bench` runs
# bindings/node/bench/bench.sh after this.
bench-prepare-node: setup-node build-release
	@mkdir -p $(NODE_WORK)/bench
	cp -f $(NODE_SO_RELEASE) $(NODE_WORK)/bench/opensandbox.node
	@cd $(NODE_WORK)/bench && { [ -d node_modules/@alibaba-group/opensandbox ] || \
	    { printf '{"name":"bench","private":true}\n' > package.json && \
	      npm install --silent --no-audit --no-fund $(NODE_OFFICIAL); }; }

bench-node: bench-prepare-node
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py node

BENCH_LANGS += node
BINDING_TESTS += test-node
SETUP_ALL += setup-node-tools
DRIVER_BUILDS += build-node
