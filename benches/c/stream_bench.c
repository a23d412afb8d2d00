/*
 * Cost of the C pull stream (pi_stream_open / pi_stream_next) per event, and the peak memory of
 * a whole response, as a C program consumes it: run by benches/c/run.sh, which builds it against
 * the release library.
 *
 *   stream_bench text [DELTAS [RUNS]]     an openai-completions body of DELTAS text deltas
 *                                         (default 20000)
 *   stream_bench tool [MEGABYTES [RUNS]]  one tool call whose arguments are MEGABYTES MiB of JSON
 *                                         in 10,000 deltas (default 4); the final message is
 *                                         read with pi_stream_result_json, as a program that
 *                                         runs the tool would
 *
 * Each event's kind and delta are read (what a program printing text does); with `PI_BENCH_JSON=1`
 * each event's JSON as well (pi_stream_event_json). The whole response is built before
 * the clock starts and served at once from a local TCP server in a child process (forked before
 * the library starts), so the timing is the library's: HTTP, SSE, chunk parsing, event
 * delivery, the C view. The peak RSS is this process's (the server is another process) after
 * its first response.
 *
 * Prints one line per case: events, best and median microseconds per event, peak RSS.
 */
#define _GNU_SOURCE

#include "pi_agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOOL_DELTAS 10000

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* A growable byte buffer. */
typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static void append(buffer *b, const char *text, size_t len) {
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (b->data == NULL) die("realloc");
    }
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = '\0';
}

static void append_str(buffer *b, const char *text) { append(b, text, strlen(text)); }

/* DELTAS chunks of "word " and the finish chunk, as the core benchmark event_delivery serves. */
static void text_body(buffer *body, long deltas) {
    static const char chunk[] =
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"},"
        "\"finish_reason\":null}]}\n\n";
    for (long i = 0; i < deltas; i++) append(body, chunk, sizeof chunk - 1);
    append_str(body,
               "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
               "\"stop\"}]}\n\ndata: [DONE]\n\n");
}

/* One tool call `write` with {"path":"src/main.rs","content":"let x = 1; ..."} of `megabytes`
 * MiB, its argument text cut into TOOL_DELTAS fragments (escaped as JSON strings). */
static void tool_body(buffer *body, long megabytes) {
    buffer args = {0};
    append_str(&args, "{\"path\":\"src/main.rs\",\"content\":\"");
    size_t target = (size_t)megabytes * 1024 * 1024;
    while (args.len + 2 < target) append_str(&args, "let x = 1; ");
    append_str(&args, "\"}");
    append_str(body,
               "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
               "\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
               "\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}"
               "\n\n");
    size_t piece = (args.len + TOOL_DELTAS - 1) / TOOL_DELTAS;
    for (size_t at = 0; at < args.len; at += piece) {
        size_t end = at + piece < args.len ? at + piece : args.len;
        append_str(body,
                   "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
                   "\"index\":0,\"function\":{\"arguments\":\"");
        for (size_t i = at; i < end; i++) {
            if (args.data[i] == '"' || args.data[i] == '\\') append(body, "\\", 1);
            append(body, &args.data[i], 1);
        }
        append_str(body, "\"}}]},\"finish_reason\":null}]}\n\n");
    }
    append_str(body,
               "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
               "\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    free(args.data);
}

/* Reads one request (headers, then content-length bytes); returns 0 at end of connection. */
static int read_request(FILE *in) {
    char line[8192];
    long length = 0;
    for (;;) {
        if (fgets(line, sizeof line, in) == NULL) return 0;
        if (strncasecmp(line, "content-length:", 15) == 0) length = strtol(line + 15, NULL, 10);
        if (strcmp(line, "\r\n") == 0) break;
    }
    for (long i = 0; i < length; i++) {
        if (fgetc(in) == EOF) return 0;
    }
    return 1;
}

/* The server process: answers every request on every connection with the whole response. */
static void serve(int listener, const char *mode, long size) {
    buffer body = {0};
    if (strcmp(mode, "tool") == 0) {
        tool_body(&body, size);
    } else {
        text_body(&body, size);
    }
    char head[256];
    int head_len = snprintf(head, sizeof head,
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                            "content-length: %zu\r\n\r\n",
                            body.len);
    for (;;) {
        int connection = accept(listener, NULL, NULL);
        if (connection < 0) continue;
        if (fork() == 0) {
            FILE *in = fdopen(dup(connection), "r");
            while (in != NULL && read_request(in)) {
                if (send(connection, head, (size_t)head_len, MSG_NOSIGNAL) < 0) break;
                size_t sent = 0;
                while (sent < body.len) {
                    ssize_t n = send(connection, body.data + sent, body.len - sent, MSG_NOSIGNAL);
                    if (n <= 0) _exit(0);
                    sent += (size_t)n;
                }
            }
            _exit(0);
        }
        close(connection);
    }
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void check(pi_error *err, const char *what) {
    if (err != NULL) {
        pi_str message = pi_error_message(err);
        fprintf(stderr, "%s failed: %.*s\n", what, (int)message.len, message.data);
        exit(1);
    }
}

/* One request read to its end; returns the number of events. */
static int read_json; /* PI_BENCH_JSON=1: read every event's JSON too */

static long run_once(pi_model *model, const char *context, int read_result, size_t *bytes) {
    pi_stream *stream = NULL;
    check(pi_stream_open(model, context, "{\"apiKey\":\"k\"}", &stream), "pi_stream_open");
    pi_event event;
    long events = 0;
    pi_stream_event_kind last = PI_STREAM_EVENT_KIND_NONE;
    while (pi_stream_next(stream, &event)) {
        events++;
        last = event.kind;
        *bytes += event.delta.len;
        if (read_json) *bytes += pi_stream_event_json(stream).len;
    }
    if (last != PI_STREAM_EVENT_KIND_DONE) {
        char *json = NULL;
        check(pi_stream_result_json(stream, &json), "pi_stream_result_json");
        fprintf(stderr, "the stream did not end with done: %s\n", json);
        exit(1);
    }
    if (read_result) {
        char *json = NULL;
        check(pi_stream_result_json(stream, &json), "pi_stream_result_json");
        *bytes += strlen(json);
        pi_string_free(json);
    }
    pi_stream_free(stream);
    return events;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "text";
    int tool = strcmp(mode, "tool") == 0;
    if (!tool && strcmp(mode, "text") != 0) {
        fprintf(stderr, "usage: %s text [DELTAS [RUNS]] | tool [MEGABYTES [RUNS]]\n", argv[0]);
        return 2;
    }
    long size = argc > 2 ? strtol(argv[2], NULL, 10) : (tool ? 4 : 20000);
    int runs = argc > 3 ? atoi(argv[3]) : 10;
    read_json = getenv("PI_BENCH_JSON") != NULL && strcmp(getenv("PI_BENCH_JSON"), "1") == 0;
    if (size <= 0 || runs <= 0 || runs > 1000) {
        fprintf(stderr, "bad size or run count\n");
        return 2;
    }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) die("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t address_len = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 ||
        listen(listener, 16) < 0 ||
        getsockname(listener, (struct sockaddr *)&address, &address_len) < 0) {
        die("listen");
    }
    pid_t server = fork();
    if (server < 0) die("fork");
    if (server == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* connection handlers are reaped automatically */
        serve(listener, mode, size);
        _exit(0);
    }
    close(listener);

    char model_json[256];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"bench\",\"name\":\"bench\",\"api\":\"openai-completions\","
             "\"provider\":\"openai\",\"baseUrl\":\"http://127.0.0.1:%d/v1\"}",
             ntohs(address.sin_port));
    pi_model *model = NULL;
    check(pi_model_from_json(model_json, &model), "pi_model_from_json");
    const char *context =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}]}";

    size_t bytes = 0;
    /* The first response also starts the runtime and the connection: untimed, it gives the
     * peak memory of a process that streams one response (later runs reuse freed memory, but
     * the allocator's fragmentation makes their peak drift). */
    long events = run_once(model, context, tool, &bytes);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double peak_mib = (double)usage.ru_maxrss / 1024.0;
    double *times = calloc((size_t)runs, sizeof *times);
    if (times == NULL) die("calloc");
    for (int i = 0; i < runs; i++) {
        double start = now_us();
        long n = run_once(model, context, tool, &bytes);
        times[i] = (now_us() - start) / (double)n;
        if (n != events) {
            fprintf(stderr, "run %d: %ld events, the warm-up had %ld\n", i, n, events);
            return 1;
        }
    }
    qsort(times, (size_t)runs, sizeof *times, compare);
    printf("%s %ld%s: %ld events, best %.2f us/event, median %.2f us/event, peak RSS %.1f MiB"
           " (%zu bytes read)\n",
           mode, size, tool ? " MiB" : " deltas", events, times[0], times[runs / 2], peak_mib,
           bytes);
    free(times);
    pi_model_free(model);
    kill(server, SIGKILL);
    waitpid(server, NULL, 0);
    return 0;
}
