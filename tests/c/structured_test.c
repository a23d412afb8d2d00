/*
 * Typed answers through the C API: `structured_test BASE_URL` against replies the Rust harness
 * scripted on the mock server (openai-completions): a stream with `outputSchema` (object_delta
 * events), `pi_complete_structured_json` (a valid and an invalid answer, one calling a tool, a
 * list that travels wrapped), and an agent whose run ends in a value after one re-ask.
 */
#include "test_support.h"

#define SCHEMA                                                                             \
    "{\"name\":\"weather\",\"schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":" \
    "\"string\"},\"celsius\":{\"type\":\"number\"}},\"required\":[\"city\",\"celsius\"]}}"

static const char *CONTEXT =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\",\"timestamp\":0}]}";

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    char model_json[512];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"mock-gpt\",\"api\":\"openai-completions\",\"provider\":\"mock\","
             "\"baseUrl\":\"%s\"}",
             argv[1]);
    pi_model *model = NULL;
    OK(pi_model_from_json(model_json, &model));

    /* 1. A stream with an output schema carries the partial objects. */
    pi_stream *stream = NULL;
    OK(pi_stream_open(model, CONTEXT,
                      "{\"apiKey\":\"k\",\"maxRetries\":0,\"outputSchema\":" SCHEMA "}", &stream));
    int objects = 0, last_has_celsius = 0;
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        if (event.kind == PI_STREAM_EVENT_KIND_OBJECT_DELTA) {
            objects++;
            pi_str json = pi_stream_event_json(stream);
            CHECK(str_contains(json, "\"type\":\"object_delta\""));
            last_has_celsius = str_contains(json, "\"celsius\":21.5");
        }
    }
    CHECK(objects > 2);
    CHECK(last_has_celsius);
    pi_stream_free(stream);

    /* 2. One call that returns the validated value. */
    char *value = NULL, *message = NULL;
    OK(pi_complete_structured_json(model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}", SCHEMA,
                                   &value, &message));
    CHECK(strcmp(value, "{\"city\":\"Oslo\",\"celsius\":-3}") == 0);
    CHECK(strstr(message, "\"stopReason\":\"stop\"") != NULL);
    pi_string_free(value);
    pi_string_free(message);

    /* 3. An answer that does not validate: VALIDATION_FAILED with the report. */
    value = NULL;
    message = NULL;
    pi_error *err = pi_complete_structured_json(model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}",
                                                SCHEMA, &value, &message);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_VALIDATION_FAILED);
    CHECK(str_contains(pi_error_message(err), "must have required properties celsius"));
    pi_error_free(err);
    CHECK(value == NULL);
    CHECK(strstr(message, "\"errorKind\":\"invalid_output\"") != NULL);
    pi_string_free(message);

    /* 3b. An answer that calls a tool is no answer, whatever its text: VALIDATION_FAILED. */
    message = NULL;
    err = pi_complete_structured_json(model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}",
                                      SCHEMA, &value, &message);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_VALIDATION_FAILED);
    CHECK(str_contains(pi_error_message(err), "called tools (lookup)"));
    pi_error_free(err);
    CHECK(value == NULL);
    CHECK(strstr(message, "\"toolCall\"") != NULL);
    pi_string_free(message);

    /* 4. An agent whose run ends in a value: the first answer is re-asked. */
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", "{\"streamOptions\":{\"apiKey\":\"k\",\"maxRetries\":0}}", &agent));
    OK(pi_agent_set_output_schema_json(agent, SCHEMA, 1));
    pi_agent_run *run = NULL;
    OK(pi_agent_run_open(agent, "Weather?", &run));
    char *output = NULL;
    OK(pi_agent_run_output_json(run, &output));
    CHECK(strcmp(output, "{\"city\":\"Rome\",\"celsius\":30}") == 0);
    pi_string_free(output);
    char *messages = NULL;
    OK(pi_agent_run_result_json(run, &messages));
    CHECK(count(messages, "\"role\":\"assistant\"") == 2);
    pi_string_free(messages);
    pi_agent_run_free(run);

    /* Without a schema the output is null. */
    OK(pi_agent_set_output_schema_json(agent, NULL, 0));
    OK(pi_agent_run_open(agent, "Again?", &run));
    OK(pi_agent_run_output_json(run, &output));
    CHECK(strcmp(output, "null") == 0);
    pi_string_free(output);
    pi_agent_run_free(run);

    pi_agent_free(agent);

    /* 5. One toolChoice: mapped onto the API's form; an unknown spelling is refused. */
    pi_stream *bad = NULL;
    err = pi_stream_open(model, CONTEXT, "{\"toolChoice\":\"requird\"}", &bad);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_INVALID_JSON);
    CHECK(str_contains(pi_error_message(err), "unknown tool choice"));
    pi_error_free(err);
    CHECK(bad == NULL);
    const char *with_tools =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\",\"timestamp\":0}],"
        "\"tools\":[{\"name\":\"lookup\",\"description\":\"Looks it up\",\"parameters\":"
        "{\"type\":\"object\"}}]}";
    OK(pi_stream_open(model, with_tools,
                      "{\"apiKey\":\"k\",\"toolChoice\":{\"type\":\"tool\",\"name\":\"lookup\"}}",
                      &stream));
    while (pi_stream_next(stream, &event)) {
    }
    pi_stream_free(stream);

    /* 6. A list: sent wrapped as {"response": [...]}, the value is the list itself. */
    value = NULL;
    message = NULL;
    OK(pi_complete_structured_json(
        model, CONTEXT, "{\"apiKey\":\"k\",\"maxRetries\":0}",
        "{\"name\":\"cities\",\"schema\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}",
        &value, &message));
    CHECK(strcmp(value, "[\"Oslo\",\"Rome\"]") == 0);
    CHECK(strstr(message, "\"text\":\"[\\\"Oslo\\\", \\\"Rome\\\"]\"") != NULL);
    pi_string_free(value);
    pi_string_free(message);
    pi_model_free(model);
    printf("structured_test: ok\n");
    return 0;
}
