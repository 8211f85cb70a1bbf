/*
 * Pseudo-terminals for commands started with `pty` (docs/PROTOCOL.md 10): the
 * agent keeps the master, the command gets the slave as its controlling
 * terminal and stdio.
 */
#ifndef CELLVM_AGENT_PTY_H
#define CELLVM_AGENT_PTY_H

#include <stdint.h>

/* Largest window accepted, in either dimension (TIOCSWINSZ takes 16 bits). */
#define PTY_SIZE_MAX 4096u

/* Opens a new pty of `cols` x `rows`: the master non-blocking, both ends close-on-exec and
 * neither the agent's controlling terminal. Returns 0 or -errno. */
int pty_open(uint16_t cols, uint16_t rows, int *master, int *slave);
/* Sets the window size; the kernel sends SIGWINCH to the terminal's foreground job.
 * Returns 0 or -errno. */
int pty_resize(int master, uint16_t cols, uint16_t rows);

#endif
