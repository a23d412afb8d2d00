/* Shared by the C clients of the overhead benchmark: the clock, the measurements and the JSON
 * line every client prints (see run.py for the contract). */
#ifndef OVERHEAD_COMMON_H
#define OVERHEAD_COMMON_H

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

/* VmRSS or VmHWM of this process, KiB. */
static inline long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0) kb = strtol(line + n + 1, NULL, 10);
    }
    if (f) fclose(f);
    return kb;
}

typedef struct {
    long long *v;
    size_t len, cap;
} samples;

static inline void push(samples *s, long long x) {
    if (s->len == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) exit(3);
    }
    s->v[s->len++] = x;
}

static inline void print_samples(const char *name, const samples *s) {
    printf("\"%s\":[", name);
    for (size_t i = 0; i < s->len; i++) printf(i ? ",%lld" : "%lld", s->v[i]);
    printf("],");
}

/* The delta's text is "<ns> ": the send time. */
static inline void record_frame(samples *lat, const char *delta, size_t len, long long now) {
    if (len == 0 || delta[0] < '0' || delta[0] > '9') return;
    push(lat, now - strtoll(delta, NULL, 10));
}

static inline void print_result(const samples *ttfe, const samples *lat, double cpu, long burst,
                         long idle, long after) {
    printf("{");
    print_samples("ttfe_ns", ttfe);
    print_samples("lat_ns", lat);
    printf("\"cpu_s\":%.6f,\"burst\":%ld,\"rss_idle_kb\":%ld,\"rss_peak_kb\":%ld,"
           "\"rss_after_kb\":%ld}\n",
           cpu, burst, idle, status_kb("VmHWM:"), after);
}

#endif
