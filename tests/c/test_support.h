/*
 * Helpers shared by the C test programs of the pi-agent C API in tests/c: checks that exit on the
 * first failure, error checks, and small string and JSON helpers (enough for the flat JSON the
 * tests look at; a real program would use a JSON parser).
 */
#ifndef PI_TEST_SUPPORT_H
#define PI_TEST_SUPPORT_H

#include "pi_agent.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

/* Fails on an error, printing its kind and message. */
#define OK(call) ok_or_die((call), #call, __LINE__)

static inline void ok_or_die(pi_error *err, const char *what, int line) {
    if (err != NULL) {
        pi_str msg = pi_error_message(err);
        fprintf(stderr, "line %d: %s failed: kind %u: %.*s\n", line, what,
                (unsigned)pi_error_get_kind(err), (int)msg.len, msg.data);
        exit(1);
    }
}

/* Checks that `err` has `kind` (and, if `message` is not NULL, exactly that message). */
static inline void expect_error(pi_error *err, pi_error_kind kind, const char *message, int line) {
    if (err == NULL) {
        fprintf(stderr, "line %d: expected error kind %u, got success\n", line, (unsigned)kind);
        exit(1);
    }
    pi_str msg = pi_error_message(err);
    if (pi_error_get_kind(err) != kind ||
        (message != NULL && (msg.len != strlen(message) || memcmp(msg.data, message, msg.len)))) {
        fprintf(stderr, "line %d: expected error kind %u, got %u: %.*s\n", line, (unsigned)kind,
                (unsigned)pi_error_get_kind(err), (int)msg.len, msg.data);
        exit(1);
    }
    pi_error_free(err);
}
#define EXPECT_ERROR(call, kind) expect_error((call), (kind), NULL, __LINE__)

static inline int str_eq(pi_str s, const char *c) {
    return s.len == strlen(c) && memcmp(s.data, c, s.len) == 0;
}

/* Whether `s` contains `needle`. */
static inline int str_contains(pi_str s, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    for (size_t i = 0; i + n <= s.len; i++) {
        if (memcmp(s.data + i, needle, n) == 0) return 1;
    }
    return 0;
}

static inline int count(const char *haystack, const char *needle) {
    int n = 0;
    for (const char *p = strstr(haystack, needle); p != NULL; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Whether `first` occurs in `haystack`, and `second` occurs after it. */
static inline int in_order(const char *haystack, const char *first, const char *second) {
    const char *a = strstr(haystack, first);
    return a != NULL && strstr(a + strlen(first), second) != NULL;
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (up to 10 s) until *flag is non-zero. */
static inline int wait_for(atomic_int *flag) {
    for (int i = 0; i < 10000 && atomic_load(flag) == 0; i++) sleep_ms(1);
    return atomic_load(flag) != 0;
}

/* Waits (up to 10 s) until *value == target, e.g. for a free_user_data that runs on a
 * runtime thread once the library lets go. */
static inline int wait_equals(atomic_int *value, int target) {
    for (int i = 0; i < 10000 && atomic_load(value) != target; i++) sleep_ms(1);
    return atomic_load(value) == target;
}

/* Copies the first string value of "key" from JSON (no escapes needed here). */
static inline int json_string(const char *json, size_t len, const char *key, char *out,
                              size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    char *copy = malloc(len + 1);
    memcpy(copy, json, len);
    copy[len] = '\0';
    int found = 0;
    const char *start = strstr(copy, pattern);
    if (start != NULL) {
        start += strlen(pattern);
        const char *end = strchr(start, '"');
        if (end != NULL && (size_t)(end - start) < size) {
            memcpy(out, start, (size_t)(end - start));
            out[end - start] = '\0';
            found = 1;
        }
    }
    free(copy);
    return found;
}

/* The agent's transcript as JSON (free it with pi_string_free). */
static inline char *messages_json(pi_agent *agent) {
    char *json = NULL;
    OK(pi_agent_messages_json(agent, &json));
    CHECK(json != NULL);
    return json;
}

#endif /* PI_TEST_SUPPORT_H */
