/*
 * The executor's fds 1 and 2 as pipes it reads itself, as ipykernel's
 * OutStream captures them: what C code, os.write() and child processes write
 * there joins the cell's stdout/stderr in order with the text Python prints
 * (stream_sink.h), where it used to overtake text still buffered.
 *
 * A plain thread (no GIL, all signals blocked) forwards captured bytes as they
 * come; a fatal signal (a C extension's crash, abort()) first writes out what
 * is buffered and captured, so a crash's last words are not lost with the
 * process. Python contexts only: bash and Node write to the agent directly.
 */
#ifndef CELLVM_FD_CAPTURE_H
#define CELLVM_FD_CAPTURE_H

/* Moves the agent's pipes off fds 1 and 2 (close-on-exec copies), puts a pipe
 * in their place and starts the reader. 0 or a negative errno, with `step`
 * naming what failed; fds 1 and 2 are then as they were, unless only the
 * thread's signal mask could not be restored (the capture runs). */
int fd_capture_start(const char **step);

#endif
