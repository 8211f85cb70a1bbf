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
 * (`aia`, may be NULL) as a policy: 1 when they have allow or deny entries, 0
 * when not (`p` then denies every address if `aia` is false, else is empty),
 * -EINVAL with `why`. */
int serve_egress_policy_of(json_t *network, json_t *aia, struct egress_policy *p, char *why,
                           size_t whylen);
/* The proxy variables user processes get (HTTP_PROXY, ..., both cases) into `envs`. */
int serve_egress_envs(json_t *envs);
/* Starts the egress of `s` (every sandbox of the API has one) with `rules`, an object of
 * E2B's `network` and `allow_internet_access` (a create's body, or what
 * serve_egress_rules kept), or NULL when it was created without any: its
 * connections are then refused, naming the PUT that gives it some. A pooled
 * clone's was started without rules by the pool: `rules` are only set then.
 * 0, or a negative errno with `why`. */
int serve_egress_start(struct sandbox *s, json_t *rules, char *why, size_t whylen);
/* The launcher's egress (egress_keeper.c): serve_egress_start with the rules
 * in file `path` ({network, allow_internet_access}), read again whenever the
 * file is replaced (cellvm egress ID JSON). 0, or a negative errno with `why`. */
int serve_egress_follow(struct sandbox *s, const char *path, char *why, size_t whylen);
/* Who logs (stderr): "cellvm serve", or the launcher's keeper's name. */
extern const char *serve_egress_who;
/* Replaces the rules of `s` with an update's body (E2B's PUT
 * /sandboxes/{id}/network; a sandbox without rules gets its first): 0, -EINVAL
 * with `why`, or -ENOENT when `s` has no egress (an MCP session's sandbox, or
 * its start failed on resume). */
int serve_egress_update(struct sandbox *s, json_t *body, char *why, size_t whylen);
/* {network, allow_internet_access} of `s`'s rules (a new reference, to keep
 * with a paused record), or NULL when it has no egress or no rules yet. */
json_t *serve_egress_rules(struct sandbox *s);
/* E2B's SandboxDetail `network` (its SandboxNetworkConfig, the egress proxy's
 * password left out, as E2B's GET gives it) and `allowInternetAccess` of `s`,
 * as a create's body gave them (none: absent) and a PUT .../network changed
 * the egress fields since: set from the create's body (serve_egress_show), or
 * from what serve_egress_shown gave and a paused record kept
 * (serve_egress_show_kept); a new reference ({network, allowInternetAccess}),
 * or NULL when `s` has no egress or no create set it. 0, -ENOENT (no egress)
 * or -ENOMEM. */
int serve_egress_show(struct sandbox *s, json_t *body);
int serve_egress_show_kept(struct sandbox *s, json_t *shown);
json_t *serve_egress_shown(struct sandbox *s);
/* The same kept with paused sandbox `id`'s record (serve_pause.c), or NULL. */
json_t *serve_paused_shown(const char *id);
/* Frees the egress state of a sandbox being freed (its streams ended with its
 * connection). */
void serve_egress_free(struct sandbox *s);

#endif
