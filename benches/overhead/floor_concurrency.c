/* The raw-socket floor of the concurrency benchmark: STREAMS connections at once in one thread
 * with epoll, each sending the request and scanning the SSE body for the delta's send time (no
 * HTTP library, no JSON parser; a 2 KiB buffer per connection). What the kernel, the server
 * and the machine's load cost before any client library.
 *
 *   floor_concurrency PORT STREAMS FRAMES INTERVAL_US
 *
 * Prints one JSON line (see concurrency_run.py). */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define STALL_NS 10000000LL
#define BUF 2048

typedef struct {
    int fd;
    size_t len;
    char buf[BUF];
} conn;

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Scans complete lines for `"content":"<digits>`; keeps a partial line. */
static void scan(conn *c, samples *delays, long *frames) {
    long long now = mono_ns();
    char *start = c->buf, *end = c->buf + c->len, *nl;
    while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
        *nl = 0;
        char *hit = strstr(start, "\"content\":\"");
        if (hit && hit[11] >= '0' && hit[11] <= '9') {
            push(delays, now - strtoll(hit + 11, NULL, 10));
            (*frames)++;
        }
        start = nl + 1;
    }
    c->len = (size_t)(end - start);
    memmove(c->buf, start, c->len);
}

static long run(int port, long streams, const char *model, samples *delays) {
    int ep = epoll_create1(0);
    char body[128], request[512];
    int body_len = snprintf(body, sizeof body, "{\"model\":\"%s\",\"stream\":true}", model);
    int request_len = snprintf(request, sizeof request,
                               "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                               "content-type: application/json\r\ncontent-length: %d\r\n\r\n%s",
                               body_len, body);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    long open = 0, frames = 0;
    for (long i = 0; i < streams; i++) {
        conn *c = calloc(1, sizeof *c);
        int one = 1;
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof addr)) {
            perror("floor_concurrency: connect");
            exit(1);
        }
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (write(c->fd, request, (size_t)request_len) != request_len) exit(1);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        open++;
    }
    struct epoll_event events[256];
    while (open > 0) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            conn *c = events[i].data.ptr;
            ssize_t got = read(c->fd, c->buf + c->len, BUF - 1 - c->len);
            if (got > 0) {
                c->len += (size_t)got;
                scan(c, delays, &frames);
                if (c->len >= BUF - 1) c->len = 0; /* a line this long carries no frame */
            } else if (got == 0 || errno != EINTR) {
                close(c->fd);
                free(c);
                open--;
            }
        }
    }
    close(ep);
    return frames;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: floor_concurrency PORT STREAMS FRAMES INTERVAL_US\n");
        return 2;
    }
    int port = atoi(argv[1]);
    long streams = atol(argv[2]);
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    char model[64];
    snprintf(model, sizeof model, "paced-%s-%s", argv[3], argv[4]);
    samples warm = {0}, all = {0};
    run(port, 1, "paced-1-0", &warm);
    long idle = status_kb("VmRSS:");
    long long start = mono_ns();
    long frames = run(port, streams, model, &all);
    double wall = (double)(mono_ns() - start) / 1e9;
    long peak = status_kb("VmHWM:");
    qsort(all.v, all.len, sizeof *all.v, cmp);
    size_t late = 0;
    for (size_t i = 0; i < all.len; i++) late += all.v[i] > STALL_NS;
    long long p50 = all.len ? all.v[(all.len - 1) / 2] : 0, p99 = all.len ? all.v[(all.len - 1) * 99 / 100] : 0;
    long long max = all.len ? all.v[all.len - 1] : 0;
    long after = status_kb("VmRSS:");
    printf("{\"streams\":%ld,\"frames\":%ld,\"wall_s\":%.3f,\"late_frames\":%zu,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"max_late_ms\":%.1f,\"rss_idle_kb\":%ld,\"rss_peak_kb\":%ld,"
           "\"kib_per_stream\":%.1f,\"rss_after_kb\":%ld,\"rss_released_kb\":%ld}\n",
           streams, frames, wall, late, p50 / 1e6, p99 / 1e6, max / 1e6, idle, peak,
           (double)(peak - idle) / (double)streams, after, after);
    return 0;
}
