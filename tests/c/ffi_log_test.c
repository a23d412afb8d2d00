/*
 * C test of the log callback (pi_set_log_callback), run by ffi/tests/c_programs.rs against the
 * scripted mock server (a 503 whose error text echoes the API key, then three answers), with
 * PI_AGENT_LOG=debug set so the stderr log runs beside the callback:
 *
 *   ffi_log_test URL
 *
 * Checks: bad levels are refused; at DEBUG a request logs its request and response lines and
 * the retry at INFO; no line holds the API key; a callback replaced by one at WARN sees no
 * DEBUG line and its predecessor's free_user_data runs; removing the callback stops the lines
 * and frees its user_data. Exits 0 when every check passed, else prints the failed check and
 * exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SECRET "sk-log-secret-5150"
#define MAX_LINES 64

static const char *HELLO_CONTEXT =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\",\"timestamp\":0}]}";

typedef struct {
    pthread_mutex_t lock;
    char lines[MAX_LINES][512]; /* "level target: message" */
    int count;
    atomic_int calls;
    atomic_int debug;
    atomic_int secrets; /* lines that held the key (must stay 0) */
} log_state;

static const char *level_name(pi_log_level level) {
    switch (level) {
        case PI_LOG_LEVEL_ERROR: return "error";
        case PI_LOG_LEVEL_WARN: return "warn";
        case PI_LOG_LEVEL_INFO: return "info";
        case PI_LOG_LEVEL_DEBUG: return "debug";
        case PI_LOG_LEVEL_TRACE: return "trace";
    }
    return "?";
}

/* Runs on whichever thread logs, maybe several at once: only atomics and the lock. */
static void on_log(void *user_data, pi_log_level level, const char *target, const char *message) {
    log_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    if (level == PI_LOG_LEVEL_DEBUG) atomic_fetch_add(&s->debug, 1);
    if (strstr(message, SECRET) != NULL || strstr(target, SECRET) != NULL) {
        atomic_fetch_add(&s->secrets, 1);
    }
    pthread_mutex_lock(&s->lock);
    if (s->count < MAX_LINES) {
        snprintf(s->lines[s->count++], sizeof s->lines[0], "%s %s: %s", level_name(level), target,
                 message);
    }
    pthread_mutex_unlock(&s->lock);
}

static atomic_int freed;

static void free_state(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&freed, 1);
}

/* Whether some line starts with `prefix` and contains `needle`. */
static int has_line(log_state *s, const char *prefix, const char *needle) {
    int found = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->count; i++) {
        if (strncmp(s->lines[i], prefix, strlen(prefix)) == 0 && strstr(s->lines[i], needle)) {
            found = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

static void request(pi_model *model) {
    pi_stream_options *options = NULL;
    OK(pi_stream_options_from_json(
        "{\"apiKey\":\"" SECRET "\",\"maxRetries\":2,\"maxRetryDelayMs\":10}", &options));
    pi_stream *stream = NULL;
    OK(pi_stream_open_with_options(model, HELLO_CONTEXT, options, false, &stream));
    pi_event event;
    pi_stream_event_kind last = PI_STREAM_EVENT_KIND_NONE;
    while (pi_stream_next(stream, &event)) last = event.kind;
    CHECK(last == PI_STREAM_EVENT_KIND_DONE);
    pi_stream_free(stream);
    pi_stream_options_free(options);
}

static log_state first = {.lock = PTHREAD_MUTEX_INITIALIZER};
static log_state second = {.lock = PTHREAD_MUTEX_INITIALIZER};

int main(int argc, char **argv) {
    CHECK(argc == 2);
    char model_json[512];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"mock-model\",\"api\":\"openai-completions\",\"provider\":\"mock\","
             "\"baseUrl\":\"%s\"}",
             argv[1]);
    pi_model *model = NULL;
    OK(pi_model_from_json(model_json, &model));

    /* Levels outside pi_log_level are refused, and nothing is registered or freed. */
    EXPECT_ERROR(pi_set_log_callback(0, on_log, &first, free_state), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_set_log_callback(6, on_log, &first, free_state), PI_ERROR_KIND_INVALID_ARGUMENT);
    CHECK(atomic_load(&freed) == 0);

    /* DEBUG: the request, its retry and its response, never the key. */
    OK(pi_set_log_callback(PI_LOG_LEVEL_DEBUG, on_log, &first, free_state));
    request(model);
    CHECK(atomic_load(&first.debug) >= 2);
    CHECK(has_line(&first, "debug pi_agent::http:", "server.address=127.0.0.1"));
    CHECK(has_line(&first, "debug pi_agent::http:", "http.response.status_code=200"));
    CHECK(has_line(&first, "info pi_agent::retry:", "503"));
    CHECK(atomic_load(&first.secrets) == 0);
    for (int i = 0; i < first.count; i++) printf("line: %s\n", first.lines[i]);

    /* Replaced by a WARN callback: a clean request logs nothing at WARN, and the first
     * callback's user_data is freed. */
    OK(pi_set_log_callback(PI_LOG_LEVEL_WARN, on_log, &second, free_state));
    CHECK(wait_equals(&freed, 1));
    int first_calls = atomic_load(&first.calls);
    request(model);
    CHECK(atomic_load(&first.calls) == first_calls);
    CHECK(atomic_load(&second.calls) == 0);

    /* Removed: its user_data is freed and nothing more arrives. */
    OK(pi_set_log_callback(0, NULL, NULL, NULL));
    CHECK(wait_equals(&freed, 2));
    request(model);
    CHECK(atomic_load(&second.calls) == 0);
    CHECK(atomic_load(&first.calls) == first_calls);

    pi_model_free(model);
    printf("ffi_log_test: ok\n");
    return 0;
}
