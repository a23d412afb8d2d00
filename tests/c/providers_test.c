/*
 * Every wire API through the C pull stream: `providers_test MODEL_JSON` streams one reply that
 * the Rust harness scripted on the mock server (a recorded-style Anthropic, Responses or Gemini
 * body), reads text deltas without parsing JSON, and checks the final message.
 */
#include "pi_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, pi_error *err) {
    pi_str message = pi_error_message(err);
    fprintf(stderr, "%s: %.*s\n", what, (int)message.len, message.data);
    pi_error_free(err);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_JSON\n", argv[0]);
        return 2;
    }
    pi_model *model = NULL;
    pi_error *err = pi_model_from_json(argv[1], &model);
    if (err) fail("pi_model_from_json", err);

    const char *context =
        "{\"systemPrompt\":\"Use the calculator.\",\"messages\":[{\"role\":\"user\","
        "\"content\":\"What is 6 * 7?\",\"timestamp\":0}],\"tools\":[{\"name\":\"calculator\","
        "\"description\":\"Evaluates arithmetic\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"expression\":{\"type\":\"string\"}}}}]}";
    pi_stream *stream = NULL;
    err = pi_stream_open(model, context, "{\"apiKey\":\"test-key\",\"maxRetries\":0}", &stream);
    if (err) fail("pi_stream_open", err);

    size_t events = 0, text_bytes = 0, tool_ends = 0;
    int done = 0;
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        events++;
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) text_bytes += event.delta.len;
        if (event.kind == PI_STREAM_EVENT_KIND_TOOLCALL_END) tool_ends++;
        if (event.kind == PI_STREAM_EVENT_KIND_DONE) done = 1;
    }
    char *message = NULL;
    err = pi_stream_result_json(stream, &message);
    if (err) fail("pi_stream_result_json", err);
    int ok = done && text_bytes > 0 && tool_ends == 1 &&
             strstr(message, "\"stopReason\":\"toolUse\"") != NULL &&
             strstr(message, "\"type\":\"thinking\"") != NULL;
    if (!ok) {
        fprintf(stderr, "unexpected stream: done=%d text=%zu tool_ends=%zu\n%s\n", done, text_bytes,
                tool_ends, message);
    }
    printf("providers_test: %zu events, %zu text bytes\n", events, text_bytes);
    pi_string_free(message);
    pi_stream_free(stream);
    pi_model_free(model);
    return ok ? 0 : 1;
}
