# python-embed/: the executor binary $(B)/cellvm-executor (zygote + notebook kernel).
# The notebook kernel (the package kernel/, module _cellvm_kernel), embedded_import.py
# (which imports it), cellvm_pretty.py, cellvm_charts.py, bash_kernel.py (the bash
# contexts' driver, module cellvm_bash) and reseed.py (module cellvm_reseed: what a
# snapshot's copies redo, docs/SNAPSHOTS.md) are compiled into the binary as C arrays.

EXEC_SRCS := python-embed/main.c python-embed/zygote.c python-embed/executor_proc.c \
             python-embed/cellvm_module.c python-embed/pycbor.c python-embed/ctl_channel.c \
             python-embed/png_write.c python-embed/output_flusher.c python-embed/out_stream.c \
             python-embed/stream_sink.c python-embed/fd_capture.c \
             python-embed/cell_hash.c python-embed/cell_depth.c python-embed/executor_language.c \
             python-embed/node_exec.c python-embed/node_spare.c python-embed/executor_epoch.c
EXEC_OBJS := $(EXEC_SRCS:%.c=$(B)/%.o) $(B)/python-embed/embedded_py.o
EXEC_PY   := python-embed/embedded_import.py $(wildcard python-embed/kernel/*.py python-embed/kernel/*/*.py) \
             $(wildcard python-embed/cellvm_pretty.py) $(wildcard python-embed/cellvm_charts.py) \
             python-embed/bash_kernel.py python-embed/reseed.py

PY_EMBED_CFLAGS := $(shell $(PY_CONFIG) --includes)
# libpython linked in statically, as Debian's own /usr/bin/python3.11 has it:
# the shared libpython3.11.so runs Python code 1.4-2x slower here (position-
# independent code, calls through the PLT; `print` 10,000 times: 4.1 vs 2.6 ms;
# docs/BENCHMARKS.md). Its objects are not position-independent, hence -no-pie;
# -export-dynamic lets extension modules (numpy, ...) find the C API.
PY_STATIC_LIB   := $(shell $(PYTHON) -c 'import sysconfig as s; print(s.get_config_var("LIBPL") + "/" + s.get_config_var("LIBRARY"))')
PY_EMBED_LIBS   := -no-pie $(PY_STATIC_LIB) \
                   $(shell $(PYTHON) -c 'import sysconfig as s; print(s.get_config_var("LINKFORSHARED"), s.get_config_var("LIBS"), s.get_config_var("SYSLIBS"), s.get_config_var("MODLIBS"))')

# Python's headers must come first and use no -Werror-unfriendly flags of python3-config --cflags.
CFLAGS_python-embed_ := $(PY_EMBED_CFLAGS) -Ipython-embed -DCELLVM_PYTHON='"$(PYTHON)"'
CFLAGS_$(B)_python-embed_ := $(CFLAGS_python-embed_)

# The package's directories too: a module removed from one changes it.
$(B)/python-embed/embedded_py.c: python-embed/embed_sources.py $(EXEC_PY) python-embed/kernel \
                                 python-embed/kernel/magics
	@mkdir -p $(dir $@)
	$(PYTHON) python-embed/embed_sources.py $@ _cellvm_import=python-embed/embedded_import.py \
		_cellvm_kernel=python-embed/kernel cellvm_pretty=python-embed/cellvm_pretty.py \
		cellvm_charts=python-embed/cellvm_charts.py cellvm_bash=python-embed/bash_kernel.py \
		cellvm_reseed=python-embed/reseed.py

$(B)/python-embed/embedded_py.o: $(B)/python-embed/embedded_py.c
	$(CC) $(CFLAGS) -Ipython-embed -c -o $@ $<

# Uses protocol/ (the codec) and confine/ (each executor confines itself after fork).
$(B)/cellvm-executor: $(EXEC_OBJS) $(PROTO_LIB) $(CONFINE_LIB) $(PY_STATIC_LIB) python-embed/build.mk
	$(CC) $(LDFLAGS) -o $@ $(EXEC_OBJS) $(PROTO_LIB) $(CONFINE_LIB) $(PY_EMBED_LIBS) -lpng -lz \
		$(PROTO_LIBS) $(CONFINE_LIBS)

# C unit tests of the cell file-name hash and the output sinks (tests/c/): part of `make check-c`.
EXEC_TESTS := $(B)/tests/c/test_cell_hash $(B)/tests/c/test_stream_sink

$(B)/tests/c/test_cell_hash: $(B)/tests/c/test_cell_hash.o $(B)/python-embed/cell_hash.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_stream_sink: $(B)/tests/c/test_stream_sink.o $(B)/python-embed/stream_sink.o
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread

.PHONY: check-c-executor
check-c-executor: $(EXEC_TESTS)
	@set -e; for t in $(EXEC_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-executor

