# linerate: `make demo` runs the tour, `make test` runs every test. Both set themselves up.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CARGO ?= cargo
APT_PACKAGES := iproute2 ethtool iputils-ping arping netcat-openbsd socat curl tcpdump tshark jq iperf3 libpcap-dev libhyperscan-dev nftables iptables openmpi-bin libopenmpi-dev fonts-dejavu-core pkg-config valgrind man-db groff-base ndisc6

.PHONY: demo man test setup setup-system setup-python build build-release py-develop test-rust test-python bench fuzz-tools fuzz-build fuzz clean

demo: build-release
	./target/release/linerate demo

test: setup build-release py-develop test-rust test-python

# A man page per command (from the command-line definition) in target/man: `man -l target/man/linerate-ping.1`.
man: build-release
	./target/release/linerate man target/man

setup: setup-system setup-python

# System packages the interop tests drive (real Linux peers). Installs only what is missing.
setup-system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install system packages:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	fi

# The Python venv with pinned packages (maturin, pytest, scapy, numpy).
setup-python: $(VENV)/.installed

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

build:
	$(CARGO) build --workspace

# The shipped binary carries the Hyperscan peer of `reproduce 004` when the library is
# installed (make setup installs it; `=` so the check runs after setup, when the recipe runs);
# without it the figure says so.
HYPERSCAN_FEATURE = $(shell pkg-config --exists libhs 2>/dev/null && echo --features hyperscan)

build-release:
	$(CARGO) build --release -p linerate-cli $(HYPERSCAN_FEATURE)

py-develop: setup-python
	cd crates/py && VIRTUAL_ENV=$(abspath $(VENV)) ../../$(VENV)/bin/maturin develop --release -q

# Every test binary runs (--no-fail-fast); tests that could not run (no root, a missing tool)
# fail, and are listed again at the end.
test-rust:
	@mkdir -p target; set -o pipefail; \
	$(CARGO) test --workspace --profile ci --no-fail-fast 2>&1 | tee target/test-rust.log; status=$$?; \
	if grep -q "^NOT RUN:" target/test-rust.log; then \
	  echo "tests that could not run (they fail; run make test as root with make setup done):"; \
	  grep -B1 "^NOT RUN:" target/test-rust.log | grep -o "thread '[^']*'" | sed "s/thread /  /" | sort -u; \
	fi; exit $$status

test-python: py-develop
	$(PY) -m pytest -q crates/py/tests

bench: build-release
	./target/release/linerate bench link
	./target/release/linerate bench udp
	./target/release/linerate bench tcp
	./target/release/linerate bench collective

# Fuzz targets (see fuzz/README.md): the nightly toolchain and cargo-fuzz (installed if missing).
FUZZ_SECS ?= 60
TARGETS ?= $(basename $(notdir $(wildcard fuzz/fuzz_targets/*.rs)))

fuzz-tools:
	@$(CARGO) +nightly --version >/dev/null 2>&1 || { echo "fuzzing needs the nightly toolchain: rustup toolchain install nightly" >&2; exit 1; }
	@$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked

fuzz-build: fuzz-tools
	cd fuzz && $(CARGO) +nightly fuzz build

# `make fuzz [FUZZ_SECS=60] [TARGETS="fuzz_tcp fuzz_ipv4"]`: run each target for FUZZ_SECS
# seconds, one after another; fails naming the targets that crashed (inputs in fuzz/artifacts/).
fuzz: fuzz-build
	@failed=""; for t in $(TARGETS); do \
	  echo "== $$t: $(FUZZ_SECS) s"; \
	  mkdir -p fuzz/corpus/$$t fuzz/artifacts/$$t; \
	  (cd fuzz && $(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECS) -print_final_stats=1) || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashed:$$failed (reproduce: cd fuzz && cargo +nightly fuzz run TARGET artifacts/TARGET/crash-...)" >&2; exit 1; fi; \
	echo "fuzz: no crash in $(words $(TARGETS)) targets, $(FUZZ_SECS) s each"

clean:
	$(CARGO) clean
	rm -rf $(VENV)
