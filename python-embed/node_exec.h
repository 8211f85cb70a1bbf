/* JavaScript and TypeScript executors: Node.js running cellvm's driver
 * (node-executor/, docs/JAVASCRIPT.md) on the executor's fds. */
#ifndef CELLVM_NODE_EXEC_H
#define CELLVM_NODE_EXEC_H

/* Environment variables that override where Node.js and the driver are. */
#define NODE_EXEC_NODE_ENV "CELLVM_NODE"
#define NODE_EXEC_DRIVER_ENV "CELLVM_JS_DRIVER"

#include <stdbool.h>
#include <stddef.h>

/*
 * In an executor attached to its context and confined: replaces the process
 * with `node driver.js --language <language>`, fd `ctl_fd` (3) kept open for it;
 * with `spare`, `--spare` too: a warm spare that waits for X_ASSIGN on fd 3,
 * having loaded what `language` needs. Returns only on failure, with a negative
 * errno and `*what` naming the step.
 */
int node_exec(const char *language, bool spare, int ctl_fd, const char **what);

/* 0 if Node.js and the driver are where node_exec() looks; else a negative errno and,
 * in `why`, which is missing (for the agent's error to the client). */
int node_exec_available(char *why, size_t size);

#endif
