/*
 * What does a pdrt link+unlink pair cost next to the floor: a bare loopback TCP connect, one small
 * request and one small answer, and a close? Measured in one process, in alternating rounds:
 *   tcp     one connection at a time to a trivial server thread (the floor);
 *   link1   pdrt_link + pdrt_unlink of 1 cluster per call;
 *   link16  pdrt_link + pdrt_unlink of 16 clusters per call (16 server contexts).
 * Servers listen on 127.0.0.2, the client binds 127.0.0.3, as the link benchmark of the pool does.
 * Besides wall time it reports process CPU time and context switches per pair (getrusage), which
 * a shared machine disturbs less than wall time.
 *
 * Usage: link_cost [--rounds N] [--pairs N] [--only tcp|link1|link16] [--secret] [--json]
 * --only runs one kind (for strace -c -f / perf stat around one kind); --secret gives every
 * context a cluster secret (the authenticated handshake); --json prints one JSON object instead
 * of the table.
 */
#define _GNU_SOURCE
#include "pdrt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SERVER_IP "127.0.0.2"
#define CLIENT_IP "127.0.0.3"
#define SERVERS PDRT_MAX_CLUSTERS_PER_CALL
#define REQ_BYTES 160  /* the size of a handshake's first message */
#define RESP_BYTES 104 /* the size of its answer */
#define CALL_MS 5000

enum { K_TCP, K_LINK1, K_LINK16, KINDS };
static const char *const kind_name[KINDS] = { "tcp", "link1", "link16" };

typedef struct {
    double wall_us, cpu_us, csw;     /* per pair */
} sample;

static double mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, int code) {
    fprintf(stderr, "link_cost: %s failed (%d, %s)\n", what, code, strerror(errno));
    exit(2);
}

/* ---- the floor: a trivial TCP server thread ---- */

static int tcp_listen_fd;
static uint16_t tcp_port;

static int read_full(int fd, void *buf, size_t len) {
    size_t have = 0;
    while (have < len) {
        ssize_t n = read(fd, (char *)buf + have, len - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    return 0;
}

static void *tcp_server(void *arg) {
    (void)arg;
    char req[REQ_BYTES], resp[RESP_BYTES] = { 0 }, rest[16];
    for (;;) {
        int fd = accept4(tcp_listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL; /* the listener was shut down */
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (read_full(fd, req, sizeof req) == 0 && write(fd, resp, sizeof resp) == (ssize_t)sizeof resp)
            while (read(fd, rest, sizeof rest) > 0) {} /* until the client closes */
        close(fd);
    }
}

static void tcp_start(pthread_t *t) {
    struct sockaddr_in a = { .sin_family = AF_INET };
    inet_pton(AF_INET, SERVER_IP, &a.sin_addr);
    tcp_listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (tcp_listen_fd < 0 || bind(tcp_listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(tcp_listen_fd, 512) != 0)
        die("tcp listen", -1);
    socklen_t len = sizeof a;
    getsockname(tcp_listen_fd, (struct sockaddr *)&a, &len);
    tcp_port = ntohs(a.sin_port);
    if (pthread_create(t, NULL, tcp_server, NULL) != 0) die("pthread_create", -1);
}

static void tcp_stop(pthread_t t) {
    shutdown(tcp_listen_fd, SHUT_RDWR); /* wakes accept() */
    pthread_join(t, NULL);
    close(tcp_listen_fd);
}

static void tcp_pair(void) {
    struct sockaddr_in local = { .sin_family = AF_INET }, remote = { .sin_family = AF_INET, .sin_port = htons(tcp_port) };
    inet_pton(AF_INET, CLIENT_IP, &local.sin_addr);
    inet_pton(AF_INET, SERVER_IP, &remote.sin_addr);
    char req[REQ_BYTES] = { 0 }, resp[RESP_BYTES];
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket", -1);
    /* The port is picked at connect() from the whole 4-tuple, as a client bound to an address
     * should: a bind-time pick searches ports against every TIME_WAIT of the address. */
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&local, sizeof local) != 0) die("bind", -1);
    if (connect(fd, (struct sockaddr *)&remote, sizeof remote) != 0) die("connect", -1);
    if (write(fd, req, sizeof req) != (ssize_t)sizeof req || read_full(fd, resp, sizeof resp) != 0) die("tcp exchange", -1);
    close(fd);
}

/* ---- pdrt ---- */

static pdrt_ctx *servers[SERVERS];
static pdrt_cluster targets[SERVERS];
static pdrt_ctx *client;
static pdrt_config config; /* with --secret: a cluster secret */
static const char SECRET[] = "link-cost-benchmark-cluster-secret";

static void pdrt_start(void) {
    for (int i = 0; i < SERVERS; i++) {
        int32_t rc = pdrt_create(1000 + (uint64_t)i, PDRT_ROLE_PROMPT, SERVER_IP, 0, &config, &servers[i]);
        if (rc != PDRT_SUCCESS) die("pdrt_create (server)", rc);
        uint16_t port = 0;
        pdrt_listen_port(servers[i], &port);
        memset(&targets[i], 0, sizeof targets[i]);
        targets[i].remote_cluster_id = 1000 + (uint64_t)i;
        targets[i].remote_port = port;
        snprintf(targets[i].remote_ip, sizeof targets[i].remote_ip, "%s", SERVER_IP);
        snprintf(targets[i].local_ip, sizeof targets[i].local_ip, "%s", CLIENT_IP);
    }
    int32_t rc = pdrt_create(1, PDRT_ROLE_DECODER, NULL, 0, &config, &client);
    if (rc != PDRT_SUCCESS) die("pdrt_create (client)", rc);
}

/* Servers queue a LINKED and an UNLINKED event per pair; drop them so the queue stays small. */
static void drain_servers(void) {
    pdrt_event ev[64];
    for (int i = 0; i < SERVERS; i++) {
        uint32_t n = 0;
        do pdrt_poll_events(servers[i], ev, 64, &n);
        while (n == 64);
    }
}

static void pdrt_pairs(uint32_t per_call, int pairs) {
    int32_t rets[SERVERS];
    for (int done = 0, s = 0; done < pairs; done += (int)per_call, s = (s + 1) % SERVERS) {
        const pdrt_cluster *c = per_call == 1 ? &targets[s] : targets;
        int32_t rc = pdrt_link(client, c, per_call, CALL_MS, rets);
        if (rc != PDRT_SUCCESS) die("pdrt_link", rets[0]);
        rc = pdrt_unlink(client, c, per_call, CALL_MS, 0, rets);
        if (rc != PDRT_SUCCESS) die("pdrt_unlink", rets[0]);
        if (s == 0) drain_servers();
    }
    drain_servers();
}

/* ---- measuring ---- */

static double cpu_us(const struct rusage *r) {
    return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e6 + (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec);
}

static sample measure(int kind, int pairs) {
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = mono_us();
    if (kind == K_TCP) {
        for (int i = 0; i < pairs; i++) tcp_pair();
    } else {
        pdrt_pairs(kind == K_LINK1 ? 1 : SERVERS, pairs);
    }
    double t1 = mono_us();
    getrusage(RUSAGE_SELF, &r1);
    double csw = (double)(r1.ru_nvcsw - r0.ru_nvcsw + r1.ru_nivcsw - r0.ru_nivcsw);
    return (sample){ (t1 - t0) / pairs, (cpu_us(&r1) - cpu_us(&r0)) / pairs, csw / pairs };
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    int rounds = 6, pairs = 2000, json = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--secret") == 0) {
            config.link_secret = (const uint8_t *)SECRET;
            config.link_secret_len = (uint32_t)strlen(SECRET);
        }
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            const char *k = argv[++i];
            for (int j = 0; j < KINDS; j++)
                if (strcmp(k, kind_name[j]) == 0) only = j;
            if (only < 0) die("--only (tcp, link1 or link16)", -1);
        } else {
            fprintf(stderr, "usage: link_cost [--rounds N] [--pairs N] [--only tcp|link1|link16] [--secret] [--json]\n");
            return 2;
        }
    }
    if (rounds < 1 || pairs < SERVERS) die("--rounds >= 1 and --pairs >= 16", -1);
    pairs -= pairs % SERVERS;

    pthread_t tcp_thread;
    tcp_start(&tcp_thread);
    pdrt_start();
    for (int k = 0; k < KINDS; k++) /* warm up: connection tables, page faults, thread stacks */
        if (only < 0 || only == k) measure(k, SERVERS * 4);

    sample s[KINDS][64];
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < KINDS; i++) {
            int k = r % 2 == 0 ? i : KINDS - 1 - i; /* ABBA: drift hits every kind alike */
            if (only < 0 || only == k) s[k][r] = measure(k, pairs);
        }

    double med[KINDS][3];
    for (int k = 0; k < KINDS; k++) {
        double w[64], c[64], x[64];
        for (int r = 0; r < rounds; r++) w[r] = s[k][r].wall_us, c[r] = s[k][r].cpu_us, x[r] = s[k][r].csw;
        med[k][0] = median(w, rounds);
        med[k][1] = median(c, rounds);
        med[k][2] = median(x, rounds);
    }
    for (int k = 0; k < KINDS; k++)
        if (only >= 0 && only != k) med[k][0] = med[k][1] = med[k][2] = 0;

    if (json) {
        printf("{\"rounds\":%d,\"pairs\":%d,\"kinds\":{", rounds, pairs);
        for (int k = 0; k < KINDS; k++) {
            printf("%s\"%s\":{\"wallUs\":[", k ? "," : "", kind_name[k]);
            for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", only < 0 || only == k ? s[k][r].wall_us : 0);
            printf("],\"cpuUs\":[");
            for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", only < 0 || only == k ? s[k][r].cpu_us : 0);
            printf("],\"contextSwitches\":[");
            for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", only < 0 || only == k ? s[k][r].csw : 0);
            printf("]}");
        }
        printf("}}\n");
    } else {
        printf("%d rounds x %d pairs per kind; medians per link+unlink pair (tcp: per connection)\n", rounds, pairs);
        printf("%-8s %10s %10s %10s %12s %12s\n", "kind", "wall us", "cpu us", "ctx sw", "wall / tcp", "cpu / tcp");
        for (int k = 0; k < KINDS; k++) {
            if (only >= 0 && only != k) continue;
            printf("%-8s %10.1f %10.1f %10.2f", kind_name[k], med[k][0], med[k][1], med[k][2]);
            if (only < 0) printf(" %11.2fx %11.2fx", med[k][0] / med[K_TCP][0], med[k][1] / med[K_TCP][1]);
            printf("\n");
        }
    }

    pdrt_destroy(client);
    for (int i = 0; i < SERVERS; i++) pdrt_destroy(servers[i]);
    tcp_stop(tcp_thread);
    return 0;
}
