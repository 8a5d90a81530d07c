# Thin wrappers over meson. Each target installs the Debian packages it needs when they are missing.
#   make run    build, then `gpuslice info` on this host's GPUs (or on the simulated GPU if none)
#   make test   build (warnings as errors) + ASan/UBSan build, run every test, fuzz briefly
#   make bench  run the benchmarks (on the GPU host: see bench/README.md)

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 20

BUILD_DEPS := gcc meson ninja-build pkg-config libcap-dev libseccomp-dev libjson-c-dev libyaml-dev
TEST_DEPS  := $(BUILD_DEPS) libcmocka-dev clang jq strace busybox-static runc crun util-linux procps podman golang-github-container-orchestrated-devices-container-device-interface-dev python3-jsonschema python3-yaml

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

.PHONY: all deps test-deps build run test fuzz bench clean

all: build

deps:
	$(call install_missing,$(BUILD_DEPS))

test-deps:
	$(call install_missing,$(TEST_DEPS))

# Tests off: `make run` needs only BUILD_DEPS. The simulated GPU (tests/fakegpu) is built all the
# same; tests/run-all.sh turns the tests on in this directory when `make test` runs.
$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=debugoptimized -Dtests=false

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	@tests/run-main.sh $(BUILD)

test: test-deps
	@tests/run-all.sh $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(FUZZ_SECONDS)

fuzz: test-deps
	@FUZZ_ONLY=1 tests/run-all.sh $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(FUZZ_SECONDS)

bench: build
	@bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
