/* The overhead benchmark's local OpenAI Chat Completions server, in one thread with epoll: the
 * same protocol as server.py (which starts a thread per connection and stalls beyond a few
 * hundred streams on a small machine), fast enough that 10,000 concurrent paced streams are
 * the client's limit, not the server's.
 *
 *   server [PORT]      prints the port on its first line, then serves until killed
 *
 * The request's `model` says what to send:
 * - `paced-N-US`: N content frames, one every US microseconds (the first at once), each delta
 *   `"<ns> "`: the CLOCK_MONOTONIC nanoseconds read just before the frame is written;
 * - `burst-N`: N frames of `"word "` written at once (for CPU per frame);
 * then a `finish_reason: "stop"` chunk and `data: [DONE]`; the body ends with the connection.
 *
 * Due frames are kept in a binary heap and a timerfd (absolute CLOCK_MONOTONIC, ns precision)
 * fires at the earliest. The soft RLIMIT_NOFILE is raised to the hard one. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static const char HEAD[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                           "cache-control: no-cache\r\nconnection: close\r\n\r\n";
static const char PREFIX[] = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,"
                             "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
static const char SUFFIX[] = "\"},\"finish_reason\":null}]}\n\n";
static const char END[] = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,"
                          "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},"
                          "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

typedef struct conn {
    int fd;
    char *in;          /* the request as it arrives */
    size_t in_len, in_cap;
    char *out;         /* bytes the socket did not take yet */
    size_t out_len, out_off, out_cap;
    long frames_left;  /* paced frames still to send */
    long long interval_ns, due;
    long heap_at;      /* index in the heap, -1 when not scheduled */
    int closing;       /* close once `out` is flushed */
} conn;

static conn **heap;
static long heap_len, heap_cap;
static int epfd, tfd;

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    p = realloc(p, c * elem);
    if (!p) abort();
    *cap = c;
    return p;
}

static void heap_swap(long a, long b) {
    conn *t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_at = a;
    heap[b]->heap_at = b;
}

static void heap_up(long i) {
    while (i > 0 && heap[(i - 1) / 2]->due > heap[i]->due) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(long i) {
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap_len && heap[l]->due < heap[m]->due) m = l;
        if (r < heap_len && heap[r]->due < heap[m]->due) m = r;
        if (m == i) return;
        heap_swap(i, m);
        i = m;
    }
}

static void heap_push(conn *c) {
    size_t cap = (size_t)heap_cap;
    heap = grow(heap, &cap, (size_t)heap_len + 1, sizeof *heap);
    heap_cap = (long)cap;
    heap[heap_len] = c;
    c->heap_at = heap_len++;
    heap_up(c->heap_at);
}

static void heap_remove(conn *c) {
    long i = c->heap_at;
    if (i < 0) return;
    c->heap_at = -1;
    if (i != --heap_len) {
        heap[i] = heap[heap_len];
        heap[i]->heap_at = i;
        heap_up(i);
        heap_down(heap[i]->heap_at);
    }
}

static void arm_timer(void) {
    struct itimerspec it = {0};
    if (heap_len) {
        long long due = heap[0]->due;
        if (due <= 0) due = 1;
        it.it_value.tv_sec = due / 1000000000LL;
        it.it_value.tv_nsec = due % 1000000000LL;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static void drop_conn(conn *c) {
    heap_remove(c);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
}

/* Writes what is pending; returns 0 when the connection is gone. */
static int flush(conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
            epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
            return 1;
        }
        if (n <= 0) {
            drop_conn(c);
            return 0;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    if (c->closing) {
        drop_conn(c);
        return 0;
    }
    return 1;
}

static void append(conn *c, const char *data, size_t len) {
    c->out = grow(c->out, &c->out_cap, c->out_len + len, 1);
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

static void append_frame(conn *c) {
    char ns[32];
    int n = snprintf(ns, sizeof ns, "%lld ", mono_ns());
    append(c, PREFIX, sizeof PREFIX - 1);
    append(c, ns, (size_t)n);
    append(c, SUFFIX, sizeof SUFFIX - 1);
}

/* One paced frame is due (or the first one): send it and schedule the next. */
static void send_paced(conn *c) {
    append_frame(c);
    if (--c->frames_left > 0) {
        c->due += c->interval_ns;
        if (c->heap_at < 0) heap_push(c);
        else heap_down(c->heap_at);
    } else {
        heap_remove(c);
        append(c, END, sizeof END - 1);
        c->closing = 1;
    }
    flush(c);
}

/* The model id after `"model"`, `:` and optional spaces, into `out`. */
static int model_of(const char *body, size_t len, char *out, size_t cap) {
    const char *key = memmem(body, len, "\"model\"", 7);
    if (!key) return 0;
    const char *p = key + 7, *end = body + len;
    while (p < end && (*p == ' ' || *p == ':')) p++;
    if (p >= end || *p++ != '"') return 0;
    size_t n = 0;
    while (p < end && *p != '"' && n + 1 < cap) out[n++] = *p++;
    out[n] = 0;
    return 1;
}

/* The request is complete: start its answer. */
static void answer(conn *c, const char *body, size_t len) {
    char model[128];
    long frames = 10, us = 1000;
    if (model_of(body, len, model, sizeof model)) {
        if (sscanf(model, "burst-%ld", &frames) == 1) {
            append(c, HEAD, sizeof HEAD - 1);
            for (long i = 0; i < frames; i++) {
                append(c, PREFIX, sizeof PREFIX - 1);
                append(c, "word ", 5);
                append(c, SUFFIX, sizeof SUFFIX - 1);
            }
            append(c, END, sizeof END - 1);
            c->closing = 1;
            flush(c);
            return;
        }
        sscanf(model, "paced-%ld-%ld", &frames, &us);
    }
    append(c, HEAD, sizeof HEAD - 1);
    c->interval_ns = us * 1000LL;
    c->frames_left = frames;
    c->due = mono_ns();
    if (frames <= 0) {
        append(c, END, sizeof END - 1);
        c->closing = 1;
        flush(c);
        return;
    }
    send_paced(c);
}

static void on_readable(conn *c) {
    for (;;) {
        c->in = grow(c->in, &c->in_cap, c->in_len + 4096, 1);
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {
            drop_conn(c);
            return;
        }
        c->in_len += (size_t)n;
    }
    if (c->frames_left || c->closing || c->out_len) return; /* already answering */
    char *head_end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!head_end) return;
    size_t head_len = (size_t)(head_end - c->in) + 4, length = 0;
    for (char *line = c->in; line < head_end; line = strstr(line, "\r\n") + 2) {
        if (strncasecmp(line, "content-length:", 15) == 0) length = strtoul(line + 15, NULL, 10);
    }
    if (c->in_len < head_len + length) return;
    answer(c, c->in + head_len, length);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(argc > 1 ? atoi(argv[1]) : 0)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 65535) ||
        getsockname(listener, (struct sockaddr *)&addr, &alen)) {
        perror("server");
        return 1;
    }
    printf("%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    epfd = epoll_create1(0);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    static int listener_tag, timer_tag;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listener_tag};
    epoll_ctl(epfd, EPOLL_CTL_ADD, listener, &ev);
    ev.data.ptr = &timer_tag;
    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);
    struct epoll_event events[512];
    for (;;) {
        int n = epoll_wait(epfd, events, 512, -1);
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &listener_tag) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn *c = calloc(1, sizeof *c);
                    if (!c) abort();
                    c->fd = fd;
                    c->heap_at = -1;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &cev);
                }
            } else if (tag == &timer_tag) {
                unsigned long long expirations;
                if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) abort();
            } else {
                conn *c = tag;
                if (events[i].events & EPOLLOUT) {
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &cev);
                    if (!flush(c)) continue;
                }
                if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
            }
        }
        /* Every frame that is due, earliest first. */
        long long now = mono_ns();
        while (heap_len && heap[0]->due <= now) send_paced(heap[0]);
        arm_timer();
    }
}
