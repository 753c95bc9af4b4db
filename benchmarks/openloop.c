/*
 * Open-loop load at a fixed rate, in C: a generator that takes little CPU from the server under
 * test on a shared machine.
 *
 *   openloop PORT REQUEST_FILE RATE DURATION_S WARMUP_S CONNECTIONS
 *
 * Request i is due at start + i / RATE; its latency runs from that intended time to the end of
 * its response, so waiting for a free connection counts (no coordinated omission). Requests due
 * in the first WARMUP_S seconds are sent but left out of the percentiles. Keep-alive HTTP/1.1
 * connections, one request in flight each. The request file format is described in
 * requests_file.py. Prints one JSON object: offered and achieved rate, status counts, latency
 * percentiles (ms). A server that leaves requests unanswered for ANSWER_WAIT_S ends the run:
 * how many were sent and not answered, and how many were never sent, are then reported (a
 * finding, not a generator that waits forever). So does a server that answers, but slower than
 * the rate: once the next request is LATE_S past its due time, nothing more is sent, the
 * requests in flight are awaited, and the rest are reported as never sent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_WAIT_S 60.0
#ifndef LATE_S
#define LATE_S 60.0
#endif

typedef struct {
    char *head;
    size_t head_len;
    int body;
} request_t;

typedef struct {
    int fd;
    long current; /* request index in flight, -1 when free */
    char buf[65536];
    size_t len;
} conn_t;

static char **bodies;
static size_t *body_lens;
static request_t *requests;
static long n_requests;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static long read_number(FILE *f) {
    long value;
    if (fscanf(f, "%ld", &value) != 1) {
        fprintf(stderr, "bad request file\n");
        exit(2);
    }
    fgetc(f); /* the separator after the number */
    return value;
}

static void load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("open request file");
    long n_bodies = read_number(f);
    n_requests = read_number(f);
    bodies = calloc(n_bodies, sizeof *bodies);
    body_lens = calloc(n_bodies, sizeof *body_lens);
    requests = calloc(n_requests, sizeof *requests);
    for (long i = 0; i < n_bodies; i++) {
        body_lens[i] = read_number(f);
        bodies[i] = malloc(body_lens[i]);
        if (fread(bodies[i], 1, body_lens[i], f) != body_lens[i]) die("read body");
    }
    for (long i = 0; i < n_requests; i++) {
        requests[i].body = (int)read_number(f) - 1; /* 1-based in the file (Lua) */
        requests[i].head_len = read_number(f);
        requests[i].head = malloc(requests[i].head_len);
        if (fread(requests[i].head, 1, requests[i].head_len, f) != requests[i].head_len)
            die("read head");
    }
    fclose(f);
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const request_t *r) {
    struct iovec iov[2] = {
        {r->head, r->head_len},
        {bodies[r->body], body_lens[r->body]},
    };
    int count = 2;
    struct iovec *v = iov;
    while (count > 0) {
        ssize_t n = writev(fd, v, count);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("writev");
        }
        while (count > 0 && (size_t)n >= v->iov_len) {
            n -= v->iov_len;
            v++;
            count--;
        }
        if (count > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= n;
        }
    }
}

/* Length of a complete response at the start of buf, 0 if incomplete; *status is set. */
static size_t complete_response(const char *buf, size_t len, int *status) {
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end || len < 12) return 0;
    size_t head = end - buf + 4;
    *status = atoi(buf + 9);
    size_t body = 0;
    for (const char *line = buf; line < end; line++) {
        if ((line == buf || line[-1] == '\n') && strncasecmp(line, "content-length:", 15) == 0) {
            body = strtoul(line + 15, NULL, 10);
            break;
        }
    }
    return len >= head + body ? head + body : 0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, long n, double p) {
    if (n == 0) return 0;
    long i = (long)(p / 100 * n);
    return sorted[i < n ? i : n - 1] * 1000;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: openloop PORT FILE RATE DURATION_S WARMUP_S CONNECTIONS\n");
        return 2;
    }
    int port = atoi(argv[1]);
    double rate = atof(argv[3]), duration = atof(argv[4]), warmup = atof(argv[5]);
    int n_conns = atoi(argv[6]);
    load(argv[2]);
    long count = (long)(rate * (duration + warmup));
    if (count > n_requests) {
        fprintf(stderr, "%ld requests wanted, the file holds %ld\n", count, n_requests);
        return 2;
    }
    long warm = (long)(rate * warmup);

    int ep = epoll_create1(0);
    conn_t *conns = calloc(n_conns, sizeof *conns);
    /* free connections, first in first out: each is reused in turn, so none sits idle long
       enough for the server's keep-alive timeout to close it */
    int *free_list = calloc(n_conns, sizeof *free_list);
    int n_free = 0, free_head = 0;
    for (int i = 0; i < n_conns; i++) {
        conns[i].fd = connect_to(port);
        conns[i].current = -1;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
        free_list[n_free++] = i;
    }
    usleep(200000); /* connections settle before the clock starts */

    double *latencies = calloc(count, sizeof *latencies);
    long measured = 0, done = 0, next = 0;
    long statuses[600] = {0};
    double start = now_s();
    double answered_at = start; /* the last response, or the start */
    long stop_at = count;       /* requests from here on are not sent: the server fell behind */
    struct epoll_event events[256];
    while (done < stop_at) {
        double now = now_s();
        if (n_free < n_conns && now - answered_at > ANSWER_WAIT_S) break;
        if (stop_at == count && next < count && now - (start + next / rate) > LATE_S) {
            stop_at = next;
        }
        /* dispatch every due request to a free connection, oldest first */
        while (next < stop_at && start + next / rate <= now && n_free > 0) {
            conn_t *c = &conns[free_list[free_head]];
            free_head = (free_head + 1) % n_conns;
            n_free--;
            c->current = next;
            send_all(c->fd, &requests[next]);
            next++;
        }
        double wait = 0.1; /* nothing to send: wake up for responses */
        if (next < stop_at && n_free > 0) {
            wait = start + next / rate - now_s();
            if (wait < 0) wait = 0;
        }
        struct timespec timeout = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        int n = epoll_pwait2(ep, events, 256, &timeout, NULL);
        if (n < 0 && errno != EINTR) die("epoll_pwait2");
        double received = now_s();
        for (int e = 0; e < n; e++) {
            conn_t *c = &conns[events[e].data.u32];
            ssize_t got = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
            if (got <= 0) {
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                fprintf(stderr, "connection closed by the server\n");
                return 1;
            }
            c->len += got;
            int status = 0;
            size_t size = complete_response(c->buf, c->len, &status);
            if (!size) {
                if (c->len == sizeof c->buf) {
                    fprintf(stderr, "response larger than the buffer\n");
                    return 1;
                }
                continue;
            }
            memmove(c->buf, c->buf + size, c->len - size);
            c->len -= size;
            if (status > 0 && status < 600) statuses[status]++;
            if (c->current >= warm) latencies[measured++] = received - (start + c->current / rate);
            c->current = -1;
            done++;
            answered_at = received;
            free_list[(free_head + n_free++) % n_conns] = events[e].data.u32;
        }
    }
    double elapsed = now_s() - start;
    qsort(latencies, measured, sizeof *latencies, compare);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
                 usage.ru_stime.tv_usec / 1e6;
    printf("{\"generator\": \"openloop.c\", \"offered_rps\": %.1f, \"achieved_rps\": %.1f, "
           "\"requests\": %ld, \"measured\": %ld, \"warmup_s\": %.1f, \"duration_s\": %.3f, "
           "\"connections\": %d, \"unanswered\": %ld, \"unsent\": %ld, \"fell_behind\": %s, "
           "\"statuses\": {",
           rate, done / elapsed, done, measured, warmup, elapsed, n_conns, next - done,
           count - next, stop_at < count ? "true" : "false");
    int first = 1;
    for (int s = 0; s < 600; s++) {
        if (!statuses[s]) continue;
        printf("%s\"%d\": %ld", first ? "" : ", ", s, statuses[s]);
        first = 0;
    }
    printf("}, \"latency_ms\": {\"p50\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f}, "
           "\"client_cpu_s\": %.3f}\n",
           percentile(latencies, measured, 50), percentile(latencies, measured, 99),
           percentile(latencies, measured, 99.9), percentile(latencies, measured, 100), cpu);
    return 0;
}
