/* Where a paced frame's time goes, for any overhead client, without touching it: a library
 * loaded with LD_PRELOAD that timestamps, for every read that brings exactly one frame's text
 * delta, when the client's last wait (poll, epoll_wait) returned, when the read (recv, read)
 * was entered and when it returned, each minus the frame's send time (the "<ns> " the server
 * puts in the delta). At exit it appends one line of medians (µs) to $SPLIT_LOG:
 *
 *   TAG frames=N wait_returned=W read_entered=E read_returned=R
 *
 * Set against the client's own per-frame figure (run.py), W says when the kernel handed the
 * thread back, E - W what the client ran before reading, R - E the read itself, and the
 * client's figure minus R what it ran after (parsing, events, its user).
 *
 *   cc -O2 -shared -fPIC -o split.so split.c -ldl
 *   python3 run.py --client floor=... \
 *       --client "rb=env LD_PRELOAD=$PWD/split.so SPLIT_LOG=/tmp/split.log SPLIT_TAG=rb ..."
 *
 * The interposed calls cost two clock reads each, which the client's figure then includes:
 * compare split runs with split runs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 200000

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long wait_returned;
static long long waited[MAX_FRAMES], entered[MAX_FRAMES], returned[MAX_FRAMES];
static int frames;

/* Records a read of `got` bytes into `buf` entered at `entry`, if it brought exactly one
 * content delta. */
static void record(const void *buf, ssize_t got, long long entry) {
    long long exit = now_ns();
    static const char key[] = "\"content\":\"";
    if (got <= 0 || frames == MAX_FRAMES) return;
    const char *hit = memmem(buf, (size_t)got, key, sizeof key - 1);
    if (!hit) return;
    const char *rest = hit + sizeof key - 1;
    if (memmem(rest, (size_t)((const char *)buf + got - rest), key, sizeof key - 1)) return;
    long long sent = strtoll(rest, NULL, 10);
    if (sent <= 0) return;
    waited[frames] = wait_returned ? wait_returned - sent : 0;
    entered[frames] = entry - sent;
    returned[frames] = exit - sent;
    frames++;
}

#define REAL(name) \
    static __typeof__(name) *real; \
    if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    REAL(poll);
    int ready = real(fds, n, timeout);
    wait_returned = now_ns();
    return ready;
}

int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
    REAL(epoll_wait);
    int ready = real(epfd, events, max, timeout);
    wait_returned = now_ns();
    return ready;
}

ssize_t recv(int fd, void *buf, size_t len, int flags) {
    REAL(recv);
    long long entry = now_ns();
    ssize_t got = real(fd, buf, len, flags);
    record(buf, got, entry);
    return got;
}

ssize_t read(int fd, void *buf, size_t len) {
    REAL(read);
    long long entry = now_ns();
    ssize_t got = real(fd, buf, len);
    record(buf, got, entry);
    return got;
}

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static double median_us(long long *values) {
    qsort(values, (size_t)frames, sizeof *values, by_value);
    return values[frames / 2] / 1e3;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("SPLIT_LOG"), *tag = getenv("SPLIT_TAG");
    if (!frames || !path) return;
    FILE *log = fopen(path, "a");
    if (!log) return;
    fprintf(log, "%s frames=%d wait_returned=%.1f read_entered=%.1f read_returned=%.1f\n",
            tag ? tag : "-", frames, median_us(waited), median_us(entered), median_us(returned));
    fclose(log);
}
