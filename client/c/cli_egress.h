/* `cellvm egress`: a live sandbox's egress rules (egress_keeper.h). */
#ifndef CELLVM_CLIENT_CLI_EGRESS_H
#define CELLVM_CLIENT_CLI_EGRESS_H

#include <jansson.h>

/* `cellvm egress [--json] ID [RULES]`: shows or replaces them. An exit status. */
int cmd_egress(int argc, char **argv);
/* The variables user processes of a sandbox with egress get (HTTP_PROXY, ...),
 * a new object, or NULL when out of memory. */
json_t *cli_egress_envs(void);

#endif
