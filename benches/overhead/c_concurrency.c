/* The C concurrency client of the overhead benchmark: STREAMS pi_stream_open calls at once,
 * opened one after the other, each read with pi_stream_next on a thread of its own (the
 * blocking pull read: a C host holding many streams at once that way holds a thread each;
 * their stacks are 64 KiB, and what as many parked threads cost is measured apart, in
 * `thread_kib`). With PI_OVERHEAD_C_EVENT_LOOP=1 every stream is read instead from the main
 * thread with pi_stream_try_next, as an event loop reads them: each stream's wake callback
 * puts its index on a ready list and signals an eventfd the loop waits on.
 *
 *   c_concurrency PORT STREAMS FRAMES INTERVAL_US
 *
 * Prints one JSON line (see concurrency_run.py for the contract). */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pi_agent.h"

#define STALL_NS 10000000LL

static pi_model *model;
static const char *CONTEXT = "{\"messages\":[{\"role\":\"user\",\"content\":\"go\",\"timestamp\":0}]}";
static pthread_barrier_t gate;

typedef struct {
    pi_stream *stream;
    samples delays;
    int failed;
    int ended;
} job;

static void *one(void *arg) {
    job *j = arg;
    pthread_barrier_wait(&gate);
    pi_stream *stream = j->stream;
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA)
            record_frame(&j->delays, event.delta.data, event.delta.len, mono_ns());
        else if (event.kind == PI_STREAM_EVENT_KIND_ERROR)
            j->failed = 1;
    }
    pi_stream_free(stream);
    return NULL;
}

/* The event-loop mode: indices of the streams whose wake callback ran, and the eventfd the
 * loop waits on. A stream has at most one registration at a time, so the list holds at most
 * one entry per stream. */
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static long *ready;
static long ready_len;
static int ready_fd = -1;

static void wake(void *user_data) {
    pthread_mutex_lock(&ready_lock);
    ready[ready_len++] = (long)(intptr_t)user_data;
    pthread_mutex_unlock(&ready_lock);
    uint64_t one = 1;
    if (write(ready_fd, &one, sizeof one) != sizeof one) perror("eventfd write");
}

/* Reads every stream of `jobs` to its end from this thread. */
static void event_loop(job *jobs, long n) {
    ready = malloc((size_t)n * sizeof *ready);
    long *batch = malloc((size_t)n * sizeof *batch);
    ready_fd = eventfd(0, 0);
    long batch_len = n, open = n;
    for (long i = 0; i < n; i++) batch[i] = i;
    while (open > 0) {
        for (long k = 0; k < batch_len; k++) {
            job *j = &jobs[batch[k]];
            pi_event event;
            while (!j->ended) {
                pi_poll answer = pi_stream_try_next(j->stream, &event, wake, (void *)(intptr_t)batch[k]);
                if (answer == PI_POLL_PENDING) break;
                if (answer == PI_POLL_END) {
                    j->ended = 1;
                    open--;
                    pi_stream_free(j->stream);
                } else if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
                    record_frame(&j->delays, event.delta.data, event.delta.len, mono_ns());
                } else if (event.kind == PI_STREAM_EVENT_KIND_ERROR) {
                    j->failed = 1;
                }
            }
        }
        if (open == 0) break;
        pthread_mutex_lock(&ready_lock);
        while (ready_len == 0) {
            pthread_mutex_unlock(&ready_lock);
            uint64_t count;
            if (read(ready_fd, &count, sizeof count) != sizeof count) perror("eventfd read");
            pthread_mutex_lock(&ready_lock);
        }
        long *taken = ready;
        ready = batch;
        batch = taken;
        batch_len = ready_len;
        ready_len = 0;
        pthread_mutex_unlock(&ready_lock);
    }
    close(ready_fd);
    free(ready);
    free(batch);
}

static void *parked(void *arg) {
    (void)arg;
    pthread_barrier_wait(&gate);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Starts `n` threads running `fn` (64 KiB stacks) behind the gate; with `jobs`, each job's
 * stream is opened first (on this thread: the reader threads only wait for events). */
static pthread_t *spawn(long n, void *(*fn)(void *), job *jobs) {
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&gate, NULL, (unsigned)n + 1);
    for (long i = 0; i < n; i++) {
        if (jobs && pi_stream_open(model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}", &jobs[i].stream)) {
            fprintf(stderr, "pi_stream_open failed\n");
            exit(1);
        }
        if (pthread_create(&threads[i], &attr, fn, jobs ? &jobs[i] : NULL)) {
            perror("pthread_create");
            exit(1);
        }
    }
    pthread_attr_destroy(&attr);
    return threads;
}

static void join_all(pthread_t *threads, long n) {
    for (long i = 0; i < n; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&gate);
    free(threads);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: c_concurrency PORT STREAMS FRAMES INTERVAL_US\n");
        return 2;
    }
    long streams = atol(argv[2]);
    char json[512];
    snprintf(json, sizeof json,
             "{\"id\":\"paced-%s-%s\",\"name\":\"p\",\"api\":\"openai-completions\",\"provider\":"
             "\"openai\",\"baseUrl\":\"http://127.0.0.1:%s/v1\"}",
             argv[3], argv[4], argv[1]);
    if (pi_model_from_json(json, &model)) return 1;
    /* One stream first: the library's one-time set-up is not a stream's cost. */
    job warm = {0};
    pthread_t *w = spawn(1, one, &warm);
    pthread_barrier_wait(&gate);
    join_all(w, 1);
    free(warm.delays.v);

    long idle = status_kb("VmRSS:");
    job *jobs = calloc((size_t)streams, sizeof *jobs);
    /* Room for every frame's delay up front: the measurement's own memory stays small. */
    for (long i = 0; i < streams; i++) {
        jobs[i].delays.cap = (size_t)atol(argv[3]) + 1;
        jobs[i].delays.v = malloc(jobs[i].delays.cap * sizeof(long long));
    }
    int event_loop_mode = getenv("PI_OVERHEAD_C_EVENT_LOOP") != NULL;
    long long start = mono_ns();
    pthread_t *t;
    if (event_loop_mode) {
        for (long i = 0; i < streams; i++)
            if (pi_stream_open(model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}", &jobs[i].stream)) {
                fprintf(stderr, "pi_stream_open failed\n");
                return 1;
            }
        event_loop(jobs, streams);
    } else {
        t = spawn(streams, one, jobs);
        pthread_barrier_wait(&gate);
        join_all(t, streams);
    }
    double wall = (double)(mono_ns() - start) / 1e9;
    long peak = status_kb("VmHWM:");
    samples all = {0};
    int failed = 0;
    for (long i = 0; i < streams; i++) {
        for (size_t k = 0; k < jobs[i].delays.len; k++) push(&all, jobs[i].delays.v[k]);
        failed += jobs[i].failed;
        free(jobs[i].delays.v);
    }
    free(jobs);
    if (failed) fprintf(stderr, "c_concurrency: %d streams failed\n", failed);
    qsort(all.v, all.len, sizeof *all.v, cmp);
    size_t late = 0;
    for (size_t i = 0; i < all.len; i++) late += all.v[i] > STALL_NS;
    long long p50 = all.len ? all.v[(all.len - 1) / 2] : 0, p99 = all.len ? all.v[(all.len - 1) * 99 / 100] : 0;
    long long max = all.len ? all.v[all.len - 1] : 0;
    usleep(500000);
    long after = status_kb("VmRSS:");
    pi_release_memory();
    long released = status_kb("VmRSS:");
    /* What the threads alone cost: as many parked threads (after the measurements above). */
    long before_threads = status_kb("VmRSS:"), with_threads = before_threads;
    if (!event_loop_mode) {
        t = spawn(streams, parked, NULL);
        with_threads = status_kb("VmRSS:");
        pthread_barrier_wait(&gate);
        join_all(t, streams);
    }
    printf("{\"streams\":%ld,\"frames\":%zu,\"wall_s\":%.3f,\"late_frames\":%zu,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"max_late_ms\":%.1f,\"rss_idle_kb\":%ld,\"rss_peak_kb\":%ld,"
           "\"kib_per_stream\":%.1f,\"thread_kib\":%.1f,\"rss_after_kb\":%ld,\"rss_released_kb\":%ld}\n",
           streams, all.len, wall, late, p50 / 1e6, p99 / 1e6, max / 1e6, idle, peak,
           (double)(peak - idle) / (double)streams,
           (double)(with_threads - before_threads) / (double)streams, after, released);
    pi_model_free(model);
    return failed ? 1 : 0;
}
