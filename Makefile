# Thin wrappers over meson. Each target installs the Debian packages it needs when they are missing.
#   make run    build, then `gpuslice info` on this host's GPUs (or on the simulated GPU if none)
#   make test   build (warnings as errors) + ASan/UBSan build, run every test, fuzz briefly
#   make mutation  break a few behaviours on purpose in a scratch copy; each must fail its test
#   make bench  run the benchmarks (on the GPU host: see bench/RESULTS.md, "How to run them")
#   make install [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=/etc]   install (build dir build-install)
#   make uninstall [DESTDIR=]   remove what the last `make install` put there (an edited config stays)
#   make deb    the Debian packages (gpuslice, libgpuslice0, libgpuslice-dev) in build-deb/, then lintian

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_MUT  ?= build-mut
FUZZ_SECONDS ?= 10
BUILD_INSTALL ?= build-install
BUILD_DEB  ?= build-deb
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR    ?=

BUILD_DEPS := gcc meson ninja-build pkg-config libcap-dev libseccomp-dev libjson-c-dev libyaml-dev libmicrohttpd-dev scdoc libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libncurses-dev libcurl4-openssl-dev
DEB_DEPS   := $(BUILD_DEPS) debhelper dpkg-dev lintian
TEST_DEPS  := $(BUILD_DEPS) libcmocka-dev clang jq strace busybox-static runc crun containerd util-linux procps podman golang-github-container-orchestrated-devices-container-device-interface-dev python3-jsonschema python3-yaml python3-grpcio python3-grpc-tools prometheus curl openssl $(DEB_DEPS) debootstrap man-db tmux

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

.PHONY: all deps test-deps deb-deps build run test fuzz mutation bench clean install uninstall deb

all: build

deps:
	$(call install_missing,$(BUILD_DEPS))

test-deps:
	$(call install_missing,$(TEST_DEPS))

deb-deps:
	$(call install_missing,$(DEB_DEPS))

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

mutation: test-deps
	@tests/mutation/run.sh $(BUILD_MUT)

bench: build
	@bench/run.sh $(BUILD)

# Its own build directory, configured for PREFIX (the host config and hooks.d file under
# SYSCONFDIR, /etc: where gpuslice and podman look for them whatever the prefix).
install: deps
	@if [ -f $(BUILD_INSTALL)/build.ninja ]; then \
		meson configure $(BUILD_INSTALL) -Dprefix=$(PREFIX) -Dsysconfdir=$(SYSCONFDIR) >/dev/null; \
	else \
		meson setup $(BUILD_INSTALL) --buildtype=debugoptimized -Dtests=false -Dman=enabled \
			--prefix=$(PREFIX) --sysconfdir=$(SYSCONFDIR) --localstatedir=/var >/dev/null; \
	fi
	ninja -C $(BUILD_INSTALL)
	meson install -C $(BUILD_INSTALL) --no-rebuild --destdir "$(DESTDIR)"
	@packaging/uninstall.sh --record $(BUILD_INSTALL)
	@cfg="$(DESTDIR)$(SYSCONFDIR)/gpuslice/config.toml"; cmp -s packaging/config.toml "$$cfg" || \
		echo "Kept the edited $$cfg (an existing host config is never replaced; defaults: packaging/config.toml)"
	@[ -n "$(DESTDIR)" ] || [ "$$(id -u)" != 0 ] || ldconfig
	@echo "Installed. Services (not enabled): systemctl enable --now gpuslice-cdi.path gpuslice-cdi.service"

uninstall:
	@packaging/uninstall.sh $(BUILD_INSTALL) "$(DESTDIR)"

deb: deb-deps
	@packaging/build-deb.sh $(BUILD_DEB)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(BUILD_INSTALL) $(BUILD_DEB) $(BUILD_MUT)
