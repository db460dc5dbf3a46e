/* Fault cases against a server in a forked process: stuck (SIGSTOP) and dead (SIGKILL). */
#define _GNU_SOURCE
#include "testing.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

child_t start_child(uint64_t id, const char *ip) {
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

void test_faults(child_t ch) {
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
