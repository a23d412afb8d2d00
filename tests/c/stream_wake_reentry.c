/*
 * One stream read only from its own wake callback: `stream_wake_reentry MODEL_JSON` opens a
 * stream and calls `pi_stream_try_next` once; from then on every read happens inside the
 * `wake` callback, which reads until `PI_POLL_PENDING` (registering itself again) or the end.
 * A burst of small frames fills the stream's queue, so reading it wakes the provider's wait
 * for room on the reading thread itself: that wake-up must come after the read, not inside it
 * (where the callback's own `pi_stream_try_next` would wait for the lock its caller holds).
 * Prints `deltas N` and exits 0 once the stream ended; exits 1 if it has not within 60 s.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <stdatomic.h>
#include <stdio.h>

static const char *CONTEXT =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\",\"timestamp\":0}]}";

typedef struct {
    pi_stream *stream;
    atomic_int deltas;
    atomic_int ended;
} reader;

static void read_from_wake(void *user_data);

/* Reads until the stream has nothing now (its wake is then registered) or has ended. */
static void read_ready(reader *r) {
    pi_event event;
    for (;;) {
        pi_poll answer = pi_stream_try_next(r->stream, &event, read_from_wake, r);
        if (answer == PI_POLL_PENDING) return;
        if (answer == PI_POLL_END) {
            atomic_store(&r->ended, 1);
            return;
        }
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) atomic_fetch_add(&r->deltas, 1);
    }
}

static void read_from_wake(void *user_data) { read_ready(user_data); }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_JSON\n", argv[0]);
        return 2;
    }
    pi_model *model = NULL;
    OK(pi_model_from_json(argv[1], &model));
    static reader r;
    OK(pi_stream_open(model, CONTEXT, "{\"apiKey\":\"k\"}", &r.stream));
    read_ready(&r);
    for (int i = 0; i < 60000 && !atomic_load(&r.ended); i++) sleep_ms(1);
    CHECK(atomic_load(&r.ended));
    printf("deltas %d\n", atomic_load(&r.deltas));
    pi_stream_free(r.stream);
    pi_model_free(model);
    return 0;
}
