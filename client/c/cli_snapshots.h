/* E2B's snapshots API for the CLI and the Python SDK (cli_snapshots.c), on
 * the store of kept_snapshots.h. */
#ifndef CELLVM_CLIENT_CLI_SNAPSHOTS_H
#define CELLVM_CLIENT_CLI_SNAPSHOTS_H

#include "kept_snapshots.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

int cmd_create_snapshot(int argc, char **argv);
int cmd_list_snapshots(int argc, char **argv);
int cmd_delete_snapshot(int argc, char **argv);
/* Whether create's --template names a kept snapshot rather than the image:
 * true with it in `sn`. */
bool sbx_find_snapshot(const char *template_, struct ckept *sn);
/* `cellvm create --template REF` of kept snapshot `sn`: a copy of it resumed
 * as a sandbox of its own (a new generation) with `metadata` (a JSON
 * object's text), `egress` rules (or none), E2B's onTimeout "pause" if asked,
 * a deadline `timeout_s` from now, its connection sent over `pass_fd` (0:
 * none) and held by `holder` (0: none), its entry printed as cellvm resume
 * --json prints one. The exit status: 0, 2 (no such snapshot) or 3. */
int sbx_create_from_snapshot(const struct ckept *sn, const char *metadata, json_t *egress,
                             bool pause_at_timeout, double timeout_s, int pass_fd, pid_t holder);

#endif
