# cellvm top-level build. Each component keeps its rules in its own build.mk;
# this file holds what they share. `make` builds the host-side binaries,
# `make test` runs every test (C unit tests under ASan/UBSan, then pytest).

PYTHON      ?= /usr/bin/python3
PY_CONFIG   ?= /usr/bin/python3-config
CC          ?= gcc
SAN         ?= 0

CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -fno-strict-aliasing \
               -Iprotocol
ifeq ($(SAN),1)
B           := build/san
CFLAGS_OPT  := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined
LDFLAGS_SAN := -fsanitize=address,undefined
else
B           := build
CFLAGS_OPT  := -O2
LDFLAGS_SAN :=
endif
CFLAGS      := $(CFLAGS_BASE) $(CFLAGS_OPT) $(EXTRA_CFLAGS)
LDFLAGS     := $(LDFLAGS_SAN) $(EXTRA_LDFLAGS)

.PHONY: all deps demo demo-dev test conformance check-c fuzz format clean snapshot
all: $(B)/cellvm-agent $(B)/cellvm-executor $(B)/cellvm

include protocol/build.mk
include confine/build.mk
include common/build.mk
include agent/build.mk
include python-embed/build.mk
include client/c/build.mk
include fuzz/build.mk
-include init/build.mk
-include image-build/build.mk
-include oci/build.mk

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CFLAGS_$(subst /,_,$(dir $<))) -MMD -MP -c -o $@ $<

-include $(shell find $(B) -name '*.d' -type f 2>/dev/null)

deps:
	.ci/install-deps

# The sales-CSV chart example in a micro-VM: builds the image, boots it under
# QEMU (KVM when usable, else TCG), uploads the CSV, writes the chart here.
demo: deps
	$(MAKE) all
	$(MAKE) image
	$(PYTHON) client/python/examples/sales_chart.py --vm --image $(B)/image \
		--out build/demo/sales_chart.png

# The same in dev mode: the agent on a Unix socket on this machine, no VM.
demo-dev: deps
	$(MAKE) all
	$(PYTHON) client/python/examples/sales_chart.py --out build/demo/sales_chart.png

test: deps
	tests/run

# E2B's own code-interpreter tests (../shared/e2b_conformance) against dev-mode
# agents, with the counts per class, the pytest modules that compare cellvm
# with a reference (the notebooks against ipykernel, E2B's git tests), then
# E2B's own JS suites against `cellvm serve` (docs/CONFORMANCE.md); .ci/run
# runs all three.
conformance: all
	tests/conformance/run
	tests/conformance/run-reference
	CELLVM_JS_NO_MAKE=1 tests/conformance_js/run

# The template Sandbox.create() restores from (docs/SNAPSHOTS.md): build/image
# booted once, its preloads done, saved into the user's cache (~20 s under TCG;
# create() would build it on first use otherwise).
snapshot: image $(B)/cellvm
	$(B)/cellvm snapshot create --image $(B)/image

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
