/* `cellvm fork` (cli_fork.c): E2B's fork of a live sandbox for the CLI and the
 * Python SDK. */
#ifndef CELLVM_CLIENT_CLI_FORK_H
#define CELLVM_CLIENT_CLI_FORK_H

int cmd_fork(int argc, char **argv);

#endif
