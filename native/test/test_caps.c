/*
 * Caps of the link port: handshakes in progress per peer address (the rest refused at once, while
 * a peer at another address still links) and links per peer address.
 */
#define _GNU_SOURCE
#include "testing.h"

#include "wire.h"

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

static int raw_exchange(int fd, const uint8_t *out, size_t olen, uint8_t *in, size_t ilen) {
    if (send(fd, out, olen, MSG_NOSIGNAL) != (ssize_t)olen) return -1;
    size_t have = 0;
    while (have < ilen) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, 3000) != 1) return -1;
        ssize_t r = recv(fd, in + have, ilen - have, 0);
        if (r <= 0) return -1;
        have += (size_t)r;
    }
    return 0;
}

static int raw_connect_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, "127.0.0.2", &to.sin_addr);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* An unauthenticated link from client_id to server_id: the control socket and *session, or -1. */
static int raw_link(uint16_t port, uint64_t server_id, uint64_t client_id, uint64_t *session) {
    int ctl = raw_connect_to(port);
    uint8_t out[HELLO_SIZE], in[WELCOME_SIZE];
    wire_hello h = { .version = WIRE_VERSION, .kind = CONN_CTL, .client_id = client_id, .server_id = server_id,
                     .flags = HELLO_FORCE_LINK };
    wire_put_hello(out, &h);
    wire_welcome w;
    wire_confirm c = { 0 };
    if (ctl < 0 || raw_exchange(ctl, out, HELLO_SIZE, in, WELCOME_SIZE) != 0 || wire_get_welcome(in, &w) != 0 ||
        w.status != PDRT_SUCCESS)
        return -1;
    wire_put_confirm(out, &c);
    if (raw_exchange(ctl, out, CONFIRM_SIZE, in, ACK_SIZE) != 0) return -1;
    *session = w.session;
    return ctl;
}

/* A data connection of that link, welcomed; -1 when refused. */
static int raw_data(uint16_t port, uint64_t server_id, uint64_t client_id, uint64_t session) {
    int fd = raw_connect_to(port);
    uint8_t out[HELLO_SIZE], in[WELCOME_SIZE];
    wire_hello h = { .version = WIRE_VERSION, .kind = CONN_DATA, .client_id = client_id, .server_id = server_id,
                     .session = session };
    wire_put_hello(out, &h);
    wire_welcome w;
    if (fd < 0 || raw_exchange(fd, out, HELLO_SIZE, in, WELCOME_SIZE) != 0 || wire_get_welcome(in, &w) != 0 ||
        w.status != PDRT_SUCCESS) {
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

#define STALLED 40

static void test_stalled_requests(void) {
    current = "requests stalled halfway hold no serving thread";
    pdrt_ctx *p = make_ctx(331, "127.0.0.2"), *d = make_ctx(332, NULL);
    CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 0), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 6);
    uint64_t session = 0;
    int ctl = raw_link(port_of(p), 331, 333, &session);
    CHECK(ctl >= 0);
    int fds[STALLED];
    for (int i = 0; i < STALLED; i++) {
        fds[i] = raw_data(port_of(p), 331, 333, session);
        CHECK(fds[i] >= 0);
        if (fds[i] >= 0) CHECK(send(fds[i], "PDRT\1\0\0\0\1\0\0\0\0\0\0\0", 16, MSG_NOSIGNAL) == 16);
    }
    /* More stalled requests than serving threads: a pull is still answered. */
    CHECK_RC(link1(d, cluster(331, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    uint32_t src[1] = { 3 }, dst[1] = { 0 };
    CHECK_RC(pdrt_pull_blocks(d, 331, 1, src, 2, dst, 1, 2000), PDRT_SUCCESS);
    CHECK(block_matches(d, 2, 0, 6, 3));
    for (int i = 0; i < STALLED; i++)
        if (fds[i] >= 0) close(fds[i]);
    close(ctl);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static void test_idle_timeout(void) {
    current = "idle data connections are closed after the idle timeout";
    pdrt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.idle_timeout_ms = 300;
    pdrt_ctx *p = NULL, *d = NULL;
    CHECK_RC(pdrt_create(321, PDRT_ROLE_PROMPT, "127.0.0.2", 0, &cfg, &p), PDRT_SUCCESS);
    CHECK_RC(pdrt_create(322, PDRT_ROLE_DECODER, NULL, 0, &cfg, &d), PDRT_SUCCESS);
    CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 0), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 4);
    CHECK_RC(link1(d, cluster(321, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    uint32_t src[1] = { 9 }, dst[1] = { 1 };
    CHECK_RC(pdrt_pull_blocks(d, 321, 1, src, 2, dst, 1, 2000), PDRT_SUCCESS);

    /* A raw link and data connection that then says nothing: the server closes it. */
    uint16_t port = port_of(p);
    uint64_t session = 0;
    int ctl = raw_link(port, 321, 323, &session);
    int data = raw_data(port, 321, 323, session);
    CHECK(ctl >= 0 && data >= 0);
    uint8_t in[1];
    int64_t deadline = mono_ms() + 5000;
    int eof = 0;
    while (!eof && mono_ms() < deadline) {
        struct pollfd pf = { .fd = data, .events = POLLIN };
        if (poll(&pf, 1, 100) == 1) eof = recv(data, in, 1, 0) <= 0;
    }
    CHECK(eof);
    /* D's own connection idled out too: the next pull opens another and succeeds. */
    src[0] = 10;
    CHECK_RC(pdrt_pull_blocks(d, 321, 1, src, 2, dst, 1, 2000), PDRT_SUCCESS);
    CHECK(block_matches(d, 2, 1, 4, 10));
    close(data);
    close(ctl);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

void test_caps(void) {
    test_idle_timeout();
    test_stalled_requests();
    test_handshake_budget();
    test_links_per_peer();
}
