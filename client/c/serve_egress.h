/*
 * A serve sandbox's egress (docs/NETWORK.md): the guest's proxy connections
 * arrive as streams over its agent connection (EGRESS_ACCEPT, docs/PROTOCOL.md
 * section 13); each is read, checked against the sandbox's rules, resolved,
 * checked again, dialled and relayed here.
 */
#ifndef CELLVM_CLIENT_SERVE_EGRESS_H
#define CELLVM_CLIENT_SERVE_EGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "egress_policy.h"

struct sandbox;

/* The guest's proxy address, as user processes' HTTP_PROXY names it. */
#define SERVE_EGRESS_PROXY "http://127.0.0.1:3128"

/* E2B's `network` object (allowOut, denyOut, rules) and allow_internet_access
 * (`aia`, may be NULL) as a policy: 1 when they ask for egress (allow or deny
 * entries), 0 when not (`p` is then empty), -EINVAL with `why`. */
int serve_egress_policy_of(json_t *network, json_t *aia, struct egress_policy *p, char *why,
                           size_t whylen);
/* The proxy variables user processes get (HTTP_PROXY, ..., both cases) into `envs`. */
int serve_egress_envs(json_t *envs);
/* Starts `s`'s egress with E2B's `network` object and allow_internet_access
 * (`aia`, may be NULL). 0, or a negative errno with `why`. */
int serve_egress_start(struct sandbox *s, json_t *network, json_t *aia, char *why, size_t whylen);
/* Replaces the rules of `s` with an update's body (E2B's PUT
 * /sandboxes/{id}/network): 0, -EINVAL with `why`, or -ENOENT when `s` has no
 * egress. */
int serve_egress_update(struct sandbox *s, json_t *body, char *why, size_t whylen);
/* {network, allow_internet_access} of `s`'s rules (a new reference, to keep
 * with a paused record), or NULL when it has no egress. */
json_t *serve_egress_rules(struct sandbox *s);
/* Frees the egress state of a sandbox being freed (its streams ended with its
 * connection). */
void serve_egress_free(struct sandbox *s);

#endif
