/* Socket helpers. Every socket is non-blocking; every wait is a poll() bounded by a deadline. */
#ifndef PDRT_NET_H
#define PDRT_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define NET_OK 0
#define NET_ERR (-1)       /* EOF, reset, refused, ... */
#define NET_TIMEOUT (-2)

/* Parses numeric IPv4/IPv6 text (NUL within PDRT_IP_MAX bytes) into *ss. 0 = valid. */
int net_parse_ip(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);
/* Text of a NUL-terminated field of at most cap bytes; -1 when it lacks its NUL. */
int net_field_len(const char *field, size_t cap);
/* TCP_NODELAY, and with keepalive set, net_keepalive. */
void net_tune(int fd, int keepalive);
/* TCP keepalive that notices a peer gone without a FIN within ~25 s of silence. */
void net_keepalive(int fd);
void net_set_nonblock(int fd);
/* Starts a non-blocking connect (binding local_ip when non-empty). Returns fd or -1. Loopback
 * connects usually complete before this returns, so a first send may be tried at once. */
int net_connect_start(const struct sockaddr_storage *to, socklen_t tolen, const char *local_ip,
                      uint16_t local_port);
/* Waits for a started connect to finish. */
int net_connect_wait(int fd, int64_t deadline);
int net_send_all(int fd, const void *buf, size_t len, int64_t deadline);
int net_recv_all(int fd, void *buf, size_t len, int64_t deadline);
/* Scatter/gather variants; iov is consumed (modified). */
int net_sendv_all(int fd, struct iovec *iov, int cnt, int64_t deadline);
int net_recvv_all(int fd, struct iovec *iov, int cnt, int64_t deadline);
/* Discards len bytes. */
int net_skip(int fd, uint64_t len, int64_t deadline);
/* Numeric text and port of an IPv4/IPv6 address ("" and 0 for another family). */
void net_addr_text(const struct sockaddr_storage *ss, char *ip, size_t cap, uint16_t *port);
/* 1 when a and b hold the same IPv4 or IPv6 address (ports aside). */
int net_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/* 1 when the connection has seen EOF or an error (a dead peer), without consuming data. */
int net_is_dead(int fd);

#endif /* PDRT_NET_H */
