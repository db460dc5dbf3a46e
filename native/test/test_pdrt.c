/*
 * C-level test of the host reference runtime, through the public ABI only.
 * Contexts live in this process on distinct loopback addresses; fault cases use a forked child
 * process as the server, stopped (SIGSTOP) or killed to play a stuck or dead peer.
 * Exit code = number of failed checks.
 */
#define _GNU_SOURCE
#include "pdrt.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;
static const char *current = "";

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            failures++;                                                                  \
            fprintf(stderr, "FAIL [%s] %s:%d: %s\n", current, __FILE__, __LINE__, #cond); \
        }                                                                                \
    } while (0)

#define CHECK_RC(got, want)                                                                         \
    do {                                                                                            \
        int32_t g_ = (got), w_ = (want);                                                            \
        if (g_ != w_) {                                                                             \
            failures++;                                                                             \
            fprintf(stderr, "FAIL [%s] %s:%d: %s = 0x%x, want 0x%x\n", current, __FILE__, __LINE__, \
                    #got, (unsigned)g_, (unsigned)w_);                                              \
        }                                                                                           \
    } while (0)

#define BLOCK 4096u
#define NBLOCKS 64u

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pdrt_cluster cluster(uint64_t id, const char *ip, uint16_t port) {
    pdrt_cluster c;
    memset(&c, 0, sizeof c);
    c.remote_cluster_id = id;
    c.remote_port = port;
    snprintf(c.remote_ip, sizeof c.remote_ip, "%s", ip);
    return c;
}

/* A context listening on an ephemeral port of ip, or client-only when ip is NULL. */
static pdrt_ctx *make_ctx(uint64_t id, const char *ip) {
    pdrt_ctx *ctx = NULL;
    int32_t rc = pdrt_create(id, ip ? PDRT_ROLE_PROMPT : PDRT_ROLE_DECODER, ip, 0, &ctx);
    if (rc != PDRT_SUCCESS) {
        fprintf(stderr, "pdrt_create(%llu, %s) = 0x%x\n", (unsigned long long)id, ip ? ip : "-", (unsigned)rc);
        exit(100);
    }
    return ctx;
}

static uint16_t port_of(pdrt_ctx *ctx) {
    uint16_t port = 0;
    pdrt_listen_port(ctx, &port);
    return port;
}

static int32_t link1(pdrt_ctx *ctx, pdrt_cluster c, int32_t timeout_ms) {
    int32_t ret = PDRT_FAILED;
    pdrt_link(ctx, &c, 1, timeout_ms, &ret);
    return ret;
}

static int32_t unlink1(pdrt_ctx *ctx, uint64_t id, int force, int32_t timeout_ms) {
    pdrt_cluster c = cluster(id, "", 0);
    int32_t ret = PDRT_FAILED;
    pdrt_unlink(ctx, &c, 1, timeout_ms, force, &ret);
    return ret;
}

/* The link to id, or state 0 when there is none. */
static pdrt_link_info find_link(pdrt_ctx *ctx, uint64_t id) {
    pdrt_link_info all[32], none;
    memset(&none, 0, sizeof none);
    uint32_t n = 0, total = 0;
    pdrt_list_links(ctx, all, 32, &n, &total);
    for (uint32_t i = 0; i < n; i++)
        if (all[i].remote_cluster_id == id) return all[i];
    return none;
}

/* Waits (bounded) for an event of kind about id, discarding others; 1 when seen. */
static int wait_event(pdrt_ctx *ctx, uint32_t kind, uint64_t id, pdrt_event *out) {
    int64_t deadline = mono_ms() + 5000;
    while (mono_ms() < deadline) {
        pdrt_event ev[16];
        uint32_t n = 0;
        pdrt_wait_events(ctx, (int32_t)(deadline - mono_ms()));
        pdrt_poll_events(ctx, ev, 16, &n);
        for (uint32_t i = 0; i < n; i++) {
            if (ev[i].kind == kind && ev[i].remote_cluster_id == id) {
                if (out) *out = ev[i];
                return 1;
            }
        }
    }
    return 0;
}

static uint32_t drain_events(pdrt_ctx *ctx) {
    pdrt_event ev[64];
    uint32_t n = 0, all = 0;
    do {
        pdrt_poll_events(ctx, ev, 64, &n);
        all += n;
    } while (n > 0);
    return all;
}

/* Polls a condition with a bounded deadline (not a sleep to synchronise: it ends on the condition). */
static int eventually(int (*cond)(void *), void *arg) {
    int64_t deadline = mono_ms() + 5000;
    while (mono_ms() < deadline) {
        if (cond(arg)) return 1;
        usleep(2000);
    }
    return cond(arg);
}

static void fill_pattern(uint8_t *buf, uint32_t nblocks, uint32_t seed) {
    for (uint32_t b = 0; b < nblocks; b++)
        for (uint32_t i = 0; i < BLOCK; i++) buf[(size_t)b * BLOCK + i] = (uint8_t)(seed * 131 + b * 31 + i * 7);
}

/* Fills every block of a cache with the pattern of seed. */
static void write_all(pdrt_ctx *ctx, uint64_t cache_id, uint32_t seed) {
    static uint8_t buf[NBLOCKS * BLOCK];
    uint32_t idx[NBLOCKS];
    for (uint32_t i = 0; i < NBLOCKS; i++) idx[i] = i;
    fill_pattern(buf, NBLOCKS, seed);
    CHECK_RC(pdrt_write_blocks(ctx, cache_id, idx, NBLOCKS, buf, sizeof buf), PDRT_SUCCESS);
}

/* 1 when local block dst of ctx's cache equals block src of the pattern seed. */
static int block_matches(pdrt_ctx *ctx, uint64_t cache_id, uint32_t dst, uint32_t seed, uint32_t src) {
    uint8_t got[BLOCK];
    if (pdrt_read_blocks(ctx, cache_id, &dst, 1, got, BLOCK) != PDRT_SUCCESS) return 0;
    for (uint32_t i = 0; i < BLOCK; i++)
        if (got[i] != (uint8_t)(seed * 131 + src * 31 + i * 7)) return 0;
    return 1;
}

/* ---- the forked server process for fault cases ---- */

typedef struct {
    pid_t pid;
    uint16_t port;
    int cmd_wr;
} child_t;

static child_t start_child(uint64_t id, const char *ip) {
    int cmd[2], rep[2];
    child_t ch = { .pid = -1 };
    if (pipe(cmd) != 0 || pipe(rep) != 0) return ch;
    ch.pid = fork();
    if (ch.pid == 0) {
        close(cmd[1]);
        close(rep[0]);
        pdrt_ctx *p = make_ctx(id, ip);
        pdrt_register_blocks(p, 1, NBLOCKS, BLOCK);
        write_all(p, 1, 7);
        uint16_t port = port_of(p);
        if (write(rep[1], &port, sizeof port) != sizeof port) _exit(2);
        char c;
        while (read(cmd[0], &c, 1) > 0) {} /* until the parent closes its end */
        pdrt_destroy(p);
        _exit(0);
    }
    close(cmd[0]);
    close(rep[1]);
    if (read(rep[0], &ch.port, sizeof ch.port) != sizeof ch.port) ch.port = 0;
    close(rep[0]);
    ch.cmd_wr = cmd[1];
    return ch;
}

/* Stops or resumes the child and waits until it has (signals are delivered asynchronously). */
static void stop_child(child_t ch) {
    int st = 0;
    kill(ch.pid, SIGSTOP);
    waitpid(ch.pid, &st, WUNTRACED);
    CHECK(WIFSTOPPED(st));
}

static void continue_child(child_t ch) {
    int st = 0;
    kill(ch.pid, SIGCONT);
    waitpid(ch.pid, &st, WCONTINUED);
    CHECK(WIFCONTINUED(st));
}

/* ---- tests ---- */

static void test_bad_calls(void) {
    current = "bad calls";
    pdrt_ctx *d = make_ctx(11, NULL);
    pdrt_cluster many[17];
    int32_t rets[17];
    for (int i = 0; i < 17; i++) {
        many[i] = cluster(100 + (uint64_t)i, "127.0.0.2", 1);
        rets[i] = 12345;
    }
    CHECK_RC(pdrt_link(d, many, 17, 1000, rets), PDRT_CLUSTER_NUM_EXCEED_LIMIT);
    CHECK_RC(pdrt_unlink(d, many, 17, 1000, 0, rets), PDRT_CLUSTER_NUM_EXCEED_LIMIT);
    CHECK_RC(pdrt_link(d, many, 0, 1000, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_link(d, many, 1, 0, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_link(d, many, 1, -5, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_link(d, NULL, 1, 1000, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_link(d, many, 1, 1000, NULL), PDRT_PARAM_INVALID);
    CHECK(rets[0] == 12345 && rets[16] == 12345); /* untouched */
    CHECK_RC(pdrt_link(NULL, many, 1, 1000, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_set_option(d, 99, 1), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 2), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_wait_events(d, 0), PDRT_TIMEOUT);
    pdrt_ctx *bad = NULL;
    CHECK_RC(pdrt_create(1, 7, NULL, 0, &bad), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_create(1, 0, "not-an-ip", 0, &bad), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_create(1, 0, "127.0.0.2", 0, NULL), PDRT_PARAM_INVALID);
    pdrt_ctx *p = make_ctx(12, "127.0.0.2");
    CHECK_RC(pdrt_create(13, 0, "127.0.0.2", port_of(p), &bad), PDRT_LINK_FAILED); /* address in use */
    pdrt_destroy(p);
    pdrt_destroy(d);
    /* A destroyed handle is refused, not dereferenced. */
    CHECK_RC(pdrt_link(d, many, 1, 1000, rets), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_destroy(d), PDRT_PARAM_INVALID);
}

static void test_round_trip(void) {
    current = "link/unlink round trip";
    pdrt_ctx *p = make_ctx(21, "127.0.0.2");
    pdrt_ctx *d = make_ctx(22, NULL);
    pdrt_cluster c = cluster(21, "127.0.0.2", port_of(p));
    int32_t ret = 0;
    CHECK_RC(pdrt_link(d, &c, 1, 2000, &ret), PDRT_SUCCESS);
    CHECK_RC(ret, PDRT_SUCCESS);
    pdrt_event ev;
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 22, &ev));
    CHECK(ev.side == PDRT_SIDE_SERVER && ev.code == PDRT_SUCCESS && ev.time_ms > 0);
    pdrt_link_info li = find_link(d, 21);
    CHECK(li.state == PDRT_LINK_LINKED && li.side == PDRT_SIDE_CLIENT && li.remote_port == c.remote_port);
    CHECK(strcmp(li.remote_ip, "127.0.0.2") == 0);
    li = find_link(p, 22);
    CHECK(li.state == PDRT_LINK_LINKED && li.side == PDRT_SIDE_SERVER && strcmp(li.remote_ip, "127.0.0.1") == 0);

    current = "ALREADY_LINK";
    CHECK_RC(pdrt_link(d, &c, 1, 2000, &ret), PDRT_FAILED);
    CHECK_RC(ret, PDRT_ALREADY_LINK);

    current = "unlink";
    CHECK_RC(pdrt_unlink(d, &c, 1, 2000, 0, &ret), PDRT_SUCCESS);
    CHECK_RC(ret, PDRT_SUCCESS);
    CHECK(find_link(d, 21).state == 0);
    CHECK(wait_event(p, PDRT_EVENT_PEER_UNLINKED, 22, &ev));
    CHECK(find_link(p, 22).state == 0);

    current = "NOT_YET_LINK";
    CHECK_RC(unlink1(d, 21, 0, 1000), PDRT_NOT_YET_LINK);
    CHECK_RC(unlink1(d, 21, 1, 1000), PDRT_NOT_YET_LINK);

    current = "relink after unlink; the server unlinks the client";
    CHECK_RC(link1(d, c, 2000), PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 22, NULL));
    CHECK_RC(unlink1(p, 22, 0, 2000), PDRT_SUCCESS);
    CHECK(wait_event(d, PDRT_EVENT_PEER_UNLINKED, 21, &ev));
    CHECK(ev.side == PDRT_SIDE_CLIENT);
    CHECK(find_link(d, 21).state == 0 && find_link(p, 22).state == 0);

    current = "wrong cluster id at the address";
    CHECK_RC(link1(d, cluster(29, "127.0.0.2", port_of(p)), 2000), PDRT_LINK_FAILED);
    CHECK(find_link(d, 29).state == 0);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static void test_link_failures(void) {
    current = "LINK_FAILED on a closed port";
    pdrt_ctx *d = make_ctx(31, NULL);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    inet_pton(AF_INET, "127.0.0.3", &a.sin_addr);
    socklen_t len = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &len);
    uint16_t closed = ntohs(a.sin_port);
    close(s); /* bound, never listened, now free: connections are refused */
    CHECK_RC(link1(d, cluster(32, "127.0.0.3", closed), 2000), PDRT_LINK_FAILED);

    current = "TIMEOUT against a peer that accepts but never answers";
    s = socket(AF_INET, SOCK_STREAM, 0);
    a = (struct sockaddr_in){ .sin_family = AF_INET };
    inet_pton(AF_INET, "127.0.0.4", &a.sin_addr);
    len = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    listen(s, 16);
    getsockname(s, (struct sockaddr *)&a, &len);
    int64_t t0 = mono_ms();
    CHECK_RC(link1(d, cluster(33, "127.0.0.4", ntohs(a.sin_port)), 300), PDRT_TIMEOUT);
    int64_t took = mono_ms() - t0;
    CHECK(took >= 290 && took < 2300);
    CHECK(find_link(d, 33).state == 0);
    close(s);

    current = "mixed batch, codes in input order";
    pdrt_ctx *p = make_ctx(34, "127.0.0.2");
    pdrt_ctx *p2 = make_ctx(35, "127.0.0.5");
    pdrt_cluster batch[6] = {
        cluster(34, "127.0.0.2", port_of(p)), cluster(36, "300.1.1.1", 1000), cluster(37, "127.0.0.3", closed),
        cluster(34, "127.0.0.2", port_of(p)), cluster(35, "127.0.0.5", port_of(p2)), cluster(38, "127.0.0.2", 0),
    };
    batch[1].reserved = 0;
    int32_t rets[6];
    CHECK_RC(pdrt_link(d, batch, 6, 2000, rets), PDRT_FAILED);
    CHECK_RC(rets[0], PDRT_SUCCESS);
    CHECK_RC(rets[1], PDRT_PARAM_INVALID);
    CHECK_RC(rets[2], PDRT_LINK_FAILED);
    CHECK_RC(rets[3], PDRT_PROCESSING_LINK);
    CHECK_RC(rets[4], PDRT_SUCCESS);
    CHECK_RC(rets[5], PDRT_PARAM_INVALID);
    pdrt_cluster odd = cluster(39, "127.0.0.2", port_of(p));
    odd.reserved = 1;
    CHECK_RC(link1(d, odd, 1000), PDRT_PARAM_INVALID);
    CHECK_RC(link1(d, cluster(31, "127.0.0.2", port_of(p)), 1000), PDRT_PARAM_INVALID); /* itself */

    current = "mixed unlink batch";
    pdrt_cluster ub[4] = { cluster(34, "", 0), cluster(77, "", 0), cluster(35, "", 0), cluster(34, "", 0) };
    CHECK_RC(pdrt_unlink(d, ub, 4, 2000, 0, rets), PDRT_FAILED);
    CHECK_RC(rets[0], PDRT_SUCCESS);
    CHECK_RC(rets[1], PDRT_NOT_YET_LINK);
    CHECK_RC(rets[2], PDRT_SUCCESS);
    CHECK_RC(rets[3], PDRT_PROCESSING_LINK);
    pdrt_destroy(p2);
    pdrt_destroy(p);
    pdrt_destroy(d);
}

typedef struct {
    pdrt_ctx *d;
    pdrt_cluster c;
    int32_t ret;
} link_arg;

static void *link_thread(void *arg) {
    link_arg *a = arg;
    a->ret = link1(a->d, a->c, 3000);
    return NULL;
}

static void test_concurrent(void) {
    current = "concurrent links of one cluster";
    pdrt_ctx *p = make_ctx(41, "127.0.0.2");
    pdrt_ctx *d = make_ctx(42, NULL);
    enum { T = 6 };
    pthread_t th[T];
    link_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (link_arg){ .d = d, .c = cluster(41, "127.0.0.2", port_of(p)) };
        pthread_create(&th[i], NULL, link_thread, &args[i]);
    }
    int ok = 0, other = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        if (args[i].ret == PDRT_SUCCESS) ok++;
        else if (args[i].ret == PDRT_PROCESSING_LINK || args[i].ret == PDRT_ALREADY_LINK) other++;
    }
    CHECK(ok == 1 && other == T - 1);
    uint32_t n = 0, total = 0;
    pdrt_link_info li[4];
    pdrt_list_links(d, li, 4, &n, &total);
    CHECK(total == 1);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static int no_link_22(void *arg) { return find_link(arg, 22).state == 0; }

static void test_force_and_peer_loss(void) {
    current = "force unlink on the client leaves the server's end";
    pdrt_ctx *p = make_ctx(51, "127.0.0.2");
    pdrt_ctx *d = make_ctx(22, NULL);
    pdrt_cluster c = cluster(51, "127.0.0.2", port_of(p));
    CHECK_RC(link1(d, c, 2000), PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 22, NULL));
    CHECK_RC(unlink1(d, 51, 1, 1000), PDRT_SUCCESS);
    CHECK(find_link(d, 51).state == 0);
    CHECK(find_link(p, 22).state == PDRT_LINK_LINKED);
    CHECK_RC(link1(d, c, 2000), PDRT_ALREADY_LINK); /* the server still holds it */
    CHECK(find_link(d, 51).state == 0);
    CHECK_RC(pdrt_wait_events(p, 50), PDRT_TIMEOUT); /* no PEER_LOST: the parked socket is silent */

    current = "force unlink on the server; the client links again";
    CHECK_RC(unlink1(p, 22, 1, 1000), PDRT_SUCCESS);
    CHECK(find_link(p, 22).state == 0);
    CHECK_RC(link1(d, c, 2000), PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 22, NULL));
    CHECK_RC(pdrt_wait_events(d, 0), PDRT_TIMEOUT); /* the parked socket closed without an event */

    current = "server force unlink while the client holds the link";
    CHECK_RC(unlink1(p, 22, 1, 1000), PDRT_SUCCESS);
    CHECK(wait_event(d, PDRT_EVENT_PEER_LOST, 51, NULL));
    CHECK(find_link(d, 51).state == 0);

    current = "dead peer: PEER_LOST, then the same cluster id links again";
    CHECK_RC(link1(d, c, 2000), PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 22, NULL));
    pdrt_destroy(d); /* closes its sockets, like a killed process */
    pdrt_event ev;
    CHECK(wait_event(p, PDRT_EVENT_PEER_LOST, 22, &ev));
    CHECK(ev.side == PDRT_SIDE_SERVER && ev.code == PDRT_LINK_FAILED);
    CHECK(eventually(no_link_22, p));
    d = make_ctx(22, NULL);
    CHECK_RC(link1(d, c, 2000), PDRT_SUCCESS);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static void test_blocks_local(void) {
    current = "local blocks";
    pdrt_ctx *d = make_ctx(61, NULL);
    static uint8_t buf[NBLOCKS * BLOCK];
    uint32_t idx[3] = { 3, 0, 63 };
    CHECK_RC(pdrt_register_blocks(d, 5, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 5, NBLOCKS, BLOCK), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_register_blocks(d, 6, 0, BLOCK), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_register_blocks(d, 6, 4, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 3, buf, 3 * BLOCK), PDRT_SUCCESS);
    int zero = 1;
    for (size_t i = 0; i < 3 * BLOCK; i++) zero &= buf[i] == 0;
    CHECK(zero);
    fill_pattern(buf, 3, 9);
    CHECK_RC(pdrt_write_blocks(d, 5, idx, 3, buf, 3 * BLOCK), PDRT_SUCCESS);
    uint8_t got[3 * BLOCK];
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 3, got, sizeof got), PDRT_SUCCESS);
    CHECK(memcmp(got, buf, sizeof got) == 0);
    CHECK_RC(pdrt_write_blocks(d, 5, idx, 3, buf, 3 * BLOCK - 1), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 0, got, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, NULL, 1, got, BLOCK), PDRT_PARAM_INVALID);
    uint32_t bad[1] = { 64 };
    CHECK_RC(pdrt_read_blocks(d, 5, bad, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_read_blocks(d, 99, idx, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_unregister_blocks(d, 5), PDRT_SUCCESS);
    CHECK_RC(pdrt_unregister_blocks(d, 5), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    pdrt_destroy(d);
}

/* Pulls, pushes and errors between a server p and a client d, on whichever path they negotiated. */
static void transfers(pdrt_ctx *p, uint64_t pid, pdrt_ctx *d, uint64_t did) {
    write_all(p, 1, 1);
    write_all(d, 2, 2);
    uint32_t src[4] = { 5, 1, 60, 5 }, dst[4] = { 0, 9, 3, 40 };
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, src, 2, dst, 4, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(block_matches(d, 2, dst[i], 1, src[i]));
    CHECK(block_matches(d, 2, 1, 2, 1)); /* untouched neighbour */

    /* Push from the client into the server, then the server pulls from the client. */
    uint32_t psrc[2] = { 7, 8 }, pdst[2] = { 30, 2 };
    CHECK_RC(pdrt_push_blocks(d, pid, 2, psrc, 1, pdst, 2, 2000), PDRT_SUCCESS);
    CHECK(block_matches(p, 1, 30, 2, 7) && block_matches(p, 1, 2, 2, 8));
    uint32_t rsrc[3] = { 11, 12, 13 }, rdst[3] = { 50, 51, 49 };
    CHECK_RC(pdrt_pull_blocks(p, did, 2, rsrc, 1, rdst, 3, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 3; i++) CHECK(block_matches(p, 1, rdst[i], 2, rsrc[i]));

    uint32_t ok[1] = { 0 }, big[1] = { 64 };
    CHECK_RC(pdrt_pull_blocks(d, pid, 77, ok, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, big, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, big, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 78, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 3, ok, 2, ok, 1, 2000), PDRT_PARAM_INVALID); /* block sizes differ */
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 0, 2000), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, NULL, 2, ok, 1, 2000), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 1, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, 4242, 1, ok, 2, ok, 1, 2000), PDRT_NOT_YET_LINK);

    /* Re-registered under the same id: the peer sees the new memory, not the old mapping. */
    CHECK_RC(pdrt_unregister_blocks(p, 1), PDRT_SUCCESS);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 3);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, src, 2, dst, 4, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(block_matches(d, 2, dst[i], 3, src[i]));
    pdrt_link_info li = find_link(d, pid);
    CHECK(li.state == PDRT_LINK_LINKED && li.transfers_in_flight == 0);
}

static void test_transfers(int same_host) {
    current = same_host ? "transfers over shared memory" : "transfers over TCP";
    pdrt_ctx *p = make_ctx(71, "127.0.0.2");
    pdrt_ctx *d = make_ctx(72, NULL);
    if (!same_host) CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 0), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 3, NBLOCKS, BLOCK / 2), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(71, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    CHECK(find_link(d, 71).same_host == same_host);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 72, NULL));
    CHECK(find_link(p, 72).same_host == same_host);
    transfers(p, 71, d, 72);
    CHECK_RC(unlink1(d, 71, 0, 2000), PDRT_SUCCESS);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

/* ---- concurrency ---- */

typedef struct {
    pdrt_ctx *ctx;
    uint64_t peer, remote_cache, local_cache;
    uint32_t seed, base, src_base;
    int bad;
} stress_arg;

/* Repeated pulls of 8 blocks into a slice of the local cache that belongs to this thread. */
static void *stress_thread(void *arg) {
    stress_arg *a = arg;
    for (uint32_t round = 0; round < 40; round++) {
        uint32_t src[8], dst[8];
        for (uint32_t i = 0; i < 8; i++) {
            src[i] = a->src_base + (round * 7 + i * 5) % (NBLOCKS / 2);
            dst[i] = a->base + i;
        }
        if (pdrt_pull_blocks(a->ctx, a->peer, a->remote_cache, src, a->local_cache, dst, 8, 5000) != PDRT_SUCCESS) a->bad++;
        for (uint32_t i = 0; i < 8; i++)
            if (!block_matches(a->ctx, a->local_cache, dst[i], a->seed, src[i])) a->bad++;
    }
    return NULL;
}

static void test_parallel_pulls(int same_host) {
    current = same_host ? "parallel pulls, shared memory" : "parallel pulls, TCP (client and reverse pools)";
    pdrt_ctx *p = make_ctx(81, "127.0.0.2");
    pdrt_ctx *d = make_ctx(82, NULL);
    pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, same_host);
    pdrt_register_blocks(p, 1, NBLOCKS, BLOCK);
    pdrt_register_blocks(d, 2, NBLOCKS, BLOCK);
    write_all(p, 1, 4);
    write_all(d, 2, 5);
    CHECK_RC(link1(d, cluster(81, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    enum { T = 4 };
    pthread_t th[2 * T];
    stress_arg args[2 * T];
    /* D pulls P's blocks 0..31 into its own 0..31; P pulls D's 32..63 into its own 32..63: nobody
     * reads a block that a pull is writing. */
    for (int i = 0; i < T; i++) {
        uint32_t slice = 8 * (uint32_t)i;
        args[i] = (stress_arg){ .ctx = d, .peer = 81, .remote_cache = 1, .local_cache = 2, .seed = 4, .base = slice };
        args[T + i] = (stress_arg){ .ctx = p, .peer = 82, .remote_cache = 2, .local_cache = 1, .seed = 5,
                                    .base = 32 + slice, .src_base = 32 };
    }
    for (int i = 0; i < 2 * T; i++) pthread_create(&th[i], NULL, stress_thread, &args[i]);
    int bad = 0;
    for (int i = 0; i < 2 * T; i++) {
        pthread_join(th[i], NULL);
        bad += args[i].bad;
    }
    CHECK(bad == 0);
    CHECK(find_link(d, 81).transfers_in_flight == 0);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

typedef struct {
    pdrt_ctx *ctx;
    uint64_t peer;
    int32_t ret;
} unlink_arg;

static void *unlink_thread(void *arg) {
    unlink_arg *a = arg;
    a->ret = unlink1(a->ctx, a->peer, 0, 3000);
    return NULL;
}

typedef struct {
    pdrt_ctx *ctx;
    int32_t rc;
} wait_arg;

static void *wait_thread(void *arg) {
    wait_arg *a = arg;
    a->rc = pdrt_wait_events(a->ctx, 30000);
    return NULL;
}

static void test_races(void) {
    current = "both ends unlink at once";
    pdrt_ctx *p = make_ctx(91, "127.0.0.2");
    pdrt_ctx *d = make_ctx(92, NULL);
    for (int round = 0; round < 5; round++) {
        CHECK_RC(link1(d, cluster(91, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
        CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 92, NULL));
        unlink_arg a = { .ctx = d, .peer = 91 }, b = { .ctx = p, .peer = 92 };
        pthread_t ta, tb;
        pthread_create(&ta, NULL, unlink_thread, &a);
        pthread_create(&tb, NULL, unlink_thread, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        /* Whoever's UNLINK lands first unlinks both ends; a simultaneous one is acknowledged too. */
        CHECK(a.ret == PDRT_SUCCESS || a.ret == PDRT_NOT_YET_LINK);
        CHECK(b.ret == PDRT_SUCCESS || b.ret == PDRT_NOT_YET_LINK);
        CHECK(a.ret == PDRT_SUCCESS || b.ret == PDRT_SUCCESS);
        CHECK(find_link(d, 91).state == 0 && find_link(p, 92).state == 0);
        drain_events(p);
        drain_events(d);
    }

    current = "destroy wakes a thread blocked in pdrt_wait_events";
    pthread_t t;
    wait_arg w = { .ctx = d };
    int64_t t0 = mono_ms();
    pthread_create(&t, NULL, wait_thread, &w);
    CHECK_RC(pdrt_destroy(d), PDRT_SUCCESS);
    pthread_join(t, NULL);
    /* FAILED: woken by the destroy; PARAM_INVALID: the destroy came first. Never the 30 s wait. */
    CHECK(w.rc == PDRT_FAILED || w.rc == PDRT_PARAM_INVALID);
    CHECK(mono_ms() - t0 < 10000);
    pdrt_destroy(p);
}

/* ---- fault cases against the forked server ---- */

typedef struct {
    pdrt_ctx *d;
    int32_t rc;
    int32_t timeout;
} pull_arg;

static void *pull_thread(void *arg) {
    pull_arg *a = arg;
    uint32_t idx[NBLOCKS];
    for (uint32_t i = 0; i < NBLOCKS; i++) idx[i] = i;
    a->rc = pdrt_pull_blocks(a->d, 900, 1, idx, 2, idx, NBLOCKS, a->timeout);
    return NULL;
}

static int has_inflight(void *arg) { return find_link(arg, 900).transfers_in_flight > 0; }

static pdrt_ctx *tcp_client(uint64_t id) {
    pdrt_ctx *d = make_ctx(id, NULL);
    pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 0); /* a stopped peer must stall the transfer */
    pdrt_register_blocks(d, 2, NBLOCKS, BLOCK);
    return d;
}

static void test_faults(child_t ch) {
    pdrt_cluster c = cluster(900, "127.0.0.9", ch.port);
    current = "LINK_BUSY, then force unlink aborts the running transfer";
    pdrt_ctx *d1 = tcp_client(901);
    CHECK_RC(link1(d1, c, 2000), PDRT_SUCCESS);
    stop_child(ch);
    pull_arg pa = { .d = d1, .rc = 0, .timeout = 20000 };
    pthread_t t;
    pthread_create(&t, NULL, pull_thread, &pa);
    CHECK(eventually(has_inflight, d1));
    CHECK_RC(unlink1(d1, 900, 0, 1000), PDRT_LINK_BUSY);
    int64_t t0 = mono_ms();
    CHECK_RC(unlink1(d1, 900, 1, 1000), PDRT_SUCCESS);
    pthread_join(t, NULL);
    CHECK_RC(pa.rc, PDRT_LINK_FAILED);
    CHECK(mono_ms() - t0 < 10000); /* aborted, long before its own deadline */
    CHECK(find_link(d1, 900).state == 0);
    continue_child(ch);
    CHECK_RC(link1(d1, c, 2000), PDRT_ALREADY_LINK); /* the server's end survived the force unlink */

    current = "transfer across processes, then TIMEOUT makes the link unusable";
    pdrt_ctx *d2 = tcp_client(902);
    CHECK_RC(link1(d2, c, 2000), PDRT_SUCCESS);
    uint32_t src[3] = { 9, 2, 33 }, dst[3] = { 1, 2, 3 };
    CHECK_RC(pdrt_pull_blocks(d2, 900, 1, src, 2, dst, 3, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 3; i++) CHECK(block_matches(d2, 2, dst[i], 7, src[i]));
    stop_child(ch);
    t0 = mono_ms();
    CHECK_RC(pdrt_pull_blocks(d2, 900, 1, src, 2, dst, 3, 300), PDRT_TIMEOUT);
    CHECK(mono_ms() - t0 < 2300);
    CHECK(find_link(d2, 900).state == PDRT_LINK_UNUSABLE);
    pdrt_event ev;
    CHECK(wait_event(d2, PDRT_EVENT_LINK_UNUSABLE, 900, &ev));
    CHECK(ev.code == PDRT_TIMEOUT && ev.side == PDRT_SIDE_CLIENT);
    CHECK_RC(pdrt_pull_blocks(d2, 900, 1, src, 2, dst, 3, 300), PDRT_LINK_FAILED);

    current = "unlink a stuck peer: NOTIFY_PROMPT_UNLINK_FAILED, local end cleared";
    t0 = mono_ms();
    CHECK_RC(unlink1(d2, 900, 0, 300), PDRT_NOTIFY_PROMPT_UNLINK_FAILED);
    CHECK(mono_ms() - t0 < 2300);
    CHECK(find_link(d2, 900).state == 0);
    continue_child(ch);

    current = "killed server: PEER_LOST on the client";
    pdrt_ctx *d3 = tcp_client(903);
    CHECK_RC(link1(d3, c, 2000), PDRT_SUCCESS);
    drain_events(d1);
    kill(ch.pid, SIGKILL);
    waitpid(ch.pid, NULL, 0);
    CHECK(wait_event(d3, PDRT_EVENT_PEER_LOST, 900, &ev));
    CHECK(ev.side == PDRT_SIDE_CLIENT && find_link(d3, 900).state == 0);
    CHECK_RC(pdrt_wait_events(d1, 100), PDRT_TIMEOUT); /* d1 had force-unlinked: nothing to report */
    CHECK_RC(link1(d3, c, 500), PDRT_LINK_FAILED);
    close(ch.cmd_wr);
    pdrt_destroy(d1);
    pdrt_destroy(d2);
    pdrt_destroy(d3);
}

int main(void) {
    /* Fork before any thread exists, so the child starts from a clean process. */
    child_t ch = start_child(900, "127.0.0.9");
    if (ch.pid < 0 || ch.port == 0) {
        fprintf(stderr, "cannot start the child server\n");
        return 100;
    }
    test_bad_calls();
    test_round_trip();
    test_link_failures();
    test_concurrent();
    test_force_and_peer_loss();
    test_blocks_local();
    test_transfers(0);
    test_transfers(1);
    test_parallel_pulls(0);
    test_parallel_pulls(1);
    test_races();
    test_faults(ch);
    if (failures == 0) printf("test_pdrt: all checks passed\n");
    else printf("test_pdrt: %d check(s) failed\n", failures);
    return failures > 125 ? 125 : failures;
}
