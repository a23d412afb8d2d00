/*
 * One request through the C pull stream, reported as JSON for a harness to compare:
 *
 *   stream_result MODEL_JSON CONTEXT_JSON OPTIONS_JSON [ABORT_AFTER_TEXT_DELTAS]
 *
 * prints every event's JSON (`pi_stream_event_json`) on its own line as `EVENT <json>`, then
 * `RESULT <json>` (`pi_stream_result_json`). With ABORT_AFTER_TEXT_DELTAS = n > 0 it calls
 * `pi_stream_abort` after the n-th text delta, as a program stopping a generation would.
 * Used by ffi/tests/openai_compatible.rs (the population's stream shapes on the mock server)
 * and ffi/tests/llama_server.rs (a real llama-server).
 */
#include "pi_agent.h"

#include <stdio.h>
#include <stdlib.h>

static void fail(const char *what, pi_error *err) {
    pi_str message = pi_error_message(err);
    fprintf(stderr, "%s: %.*s\n", what, (int)message.len, message.data);
    pi_error_free(err);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL_JSON CONTEXT_JSON OPTIONS_JSON [ABORT_AFTER]\n", argv[0]);
        return 2;
    }
    long abort_after = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
    pi_model *model = NULL;
    pi_error *err = pi_model_from_json(argv[1], &model);
    if (err) fail("pi_model_from_json", err);
    pi_stream *stream = NULL;
    err = pi_stream_open(model, argv[2], argv[3], &stream);
    if (err) fail("pi_stream_open", err);

    long text_deltas = 0;
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        pi_str json = pi_stream_event_json(stream);
        printf("EVENT %.*s\n", (int)json.len, json.data);
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA && ++text_deltas == abort_after) {
            pi_stream_abort(stream);
        }
    }
    char *message = NULL;
    err = pi_stream_result_json(stream, &message);
    if (err) fail("pi_stream_result_json", err);
    printf("RESULT %s\n", message);
    pi_string_free(message);
    pi_stream_free(stream);
    pi_model_free(model);
    return 0;
}
