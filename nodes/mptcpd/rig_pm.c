// The rig's path-management plugin for mptcpd (net.mptcp.path_manager=userspace on a sender).
//
// What it does, and nothing else (it never announces an address: the rig re-announces nothing):
// - once a connection this node opened is established, and whenever the peer announces an
//   address (ADD_ADDR), it creates a subflow from every `subflow` endpoint (the node's radios in
//   use, as the node agent's routing plan sets them) to every address the peer has. The radio's
//   own routing table, from the same plan, decides which of these can leave: in paired mode a
//   radio's table reaches only its own receiver side, so the other tries fail at once with no
//   packet sent; in full mesh every table reaches every side;
// - when a radio interface comes back up (mptcpd reports it as a new interface: its monitor
//   drops an interface while it is down, and re-reports no address that stayed on it), it
//   re-creates, on every live connection, the subflows that radio had: the stalled one is
//   removed and a new one joins. Until the agent has put the radio's routes back a create fails,
//   so it is tried again every RETAKE_EVERY_S, at most RETAKE_TRIES times, until it is established.
//
// Written against mptcpd's plugin API (libmptcpd3-dev: mptcpd/plugin.h, path_manager.h).

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <ell/ell.h>

#include <mptcpd/addr_info.h>
#include <mptcpd/network_monitor.h>
#include <mptcpd/path_manager.h>
#include <mptcpd/plugin.h>
#include <mptcpd/types.h>

#include "sockaddrs.h"

#define RETAKE_FIRST_S_MS 200 // the agent's link_up puts the radio's routes back within this
#define RETAKE_EVERY_S 1
#define RETAKE_TRIES 10
#define ASKED_US 1500000 // a subflow asked for this recently is not asked for again: its join is under way

// A path a connection had: local -> remote (ports 0), the ids the kernel knows them by.
struct path {
        struct sockaddr_storage local, remote;
        mptcpd_aid_t remote_id;
        bool backup;
};

// A live subflow (with its ports) and when mptcpd reported it established.
struct subflow {
        struct sockaddr_storage local, remote;
        uint64_t since_us;
};

struct conn {
        mptcpd_token_t token;
        struct sockaddr_storage local, remote; // the initial subflow's
        struct l_queue *remotes;               // struct path with only remote/remote_id: the peer's addresses
        struct l_queue *paths;                 // struct path: every path that was ever established
        struct l_queue *subflows;              // struct subflow
        struct l_queue *asked;                 // struct subflow: the subflows asked for, ports 0
};

// A radio back up: its paths to re-create on every connection.
struct retake {
        int index;
        unsigned tries;
        unsigned pending; // subflows the last try asked for
        uint64_t since_us;
        struct l_timeout *timer;
};

static struct l_queue *conns;
static struct l_queue *retakes;
static struct mptcpd_pm *the_pm;

// -- connections ---------------------------------------------------------------------------

static bool conn_has_token(void const *c, void const *token)
{
        return ((struct conn const *) c)->token == *(mptcpd_token_t const *) token;
}

static struct conn *conn_find(mptcpd_token_t token)
{
        return l_queue_find(conns, conn_has_token, &token);
}

static void conn_free(void *p)
{
        struct conn *c = p;
        l_queue_destroy(c->remotes, l_free);
        l_queue_destroy(c->paths, l_free);
        l_queue_destroy(c->subflows, l_free);
        l_queue_destroy(c->asked, l_free);
        l_free(c);
}

static void remember_remote(struct conn *c, mptcpd_aid_t id, struct sockaddr const *addr)
{
        for (struct l_queue_entry const *e = l_queue_get_entries(c->remotes); e; e = e->next)
                if (sa_same_host(SA(&((struct path *) e->data)->remote), addr))
                        return;
        struct path *r = l_new(struct path, 1);
        sa_copy(&r->remote, addr, false);
        r->remote_id = id;
        l_queue_push_tail(c->remotes, r);
}

static mptcpd_aid_t remote_id(struct conn const *c, struct sockaddr const *addr)
{
        for (struct l_queue_entry const *e = l_queue_get_entries(c->remotes); e; e = e->next)
                if (sa_same_host(SA(&((struct path *) e->data)->remote), addr))
                        return ((struct path *) e->data)->remote_id;
        return 0;
}

// A live subflow local -> remote established at or after since_us, or one asked for within ASKED_US.
static bool under_way(struct conn const *c, struct sockaddr const *local, struct sockaddr const *remote,
                      uint64_t since_us)
{
        uint64_t now = l_time_now();
        for (struct l_queue_entry const *e = l_queue_get_entries(c->subflows); e; e = e->next) {
                struct subflow const *s = e->data;
                if (s->since_us >= since_us && sa_same_host(SA(&s->local), local) && sa_same_host(SA(&s->remote), remote))
                        return true;
        }
        for (struct l_queue_entry const *e = l_queue_get_entries(c->asked); e; e = e->next) {
                struct subflow const *s = e->data;
                if (now - s->since_us < ASKED_US && sa_same_host(SA(&s->local), local) &&
                    sa_same_host(SA(&s->remote), remote))
                        return true;
        }
        return false;
}

static void asked(struct conn *c, struct sockaddr const *local, struct sockaddr const *remote)
{
        struct subflow *s = NULL;
        for (struct l_queue_entry const *e = l_queue_get_entries(c->asked); e; e = e->next)
                if (sa_same_host(SA(&((struct subflow *) e->data)->local), local) &&
                    sa_same_host(SA(&((struct subflow *) e->data)->remote), remote))
                        s = e->data;
        if (!s) {
                s = l_new(struct subflow, 1);
                sa_copy(&s->local, local, false);
                sa_copy(&s->remote, remote, false);
                l_queue_push_tail(c->asked, s);
        }
        s->since_us = l_time_now();
}

// Ask the kernel for the subflow local -> remote (the remote at the connection's port), unless
// one is live since since_us or under way.
static void create(struct conn *c, mptcpd_aid_t local_id, struct sockaddr const *local,
                   mptcpd_aid_t rid, struct sockaddr const *remote, bool backup, uint64_t since_us)
{
        struct sockaddr_storage l, r;
        char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

        if (local->sa_family != remote->sa_family || under_way(c, local, remote, since_us))
                return;
        asked(c, local, remote);
        sa_copy(&l, local, false);
        sa_copy(&r, remote, false);
        sa_set_port(&r, sa_port(SA(&c->remote)));
        int err = mptcpd_pm_add_subflow(the_pm, c->token, local_id, rid, SA(&l), SA(&r), backup);
        l_info("rig_pm: token 0x%08x: subflow %s -> %s %s", c->token, sa_str(SA(&l), a, sizeof(a)),
               sa_str(SA(&r), b, sizeof(b)), err ? "not requested" : "requested");
}

// -- the node's subflow endpoints (its radios in use), dumped from the kernel for each task ----

enum task_kind { ALL_REMOTES, ONE_REMOTE, RETAKE };

struct task {
        enum task_kind kind;
        mptcpd_token_t token;
        struct sockaddr_storage remote; // ONE_REMOTE
        mptcpd_aid_t remote_id;
        int index;                      // RETAKE: the interface's
};

static void on_endpoint(struct mptcpd_addr_info const *info, void *data);

static bool retake_of(void const *r, void const *index)
{
        return ((struct retake const *) r)->index == *(int const *) index;
}

static void task_done(void *data)
{
        l_free(data);
}

static void with_endpoints(struct task t)
{
        struct task *copy = l_new(struct task, 1);
        *copy = t;
        if (mptcpd_kpm_dump_addrs(the_pm, on_endpoint, copy, task_done) != 0) {
                l_error("rig_pm: the kernel's MPTCP endpoints could not be listed");
                l_free(copy);
        }
}

static bool fresh_subflow(struct conn const *c, struct path const *p, uint64_t since_us)
{
        for (struct l_queue_entry const *e = l_queue_get_entries(c->subflows); e; e = e->next) {
                struct subflow const *s = e->data;
                if (s->since_us >= since_us && sa_same_host(SA(&s->local), SA(&p->local)) &&
                    sa_same_host(SA(&s->remote), SA(&p->remote)))
                        return true;
        }
        return false;
}

// The paths a returning radio (an endpoint on it) had on connection c: each re-created.
static void retake_on(struct conn *c, struct retake *rt, struct mptcpd_addr_info const *info)
{
        struct sockaddr const *local = mptcpd_addr_info_get_addr(info);
        for (struct l_queue_entry const *e = l_queue_get_entries(c->paths); e; e = e->next) {
                struct path const *p = e->data;
                if (!sa_same_host(SA(&p->local), local) || fresh_subflow(c, p, rt->since_us))
                        continue;
                if (rt->tries == 1) // the stalled subflows of the path: replaced, not kept beside the new one
                        for (struct l_queue_entry const *s = l_queue_get_entries(c->subflows); s; s = s->next) {
                                struct subflow const *old = s->data;
                                if (sa_same_host(SA(&old->local), local) && sa_same_host(SA(&old->remote), SA(&p->remote)))
                                        mptcpd_pm_remove_subflow(the_pm, c->token, SA(&old->local), SA(&old->remote));
                        }
                create(c, mptcpd_addr_info_get_id(info), local, p->remote_id, SA(&p->remote), p->backup, rt->since_us);
                rt->pending++;
        }
}

static void on_endpoint(struct mptcpd_addr_info const *info, void *data)
{
        struct task const *t = data;
        if (!info || !(mptcpd_addr_info_get_flags(info) & MPTCPD_ADDR_FLAG_SUBFLOW))
                return;
        mptcpd_aid_t id = mptcpd_addr_info_get_id(info);
        struct sockaddr const *local = mptcpd_addr_info_get_addr(info);
        bool backup = mptcpd_addr_info_get_flags(info) & MPTCPD_ADDR_FLAG_BACKUP;

        if (t->kind == RETAKE) {
                struct retake *rt = l_queue_find(retakes, retake_of, &t->index); // gone: it ended meanwhile
                if (!rt || mptcpd_addr_info_get_index(info) != rt->index)
                        return;
                for (struct l_queue_entry const *e = l_queue_get_entries(conns); e; e = e->next)
                        retake_on(e->data, rt, info);
                return;
        }
        struct conn *c = conn_find(t->token);
        if (!c)
                return;
        if (t->kind == ONE_REMOTE) {
                create(c, id, local, t->remote_id, SA(&t->remote), backup, 0);
                return;
        }
        if (backup && sa_same_host(local, SA(&c->local))) { // as the kernel's would: the initial subflow too
                int err = mptcpd_pm_set_backup(the_pm, c->token, SA(&c->local), SA(&c->remote), true);
                l_info("rig_pm: token 0x%08x: the initial subflow %s backup", c->token, err ? "not set" : "set");
        }
        for (struct l_queue_entry const *e = l_queue_get_entries(c->remotes); e; e = e->next) {
                struct path const *r = e->data;
                if (sa_same_host(local, SA(&c->local)) && sa_same_host(SA(&r->remote), SA(&c->remote)))
                        continue; // the initial subflow
                create(c, id, local, r->remote_id, SA(&r->remote), backup, 0);
        }
}

// -- a radio back up -----------------------------------------------------------------------

static void retake_free(void *p)
{
        struct retake *rt = p;
        l_timeout_remove(rt->timer);
        l_free(rt);
}

static void retake_tick(struct l_timeout *timer, void *data)
{
        struct retake *rt = data;
        if (rt->tries >= RETAKE_TRIES || (rt->tries > 0 && rt->pending == 0)) { // every path taken back
                l_info("rig_pm: interface %d: retake ends after %u tries", rt->index, rt->tries);
                l_queue_remove(retakes, rt);
                retake_free(rt);
                return;
        }
        rt->tries++;
        rt->pending = 0;
        with_endpoints((struct task) { .kind = RETAKE, .index = rt->index });
        l_timeout_modify(timer, RETAKE_EVERY_S);
}

static void rig_new_interface(struct mptcpd_interface const *i, struct mptcpd_pm *pm)
{
        (void) pm;
        if (l_queue_isempty(conns) || l_queue_find(retakes, retake_of, &i->index))
                return;
        struct retake *rt = l_new(struct retake, 1);
        rt->index = i->index;
        rt->since_us = l_time_now();
        rt->timer = l_timeout_create_ms(RETAKE_FIRST_S_MS, retake_tick, rt, NULL);
        l_queue_push_tail(retakes, rt);
        l_info("rig_pm: interface %s is back: its subflows are re-created", i->name);
}

// -- connection events ---------------------------------------------------------------------

// Whether this namespace's kernel leaves subflows to userspace: with its own path manager in
// charge the plugin stays out (a node's mptcpd may run while a campaign names `kernel`).
static bool userspace_mode(void)
{
        // path_manager (kernel, userspace) where the kernel has it, else pm_type (0, 1)
        static char const *const sysctls[] = { "/proc/sys/net/mptcp/path_manager", "/proc/sys/net/mptcp/pm_type" };
        for (size_t n = 0; n < 2; n++) {
                char mode[16] = "";
                FILE *f = fopen(sysctls[n], "re");
                if (!f)
                        continue;
                if (!fgets(mode, sizeof(mode), f))
                        mode[0] = '\0';
                fclose(f);
                return !strncmp(mode, n == 0 ? "userspace" : "1", n == 0 ? 9 : 1);
        }
        return false;
}

static void rig_new_connection(mptcpd_token_t token, struct sockaddr const *laddr, struct sockaddr const *raddr,
                               bool server_side, struct mptcpd_pm *pm)
{
        (void) pm;
        if (server_side || conn_find(token) || !userspace_mode()) // only the connections this node opens
                return;
        struct conn *c = l_new(struct conn, 1);
        c->token = token;
        sa_copy(&c->local, laddr, true);
        sa_copy(&c->remote, raddr, true);
        c->remotes = l_queue_new();
        c->paths = l_queue_new();
        c->subflows = l_queue_new();
        c->asked = l_queue_new();
        remember_remote(c, 0, raddr);
        l_queue_push_tail(conns, c);
}

static void rig_new_subflow(mptcpd_token_t token, struct sockaddr const *laddr, struct sockaddr const *raddr,
                            bool backup, struct mptcpd_pm *pm)
{
        (void) pm;
        struct conn *c = conn_find(token);
        if (!c)
                return;
        struct subflow *s = l_new(struct subflow, 1);
        sa_copy(&s->local, laddr, true);
        sa_copy(&s->remote, raddr, true);
        s->since_us = l_time_now();
        l_queue_push_tail(c->subflows, s);
        char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
        l_info("rig_pm: token 0x%08x: subflow %s -> %s established", token, sa_str(laddr, a, sizeof(a)),
               sa_str(raddr, b, sizeof(b)));
        for (struct l_queue_entry const *e = l_queue_get_entries(c->paths); e; e = e->next) {
                struct path const *p = e->data;
                if (sa_same_host(SA(&p->local), laddr) && sa_same_host(SA(&p->remote), raddr))
                        return;
        }
        struct path *p = l_new(struct path, 1);
        sa_copy(&p->local, laddr, false);
        sa_copy(&p->remote, raddr, false);
        p->remote_id = remote_id(c, raddr);
        p->backup = backup;
        l_queue_push_tail(c->paths, p);
}

static void rig_connection_established(mptcpd_token_t token, struct sockaddr const *laddr,
                                       struct sockaddr const *raddr, bool server_side, struct mptcpd_pm *pm)
{
        (void) server_side;
        struct conn *c = conn_find(token);
        if (!c)
                return;
        rig_new_subflow(token, laddr, raddr, false, pm); // the initial subflow is a path of the connection's too
        with_endpoints((struct task) { .kind = ALL_REMOTES, .token = token });
}

static void rig_connection_closed(mptcpd_token_t token, struct mptcpd_pm *pm)
{
        (void) pm;
        struct conn *c = conn_find(token);
        if (c) {
                l_queue_remove(conns, c);
                conn_free(c);
        }
}

static void rig_new_address(mptcpd_token_t token, mptcpd_aid_t id, struct sockaddr const *addr, struct mptcpd_pm *pm)
{
        (void) pm;
        struct conn *c = conn_find(token);
        if (!c)
                return;
        remember_remote(c, id, addr);
        struct task t = { .kind = ONE_REMOTE, .token = token, .remote_id = id };
        sa_copy(&t.remote, addr, false);
        with_endpoints(t);
}

static void rig_address_removed(mptcpd_token_t token, mptcpd_aid_t id, struct mptcpd_pm *pm)
{
        (void) pm;
        struct conn *c = conn_find(token);
        if (!c || id == 0)
                return;
        for (struct l_queue_entry const *e = l_queue_get_entries(c->remotes); e; e = e->next)
                if (((struct path *) e->data)->remote_id == id) {
                        void *r = e->data;
                        l_queue_remove(c->remotes, r);
                        l_free(r);
                        return;
                }
}

static void rig_subflow_closed(mptcpd_token_t token, struct sockaddr const *laddr, struct sockaddr const *raddr,
                               bool backup, struct mptcpd_pm *pm)
{
        (void) backup;
        (void) pm;
        struct conn *c = conn_find(token);
        if (!c)
                return;
        for (struct l_queue_entry const *e = l_queue_get_entries(c->subflows); e; e = e->next) {
                struct subflow *s = e->data;
                if (sa_same(SA(&s->local), laddr) && sa_same(SA(&s->remote), raddr)) {
                        l_queue_remove(c->subflows, s);
                        l_free(s);
                        return;
                }
        }
}

static struct mptcpd_plugin_ops const ops = {
        .new_connection = rig_new_connection,
        .connection_established = rig_connection_established,
        .connection_closed = rig_connection_closed,
        .new_address = rig_new_address,
        .address_removed = rig_address_removed,
        .new_subflow = rig_new_subflow,
        .subflow_closed = rig_subflow_closed,
        .new_interface = rig_new_interface,
};

static int rig_pm_init(struct mptcpd_pm *pm)
{
        the_pm = pm;
        conns = l_queue_new();
        retakes = l_queue_new();
        if (!mptcpd_plugin_register_ops("rig_pm", &ops)) {
                l_error("rig_pm: could not register its operations");
                return -1;
        }
        l_info("rig_pm: ready");
        return 0;
}

static void rig_pm_exit(struct mptcpd_pm *pm)
{
        (void) pm;
        l_queue_destroy(retakes, retake_free);
        l_queue_destroy(conns, conn_free);
}

MPTCPD_PLUGIN_DEFINE(rig_pm, "the rig's subflows, and a returning radio's taken back", MPTCPD_PLUGIN_PRIORITY_DEFAULT,
                     rig_pm_init, rig_pm_exit)
