/* A warm Node.js for the next JavaScript or TypeScript context (docs/JAVASCRIPT.md). */
#ifndef CELLVM_NODE_SPARE_H
#define CELLVM_NODE_SPARE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* True for the languages a Node.js spare serves. */
bool node_spare_wants(const char *language);

/*
 * Forks (unless one is there) a confined executor that execs `node driver.js
 * --spare` on fds 1, 2, 3 of its own (pipes and a socket whose other ends this
 * zygote keeps): Node.js starts and loads the driver before any context needs it,
 * and what `language` (the last context's: the likely next one's) needs, such as
 * TypeScript's compiler.
 */
void node_spare_start(PyObject *kernel, const char *language);

/*
 * Gives the spare its context (X_ASSIGN{language, cwd}) and waits for its answer.
 * On success returns its pid with `fds` set to the ends the agent takes over
 * (control socket, stdout, stderr); else a negative errno (no spare, it died,
 * it cannot enter `cwd`): the caller starts the executor another way. The spare
 * is used up either way.
 */
pid_t node_spare_assign(const char *language, const char *cwd, int fds[3]);

/* Z_SPAWNED{context, pid, fds: 3} with the three fds (closed here afterwards). */
int node_spare_send_spawned(int sock, uint32_t id, const char *context, pid_t pid,
                            const int fds[3]);

/* Ends the spare (its socket closes: the driver exits). */
void node_spare_drop(void);
/* Kills and drops a spare started in another epoch (or before any): a copy of a snapshot
 * must not hand out a Node.js whose generators every copy shares. */
void node_spare_drop_unless_epoch(uint64_t epoch);

#endif
