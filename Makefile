# linerate: `make demo` runs the tour, `make test` runs every test. Both set themselves up.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CARGO ?= cargo
APT_PACKAGES := iproute2 iputils-ping arping netcat-openbsd socat curl tcpdump tshark iperf3 libpcap-dev libhyperscan-dev nftables iptables openmpi-bin libopenmpi-dev

.PHONY: demo test setup setup-system setup-python build build-release py-develop test-rust test-python bench fuzz-build clean

demo: build-release
	./target/release/linerate demo

test: setup build-release py-develop test-rust test-python

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

build-release:
	$(CARGO) build --release -p linerate-cli

py-develop: setup-python
	cd crates/py && VIRTUAL_ENV=$(abspath $(VENV)) ../../$(VENV)/bin/maturin develop --release -q

test-rust:
	$(CARGO) test --workspace --release

test-python: py-develop
	$(PY) -m pytest -q crates/py/tests

bench: build-release
	./target/release/linerate bench link
	./target/release/linerate bench udp
	./target/release/linerate bench tcp
	./target/release/linerate bench collective

# Fuzz targets (see fuzz/README.md); needs the nightly toolchain and cargo-fuzz.
fuzz-build:
	cd fuzz && $(CARGO) +nightly fuzz build

clean:
	$(CARGO) clean
	rm -rf $(VENV)
