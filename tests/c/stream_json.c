/*
 * One request through the C pull stream, written out as JSON for a harness to compare:
 * `stream_json MODEL_JSON CONTEXT_JSON OPTIONS_JSON stream|simple` opens the stream with
 * `pi_stream_open` (or `pi_stream_open_simple`), and prints one line per event,
 *
 *     event KIND CONTENT_INDEX DELTA_BYTES EVENT_JSON
 *
 * with the fields of `pi_event` and the event's JSON from `pi_stream_event_json`, then
 *
 *     result MESSAGE_JSON
 *
 * from `pi_stream_result_json`. The JSON is the library's, byte for byte (it has no newlines:
 * serde escapes them in strings). Credentials come from the environment the harness sets.
 */
#include "test_support.h"

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[4], "stream") != 0 && strcmp(argv[4], "simple") != 0)) {
        fprintf(stderr, "usage: %s MODEL_JSON CONTEXT_JSON OPTIONS_JSON stream|simple\n", argv[0]);
        return 2;
    }
    pi_model *model = NULL;
    OK(pi_model_from_json(argv[1], &model));
    pi_stream *stream = NULL;
    if (strcmp(argv[4], "simple") == 0) {
        OK(pi_stream_open_simple(model, argv[2], argv[3], &stream));
    } else {
        OK(pi_stream_open(model, argv[2], argv[3], &stream));
    }
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        pi_str json = pi_stream_event_json(stream);
        CHECK(json.len > 0);
        printf("event %u %zu %zu %.*s\n", (unsigned)event.kind, event.content_index, event.delta.len,
               (int)json.len, json.data);
    }
    char *message = NULL;
    OK(pi_stream_result_json(stream, &message));
    printf("result %s\n", message);
    pi_string_free(message);
    pi_stream_free(stream);
    pi_model_free(model);
    return 0;
}
