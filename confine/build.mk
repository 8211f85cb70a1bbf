# confine/: the confinement of user code (confine.h, docs/SECURITY.md), the
# library $(CONFINE_LIB). The agent links it (it sets the policy, confines the
# commands it spawns and builds its own filters on the common denials), and so
# does the executor (each executor applies the policy right after fork).
CONFINE_SRCS := confine/confine.c confine/confine_policy.c confine/confine_seccomp.c
CONFINE_OBJS := $(CONFINE_SRCS:%.c=$(B)/%.o)
CONFINE_LIB  := $(B)/libcellvm-confine.a
CONFINE_LIBS := -lseccomp

$(CONFINE_LIB): $(CONFINE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# C unit tests of the policy's text form and the user-code seccomp filter
# (tests/c/test_confine_*.c): part of `make check-c`.
CONFINE_TESTS := $(B)/tests/c/test_confine_policy $(B)/tests/c/test_confine_seccomp

$(CONFINE_TESTS): $(B)/tests/c/%: $(B)/tests/c/%.o $(CONFINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(CONFINE_LIB) $(CONFINE_LIBS)

.PHONY: check-c-confine
check-c-confine: $(CONFINE_TESTS)
	@set -e; for t in $(CONFINE_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-confine
