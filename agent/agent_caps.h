/* The agent's own capabilities after setup (agent_caps.c). */
#ifndef CELLVM_AGENT_AGENT_CAPS_H
#define CELLVM_AGENT_AGENT_CAPS_H

/* After confine_agent_setup: keeps only the capabilities serving needs, and empties the
 * bounding set of the rest. 0 or -errno. */
int agent_drop_capabilities(void);

#endif
