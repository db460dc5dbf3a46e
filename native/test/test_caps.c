/*
 * Caps of the link port: handshakes in progress per peer address (the rest refused at once, while
 * a peer at another address still links) and links per peer address.
 */
#define _GNU_SOURCE
#include "testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FLOOD 10

static pdrt_ctx *capped_ctx(uint64_t id, const char *ip, uint32_t handshakes, uint32_t handshakes_per_peer,
                            uint32_t links_per_peer) {
    pdrt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_handshakes = handshakes;
    cfg.max_handshakes_per_peer = handshakes_per_peer;
    cfg.max_links_per_peer = links_per_peer;
    cfg.handshake_timeout_ms = 60000; /* the flood stays pending for the whole test */
    pdrt_ctx *ctx = NULL;
    CHECK_RC(pdrt_create(id, PDRT_ROLE_PROMPT, ip, 0, &cfg, &ctx), PDRT_SUCCESS);
    return ctx;
}

/* FLOOD unfinished handshakes from 127.0.0.5; once the server has closed all but 3, a peer at
 * another address still links. */
static void flood_leaves_room(uint32_t handshakes, uint32_t handshakes_per_peer) {
    pdrt_ctx *p = capped_ctx(301, "127.0.0.2", handshakes, handshakes_per_peer, 0);
    int fds[FLOOD];
    for (int i = 0; i < FLOOD; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in from = { .sin_family = AF_INET }, to = { .sin_family = AF_INET, .sin_port = htons(port_of(p)) };
        inet_pton(AF_INET, "127.0.0.5", &from.sin_addr);
        inet_pton(AF_INET, "127.0.0.2", &to.sin_addr);
        CHECK(bind(fds[i], (struct sockaddr *)&from, sizeof from) == 0);
        CHECK(connect(fds[i], (struct sockaddr *)&to, sizeof to) == 0);
        CHECK(send(fds[i], "P", 1, MSG_NOSIGNAL) == 1); /* a HELLO that never finishes */
    }
    /* The server closes all but 3 of them; wait (bounded) until it has. */
    int closed = 0;
    int64_t deadline = mono_ms() + 5000;
    while (closed < FLOOD - 3 && mono_ms() < deadline) {
        struct pollfd pf[FLOOD];
        for (int i = 0; i < FLOOD; i++) pf[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
        poll(pf, FLOOD, 100);
        closed = 0;
        for (int i = 0; i < FLOOD; i++) closed += (pf[i].revents & (POLLIN | POLLHUP)) != 0;
    }
    CHECK(closed == FLOOD - 3);
    /* A peer at another address is not affected. */
    pdrt_ctx *d = make_ctx(302, NULL);
    CHECK_RC(link1(d, cluster(301, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    for (int i = 0; i < FLOOD; i++) close(fds[i]);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static void test_links_per_peer(void) {
    current = "links per peer are capped";
    pdrt_ctx *p = capped_ctx(311, "127.0.0.2", 0, 0, 1);
    pdrt_ctx *d1 = make_ctx(312, NULL), *d2 = make_ctx(313, NULL);
    CHECK_RC(link1(d1, cluster(311, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    CHECK_RC(link1(d2, cluster(311, "127.0.0.2", port_of(p)), 2000), PDRT_LINK_FAILED);
    CHECK_RC(unlink1(d1, 311, 0, 2000), PDRT_SUCCESS);
    CHECK_RC(link1(d2, cluster(311, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    pdrt_destroy(d1);
    pdrt_destroy(d2);
    pdrt_destroy(p);
}

static void test_handshake_budget(void) {
    current = "handshakes per peer are capped: the peer's extra ones are refused";
    flood_leaves_room(0, 3);
    current = "handshakes in total are capped: the oldest gives way";
    flood_leaves_room(3, 0);
}

void test_caps(void) {
    test_handshake_budget();
    test_links_per_peer();
}
