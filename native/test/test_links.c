/* Links: calls, codes, events, force semantics, dead peers, races. */
#define _GNU_SOURCE
#include "testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    CHECK_RC(pdrt_create(1, 7, NULL, 0, NULL, &bad), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_create(1, 0, "not-an-ip", 0, NULL, &bad), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_create(1, 0, "127.0.0.2", 0, NULL, NULL), PDRT_PARAM_INVALID);
    pdrt_ctx *p = make_ctx(12, "127.0.0.2");
    CHECK_RC(pdrt_create(13, 0, "127.0.0.2", port_of(p), NULL, &bad), PDRT_LINK_FAILED); /* address in use */
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

void test_links(void) {
    test_bad_calls();
    test_round_trip();
    test_link_failures();
    test_concurrent();
    test_force_and_peer_loss();
    test_races();
}
