/* Links across the life of their ends: restarted contexts, links that last. */
#define _GNU_SOURCE
#include "testing.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int no_link_71(void *ctx) { return find_link(ctx, 71).state == 0; }
static int no_link_72(void *ctx) { return find_link(ctx, 72).state == 0; }

/* Both ends of the link between server p (71) and client d (72) are LINKED on the same-host path. */
static void check_same_host(pdrt_ctx *p, pdrt_ctx *d) {
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 72, NULL));
    pdrt_link_info c = find_link(d, 71), s = find_link(p, 72);
    CHECK(c.state == PDRT_LINK_LINKED && c.side == PDRT_SIDE_CLIENT && c.same_host == 1);
    CHECK(s.state == PDRT_LINK_LINKED && s.side == PDRT_SIDE_SERVER && s.same_host == 1);
}

/* Each end remembers the same-host proof it read from the other (the peer's pid, probe fd and
 * token). A context restarted in the same process has the same pid and, fds being reused lowest
 * first, usually its probe at the same fd, but a new token: the remembered proof is stale and must
 * be read afresh, not make the new link fall back to TCP. */
static void test_same_host_restart(void) {
    current = "same_host on both ends after the server restarts with the same cluster id";
    pdrt_ctx *p = make_ctx(71, "127.0.0.2");
    pdrt_ctx *d = make_ctx(72, NULL);
    CHECK_RC(link1(d, cluster(71, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    check_same_host(p, d);
    /* A transfer leaves a serving thread on the server, idle on the connection the client pooled,
     * for the destroy below to end. */
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 3);
    uint32_t src[2] = { 4, 40 }, dst[2] = { 0, 1 };
    CHECK_RC(pdrt_pull_blocks(d, 71, 1, src, 2, dst, 2, 2000), PDRT_SUCCESS);
    CHECK(block_matches(d, 2, 0, 3, 4) && block_matches(d, 2, 1, 3, 40));
    pdrt_destroy(p);
    CHECK(wait_event(d, PDRT_EVENT_PEER_LOST, 71, NULL));
    CHECK(eventually(no_link_71, d));
    p = make_ctx(71, "127.0.0.2");
    CHECK_RC(link1(d, cluster(71, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    check_same_host(p, d);

    current = "same_host on both ends after the client restarts with the same cluster id";
    pdrt_destroy(d);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LOST, 72, NULL));
    CHECK(eventually(no_link_72, p));
    d = make_ctx(72, NULL);
    CHECK_RC(link1(d, cluster(71, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    check_same_host(p, d);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

/* The socket of this process connected to ip:port, or -1 (the runtime's sockets are ours too). */
static int socket_to(const char *ip, uint16_t port) {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) return -1;
    int found = -1;
    for (struct dirent *e; found < 0 && (e = readdir(dir)) != NULL;) {
        int fd = atoi(e->d_name);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        char text[INET_ADDRSTRLEN];
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(dir)) continue;
        if (getpeername(fd, (struct sockaddr *)&a, &len) != 0 || a.sin_family != AF_INET) continue;
        if (ntohs(a.sin_port) == port && inet_ntop(AF_INET, &a.sin_addr, text, sizeof text) != NULL &&
            strcmp(text, ip) == 0)
            found = fd;
    }
    closedir(dir);
    return found;
}

static int int_opt(int fd, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    return getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

typedef struct {
    const char *ip;
    uint16_t port;
} endpoint;

/* The client's control socket to the server at the endpoint has keepalive on. */
static int keepalive_on(void *arg) {
    const endpoint *e = arg;
    int fd = socket_to(e->ip, e->port);
    return fd >= 0 && int_opt(fd, SOL_SOCKET, SO_KEEPALIVE) == 1;
}

/* Client control sockets get keepalive from a timer once the link has lasted its arming delay (a
 * second), so links that come and go quickly never pay for it. Links made together are armed by one
 * expiry or by the timer set again for the next; none is left out. A link unlinked before its delay
 * must leave the queue with it (a later expiry would otherwise touch a freed link). */
static void test_keepalive_armed(void) {
    current = "keepalive armed on client control sockets of links that last";
    pdrt_ctx *p1 = make_ctx(81, "127.0.0.2");
    pdrt_ctx *p2 = make_ctx(82, "127.0.0.3");
    pdrt_ctx *p3 = make_ctx(84, "127.0.0.4");
    pdrt_ctx *d = make_ctx(83, NULL);
    endpoint e1 = { "127.0.0.2", port_of(p1) }, e2 = { "127.0.0.3", port_of(p2) }, e3 = { "127.0.0.4", port_of(p3) };
    CHECK_RC(link1(d, cluster(81, e1.ip, e1.port), 2000), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(84, e3.ip, e3.port), 2000), PDRT_SUCCESS);
    CHECK_RC(unlink1(d, 84, 0, 2000), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(82, e2.ip, e2.port), 2000), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(84, e3.ip, e3.port), 2000), PDRT_SUCCESS);
    int fd1 = socket_to(e1.ip, e1.port), fd2 = socket_to(e2.ip, e2.port);
    CHECK(fd1 >= 0 && fd2 >= 0 && fd1 != fd2); /* no transfer ran: the control sockets are the only ones */
    CHECK(eventually(keepalive_on, &e1));
    CHECK(eventually(keepalive_on, &e2));
    CHECK(eventually(keepalive_on, &e3));
    fd1 = socket_to(e1.ip, e1.port);
    CHECK(fd1 >= 0 && int_opt(fd1, IPPROTO_TCP, TCP_KEEPIDLE) == 10);
    CHECK(fd1 >= 0 && int_opt(fd1, IPPROTO_TCP, TCP_KEEPINTVL) == 5);
    CHECK(fd1 >= 0 && int_opt(fd1, IPPROTO_TCP, TCP_KEEPCNT) == 3);
    CHECK(find_link(d, 81).state == PDRT_LINK_LINKED && find_link(d, 82).state == PDRT_LINK_LINKED);
    CHECK(find_link(d, 84).state == PDRT_LINK_LINKED);
    pdrt_destroy(d);
    pdrt_destroy(p3);
    pdrt_destroy(p2);
    pdrt_destroy(p1);
}

void test_lifecycle(void) {
    test_same_host_restart();
    test_keepalive_armed();
}
