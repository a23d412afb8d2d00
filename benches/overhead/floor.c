/* The floor of the overhead benchmark: a raw-socket client that sends the same request as the
 * others and reads the SSE with no HTTP library, no JSON parser and no allocation per frame.
 * What a library adds is measured over this.
 *
 *   floor PORT ROUNDS FRAMES INTERVAL_US BURST
 *
 * With FLOOR_EPOLL=1 in the environment it waits in epoll_wait on a non-blocking socket, as
 * an event loop (tokio, asyncio, libuv) does, instead of in a blocking read: the difference
 * is what waiting through epoll costs on this machine, before any library. */
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

static char buf[1 << 20];

/* One request for `model`; returns the content frames read. `first` gets the time of the first
 * content frame, `lat` (if not NULL) each frame's delay. */
static long request(int port, const char *model, long long *first, samples *lat) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("connect");
        exit(2);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char body[512], req[1024];
    int blen = snprintf(body, sizeof body,
                        "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],"
                        "\"stream\":true}",
                        model);
    int rlen = snprintf(req, sizeof req,
                        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                        "content-type: application/json\r\nauthorization: Bearer k\r\n"
                        "content-length: %d\r\n\r\n%s",
                        blen, body);
    if (write(fd, req, (size_t)rlen) != rlen) exit(2);
    int ep = -1;
    if (getenv("FLOOR_EPOLL")) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    size_t have = 0, at = 0;
    long frames = 0;
    int in_body = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && ep >= 0 && errno == EAGAIN) {
            struct epoll_event ev;
            if (epoll_wait(ep, &ev, 1, -1) < 0) break;
            continue;
        }
        if (n <= 0) break;
        long long now = mono_ns();
        have += (size_t)n;
        buf[have] = '\0';
        if (!in_body) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            at = (size_t)(end + 4 - buf);
            in_body = 1;
        }
        for (;;) {
            char *nl = strstr(buf + at, "\n\n");
            if (!nl) break;
            char *content = strstr(buf + at, "\"content\":\"");
            if (content && content < nl) {
                if (frames++ == 0 && first) *first = now;
                content += 11;
                if (lat) record_frame(lat, content, (size_t)(nl - content), now);
            }
            at = (size_t)(nl + 2 - buf);
        }
        /* Keep the unread tail at the front. */
        memmove(buf, buf + at, have - at);
        have -= at;
        at = 0;
    }
    if (ep >= 0) close(ep);
    close(fd);
    return frames;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: floor PORT ROUNDS FRAMES INTERVAL_US BURST\n");
        return 2;
    }
    int port = atoi(argv[1]), rounds = atoi(argv[2]);
    long burst = atol(argv[5]);
    char paced[64], bursty[64];
    snprintf(paced, sizeof paced, "paced-%s-%s", argv[3], argv[4]);
    snprintf(bursty, sizeof bursty, "burst-%ld", burst);
    samples ttfe = {0}, lat = {0};
    long idle = status_kb("VmRSS:");
    for (int r = 0; r < rounds; r++) {
        long long first = 0, start = mono_ns();
        request(port, paced, &first, &lat);
        push(&ttfe, first - start);
    }
    double cpu = cpu_seconds();
    request(port, bursty, NULL, NULL);
    cpu = cpu_seconds() - cpu;
    print_result(&ttfe, &lat, cpu, burst, idle, status_kb("VmRSS:"));
    return 0;
}
