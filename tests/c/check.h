/*
 * The C unit tests' assertion: CHECK counts a result and reports a failure
 * with its place, and the test goes on. check_report() prints the line the
 * test runner reads ("NAME: N passed, M failed") and gives the exit status.
 */
#ifndef CELLVM_TESTS_CHECK_H
#define CELLVM_TESTS_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (cond) {                                                                        \
                        check_passed++;                                                            \
                } else {                                                                           \
                        check_failed++;                                                            \
                        fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__,       \
                                __func__, #cond);                                                  \
                }                                                                                  \
        } while (0)

static inline int check_report(const char *name)
{
        printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
        return check_failed ? 1 : 0;
}

#endif
