/*
 * C test of the AI-level parts of the pi-agent C API and its helpers, run by
 * ffi/tests/c_programs.rs (natively and under valgrind):
 *
 *   ffi_ai_test            offline, on the faux provider: stream vs stream_simple, the partial
 *                          message, provider options, faux factories and prompt-cache usage,
 *                          the helpers (cost, model equality, thinking levels, env keys,
 *                          transform_messages, validate_tool_call, parse_streaming_json) and
 *                          the sans-IO stepper driving one tool round trip
 *   ffi_ai_test mock URL   against the scripted mock server: on_payload / on_response on a
 *                          stream and on an agent, the get_api_key hook, and pi's proxy
 *
 * Exits 0 when every check passed; on the first failed check it prints it and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_CALL(id, name, args)                                                    \
    "{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":" args \
    "}"

static const char *HELLO_CONTEXT =
    "{\"systemPrompt\":\"Be brief.\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\","
    "\"timestamp\":0}]}";

/* Reads a stream to its end; returns the kind of the terminal event. */
static pi_stream_event_kind drain(pi_stream *stream) {
    pi_event event;
    pi_stream_event_kind last = PI_STREAM_EVENT_KIND_NONE;
    while (pi_stream_next(stream, &event)) last = event.kind;
    return last;
}

static char *result_json(pi_stream *stream) {
    char *json = NULL;
    OK(pi_stream_result_json(stream, &json));
    CHECK(json != NULL);
    return json;
}

/* ------------------------------------------------------------ faux factories */

typedef struct {
    atomic_int calls;
    char options[1024]; /* the options JSON of the last request */
    char context[1024]; /* its context JSON */
    int fail_with;      /* non-zero: return this code */
} factory_state;

static int32_t factory(void *user_data, pi_faux_request *request) {
    factory_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    pi_str options = pi_faux_request_options_json(request);
    pi_str context = pi_faux_request_context_json(request);
    snprintf(s->options, sizeof s->options, "%.*s", (int)options.len, options.data);
    snprintf(s->context, sizeof s->context, "%.*s", (int)context.len, context.data);
    CHECK(pi_faux_request_model(request) != NULL);
    CHECK(str_eq(pi_model_id(pi_faux_request_model(request)), "faux-1"));
    if (s->fail_with != 0) return s->fail_with;
    char text[64];
    snprintf(text, sizeof text, "{\"content\":\"call %zu\"}", pi_faux_request_call_number(request));
    OK(pi_faux_request_set_message_json(request, text));
    EXPECT_ERROR(pi_faux_request_set_message_json(request, "{\"role\":\"user\"}"),
                 PI_ERROR_KIND_INVALID_JSON);
    return 0;
}

static atomic_int factories_freed;
static void count_factory_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&factories_freed, 1);
}

/* pi's split: stream sends what the options say; stream_simple maps reasoning and caps
 * maxTokens at min(model maxTokens, 32000) (16384 for a faux model). */
static void test_stream_and_stream_simple(void) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_model(faux, &model));
    static factory_state state;
    OK(pi_faux_push_factory(faux, factory, &state, count_factory_free));
    OK(pi_faux_push_factory(faux, factory, &state, count_factory_free));
    EXPECT_ERROR(pi_faux_push_factory(faux, NULL, NULL, NULL), PI_ERROR_KIND_NULL_ARGUMENT);

    /* Provider keys pass through core's StreamOptions as they are. */
    const char *provider_options =
        "{\"reasoningEffort\":\"high\",\"thinkingEnabled\":true,\"thinkingBudgetTokens\":2048,"
        "\"thinking\":{\"enabled\":true,\"budgetTokens\":1024},\"promptMode\":\"reasoning\","
        "\"serviceTier\":\"flex\",\"azureDeploymentName\":\"d\",\"region\":\"eu-west-1\","
        "\"reasoning\":\"low\"}";
    pi_stream *stream = NULL;
    OK(pi_stream_open(model, HELLO_CONTEXT, provider_options, &stream));
    CHECK(drain(stream) == PI_STREAM_EVENT_KIND_DONE);
    char *json = result_json(stream);
    CHECK(strstr(json, "\"text\":\"call 1\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    CHECK(strstr(state.options, "\"reasoningEffort\":\"high\"") != NULL);
    CHECK(strstr(state.options, "\"promptMode\":\"reasoning\"") != NULL);
    CHECK(strstr(state.options, "\"region\":\"eu-west-1\"") != NULL);
    CHECK(strstr(state.options, "\"maxTokens\"") == NULL);
    CHECK(strstr(state.context, "\"systemPrompt\":\"Be brief.\"") != NULL);

    OK(pi_stream_open_simple(model, HELLO_CONTEXT, "{\"reasoning\":\"off\"}", &stream));
    CHECK(drain(stream) == PI_STREAM_EVENT_KIND_DONE);
    json = result_json(stream);
    CHECK(strstr(json, "\"text\":\"call 2\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    CHECK(strstr(state.options, "\"maxTokens\":16384") != NULL);
    CHECK(atomic_load(&state.calls) == 2);
    CHECK(wait_equals(&factories_freed, 2)); /* each factory is released once used */

    /* A failing factory ends the stream with an error, as pi's throwing factory does. */
    state.fail_with = 7;
    OK(pi_faux_push_factory(faux, factory, &state, count_factory_free));
    OK(pi_stream_open(model, HELLO_CONTEXT, NULL, &stream));
    CHECK(drain(stream) == PI_STREAM_EVENT_KIND_ERROR);
    json = result_json(stream);
    CHECK(strstr(json, "faux factory returned error code 7") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    state.fail_with = 0;

    /* Unused factories are released with the provider. */
    OK(pi_faux_push_factory(faux, factory, &state, count_factory_free));
    pi_model_free(model);
    pi_faux_free(faux);
    CHECK(wait_equals(&factories_freed, 4));
}

/* The partial message on demand: exactly the events read so far. */
static void test_partial(void) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "{\"content\":\"The quick brown fox jumps over the lazy dog.\"}"));
    OK(pi_faux_model(faux, &model));
    pi_stream *stream = NULL;
    OK(pi_stream_open(model, HELLO_CONTEXT, NULL, &stream));
    char *partial = NULL;
    OK(pi_stream_partial_json(stream, &partial));
    CHECK(strstr(partial, "\"role\":\"assistant\"") != NULL);
    CHECK(strstr(partial, "quick") == NULL);
    pi_string_free(partial);
    pi_event event;
    char text[256] = "";
    bool checked = false;
    while (pi_stream_next(stream, &event)) {
        if (event.kind != PI_STREAM_EVENT_KIND_TEXT_DELTA) continue;
        strncat(text, event.delta.data, event.delta.len);
        if (!checked) {
            OK(pi_stream_partial_json(stream, &partial));
            char expected[300];
            snprintf(expected, sizeof expected, "\"text\":\"%s\"", text);
            CHECK(strstr(partial, expected) != NULL);
            pi_string_free(partial);
            checked = true;
        }
    }
    CHECK(checked);
    OK(pi_stream_partial_json(stream, &partial));
    char *final = result_json(stream);
    CHECK(strstr(partial, "\"text\":\"The quick brown fox jumps over the lazy dog.\"") != NULL);
    CHECK(strstr(final, "\"stopReason\":\"stop\"") != NULL);
    pi_string_free(partial);
    pi_string_free(final);
    EXPECT_ERROR(pi_stream_partial_json(NULL, &partial), PI_ERROR_KIND_NULL_ARGUMENT);
    pi_stream_free(stream);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* pi's faux prompt-cache simulation: with a session id, the prompt prefix of the session's
 * previous request counts as cache reads. */
static void test_prompt_cache(void) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new_with_options("{\"models\":[\"faux-1\"],\"tokenSize\":{\"min\":2,\"max\":4}}",
                                &faux));
    OK(pi_faux_push_json(faux, "[{\"content\":\"First answer.\"},{\"content\":\"Second.\"}]"));
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "You are a test.", "{\"streamOptions\":{\"sessionId\":\"s-1\"}}",
                    &agent));
    OK(pi_agent_prompt(agent, "A first question that is long enough to be cached."));
    OK(pi_agent_prompt(agent, "And a second one."));
    char *json = messages_json(agent);
    /* First answer: nothing cached yet; second: the shared prefix is read from the cache. */
    const char *first = strstr(json, "First answer.");
    const char *second = strstr(json, "Second.");
    CHECK(first != NULL && second != NULL);
    const char *first_usage = strstr(first, "\"cacheRead\":");
    const char *second_usage = strstr(second, "\"cacheRead\":");
    CHECK(first_usage != NULL && second_usage != NULL);
    CHECK(strncmp(first_usage, "\"cacheRead\":0,", 14) == 0);
    CHECK(atoi(second_usage + strlen("\"cacheRead\":")) > 0);
    pi_string_free(json);
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* ------------------------------------------------------------ helpers */

static const char *NORMALIZED = "call_renamed";
static const char *normalize(void *user_data, pi_str id) {
    atomic_int *calls = user_data;
    atomic_fetch_add(calls, 1);
    return str_eq(id, "toolu_1|with|bars") ? NORMALIZED : NULL;
}

static void test_helpers(void) {
    pi_model *model = NULL;
    OK(pi_model_from_json("{\"id\":\"m\",\"api\":\"openai-completions\",\"provider\":\"p\","
                          "\"baseUrl\":\"http://x\",\"reasoning\":true,"
                          "\"cost\":{\"input\":2,\"output\":8,\"cacheRead\":0.5,\"cacheWrite\":1}}",
                          &model));
    char *json = NULL;
    OK(pi_model_calculate_cost(model, "{\"input\":1000000,\"output\":500000,\"cacheRead\":2000000}",
                               &json));
    CHECK(strstr(json, "\"input\":2.0") != NULL);
    CHECK(strstr(json, "\"output\":4.0") != NULL);
    CHECK(strstr(json, "\"cacheRead\":1.0") != NULL);
    CHECK(strstr(json, "\"total\":7.0") != NULL);
    pi_string_free(json);
    EXPECT_ERROR(pi_model_calculate_cost(model, "{\"input\":\"many\"}", &json),
                 PI_ERROR_KIND_INVALID_JSON);

    /* pi's modelsAreEqual: same id and provider. */
    pi_model *same = NULL, *other = NULL;
    OK(pi_model_from_json("{\"id\":\"m\",\"api\":\"anthropic-messages\",\"provider\":\"p\","
                          "\"baseUrl\":\"http://y\"}",
                          &same));
    OK(pi_model_from_json("{\"id\":\"m\",\"api\":\"openai-completions\",\"provider\":\"q\","
                          "\"baseUrl\":\"http://x\"}",
                          &other));
    CHECK(pi_models_are_equal(model, same));
    CHECK(!pi_models_are_equal(model, other));
    CHECK(!pi_models_are_equal(model, NULL));
    CHECK(!pi_models_are_equal(NULL, NULL));

    /* Thinking levels: a reasoning model without xhigh clamps it down; one without reasoning
     * supports only "off". */
    pi_str level;
    OK(pi_model_clamp_thinking_level(model, "xhigh", &level));
    CHECK(str_eq(level, "high"));
    OK(pi_model_clamp_thinking_level(model, "off", &level));
    CHECK(str_eq(level, "off"));
    OK(pi_model_clamp_thinking_level(same, "high", &level));
    CHECK(str_eq(level, "off"));
    EXPECT_ERROR(pi_model_clamp_thinking_level(model, "max", &level),
                 PI_ERROR_KIND_INVALID_ARGUMENT);
    OK(pi_model_supported_thinking_levels_json(model, &json));
    CHECK(strcmp(json, "[\"off\",\"minimal\",\"low\",\"medium\",\"high\"]") == 0);
    pi_string_free(json);

    /* Environment keys: names, presence, and the value only when asked for. */
    OK(pi_env_key_names_json("anthropic", &json));
    CHECK(strcmp(json, "[\"ANTHROPIC_OAUTH_TOKEN\",\"ANTHROPIC_API_KEY\"]") == 0);
    pi_string_free(json);
    OK(pi_env_key_names_json("nobody", &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);
    unsetenv("GROQ_API_KEY");
    OK(pi_find_env_keys_json("groq", &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);
    char *key = (char *)"untouched";
    OK(pi_get_env_api_key("groq", &key));
    CHECK(key == NULL);
    setenv("GROQ_API_KEY", "gsk-test-secret", 1);
    OK(pi_find_env_keys_json("groq", &json));
    CHECK(strcmp(json, "[\"GROQ_API_KEY\"]") == 0);
    CHECK(strstr(json, "gsk-test") == NULL);
    pi_string_free(json);
    OK(pi_get_env_api_key("groq", &key));
    CHECK(key != NULL && strcmp(key, "gsk-test-secret") == 0);
    pi_string_free(key);
    unsetenv("GROQ_API_KEY");

    /* transform_messages: tool-call ids renamed for the target, results follow, and a call
     * without a result gets pi's error result. */
    const char *transcript =
        "[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},"
        TOOL_CALL("toolu_1|with|bars", "calc", "{}") "," TOOL_CALL("toolu_2", "calc", "{}")
        "],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude\","
        "\"stopReason\":\"toolUse\",\"timestamp\":1},"
        "{\"role\":\"toolResult\",\"toolCallId\":\"toolu_1|with|bars\",\"toolName\":\"calc\","
        "\"content\":[{\"type\":\"text\",\"text\":\"42\"}],\"isError\":false,\"timestamp\":2}]";
    static atomic_int renames;
    OK(pi_transform_messages_json(transcript, model, normalize, &renames, &json));
    CHECK(atomic_load(&renames) >= 1);
    CHECK(strstr(json, "toolu_1|with|bars") == NULL);
    CHECK(count(json, "\"call_renamed\"") == 2);
    CHECK(strstr(json, "No result provided") != NULL);
    CHECK(strstr(json, "\"thinking\":\"hmm\"") == NULL); /* another model's thinking: text */
    pi_string_free(json);
    OK(pi_transform_messages_json(transcript, model, NULL, NULL, &json));
    CHECK(strstr(json, "toolu_1|with|bars") != NULL);
    pi_string_free(json);
    EXPECT_ERROR(pi_transform_messages_json("[{\"role\":\"moderator\"}]", model, NULL, NULL, &json),
                 PI_ERROR_KIND_INVALID_JSON);

    /* validate_tool_call: coercion, unknown tool, pi's validation report. */
    const char *tools = "[{\"name\":\"calc\",\"description\":\"d\",\"parameters\":{\"type\":"
                        "\"object\",\"properties\":{\"a\":{\"type\":\"number\"}},\"required\":"
                        "[\"a\"]}}]";
    OK(pi_validate_tool_call(tools, TOOL_CALL("c1", "calc", "{\"a\":\"5\"}"), &json));
    CHECK(strcmp(json, "{\"a\":5}") == 0);
    pi_string_free(json);
    expect_error(pi_validate_tool_call(tools, TOOL_CALL("c1", "nope", "{}"), &json),
                 PI_ERROR_KIND_NOT_FOUND, "Tool \"nope\" not found", __LINE__);
    pi_error *err = pi_validate_tool_call(tools, TOOL_CALL("c1", "calc", "{}"), &json);
    CHECK(pi_error_get_kind(err) == PI_ERROR_KIND_VALIDATION_FAILED);
    CHECK(str_contains(pi_error_message(err), "Validation failed for tool \"calc\""));
    pi_error_free(err);

    /* parse_streaming_json: incomplete JSON completed as far as it goes. */
    OK(pi_parse_streaming_json("{\"a\":1,\"b\":\"te", &json));
    CHECK(strcmp(json, "{\"a\":1,\"b\":\"te\"}") == 0);
    pi_string_free(json);
    OK(pi_parse_streaming_json("", &json));
    CHECK(strcmp(json, "{}") == 0);
    pi_string_free(json);

    pi_model_free(model);
    pi_model_free(same);
    pi_model_free(other);
}

/* ------------------------------------------------------------ stepper */

/* The action type of a step. */
static int action_is(const char *step, const char *type) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"action\":{\"type\":\"%s\"", type);
    return strstr(step, pattern) != NULL;
}

static char *resume(pi_agent_stepper *stepper, const char *input) {
    char *step = NULL;
    OK(pi_agent_stepper_resume(stepper, input, &step));
    CHECK(step != NULL);
    return step;
}

/* A C host drives its own loop: one tool round trip, with a save and restore in the middle. */
static void test_stepper(void) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "[{\"content\":[" TOOL_CALL("c1", "echo", "{\"x\":1}") "]},"
                               "{\"content\":\"All done.\"}]"));
    OK(pi_faux_model(faux, &model));

    pi_agent_stepper *stepper = NULL;
    char *step = NULL;
    EXPECT_ERROR(pi_agent_stepper_start(NULL, "sys", "[]", "{\"type\":\"sideways\"}", &stepper,
                                        &step),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_agent_stepper_start("{\"toolExecution\":\"parallel\"}", "Be brief.", "[]",
                              "{\"type\":\"prompt\",\"prompts\":[{\"role\":\"user\",\"content\":"
                              "\"Echo something.\",\"timestamp\":0}]}",
                              &stepper, &step));
    CHECK(str_eq(pi_agent_stepper_system_prompt(stepper), "Be brief."));
    CHECK(in_order(step, "\"agent_start\"", "\"turn_start\""));
    CHECK(in_order(step, "\"message_start\"", "Echo something."));
    CHECK(action_is(step, "poll_steering"));
    pi_string_free(step);

    /* A wrong answer is refused and changes nothing. */
    pi_error *err = pi_agent_stepper_resume(stepper, "{\"type\":\"should_stop\",\"stop\":true}",
                                            &step);
    CHECK(pi_error_get_kind(err) == PI_ERROR_KIND_INVALID_ARGUMENT);
    CHECK(str_contains(pi_error_message(err), "does not answer the pending action"));
    pi_error_free(err);

    int model_calls = 0, tool_batches = 0, polls = 0;
    step = resume(stepper, "{\"type\":\"steering\",\"messages\":[]}");
    while (!action_is(step, "finished")) {
        if (action_is(step, "call_model")) {
            model_calls++;
            char *messages = NULL;
            OK(pi_agent_stepper_messages_json(stepper, &messages));
            size_t size = strlen(messages) + 128;
            char *context = malloc(size);
            snprintf(context, size, "{\"systemPrompt\":\"%.*s\",\"messages\":%s}",
                     (int)pi_agent_stepper_system_prompt(stepper).len,
                     pi_agent_stepper_system_prompt(stepper).data, messages);
            pi_string_free(messages);
            pi_stream *stream = NULL;
            OK(pi_stream_open_simple(model, context, NULL, &stream));
            free(context);
            char *message = result_json(stream);
            pi_stream_free(stream);
            size = strlen(message) + 128;
            char *input = malloc(size);
            snprintf(input, size, "{\"type\":\"model_result\",\"message\":%s,\"startEmitted\":false}",
                     message);
            pi_string_free(message);
            pi_string_free(step);
            step = resume(stepper, input);
            free(input);
        } else if (action_is(step, "execute_tools")) {
            tool_batches++;
            CHECK(strstr(step, "\"toolCalls\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"echo\"") !=
                  NULL);
            CHECK(strstr(step, "\"mode\":\"parallel\"") != NULL);
            /* Stored while the tool "runs", restored in a new stepper. */
            char *state = NULL;
            OK(pi_agent_stepper_state_json(stepper, &state));
            pi_agent_stepper_free(stepper);
            stepper = NULL;
            OK(pi_agent_stepper_from_state_json(state, &stepper));
            pi_string_free(state);
            pi_string_free(step);
            step = resume(stepper,
                          "{\"type\":\"tool_results\",\"outcomes\":[{\"message\":{\"role\":"
                          "\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"echo\",\"content\":"
                          "[{\"type\":\"text\",\"text\":\"echoed 1\"}],\"isError\":false,"
                          "\"timestamp\":0}}]}");
            CHECK(in_order(step, "\"message_end\"", "echoed 1"));
            CHECK(strstr(step, "\"turn_end\"") != NULL);
        } else if (action_is(step, "poll_steering")) {
            polls++;
            pi_string_free(step);
            step = resume(stepper, "{\"type\":\"steering\",\"messages\":[]}");
        } else if (action_is(step, "poll_follow_up")) {
            polls++;
            pi_string_free(step);
            step = resume(stepper, "{\"type\":\"follow_up\",\"messages\":[]}");
        } else {
            fprintf(stderr, "unexpected step: %s\n", step);
            exit(1);
        }
        CHECK(model_calls <= 2 && polls <= 4);
    }
    CHECK(model_calls == 2 && tool_batches == 1);
    CHECK(pi_agent_stepper_is_finished(stepper));
    CHECK(strstr(step, "\"agent_end\"") != NULL);
    CHECK(in_order(step, "\"newMessages\"", "All done."));
    pi_string_free(step);
    char *messages = NULL;
    OK(pi_agent_stepper_messages_json(stepper, &messages));
    CHECK(in_order(messages, "Echo something.", "echoed 1"));
    CHECK(in_order(messages, "echoed 1", "All done."));
    pi_string_free(messages);
    pi_agent_stepper_abort(stepper);
    pi_agent_stepper_free(stepper);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* ------------------------------------------------------------ mock server: callbacks */

typedef struct {
    atomic_int payloads;
    atomic_int responses;
    atomic_int last_status;
    atomic_int saw_content_type;
} callback_state;

/* Replaces the request body: the same body with max_tokens 77. */
static void on_payload(void *user_data, pi_on_payload *payload) {
    callback_state *s = user_data;
    atomic_fetch_add(&s->payloads, 1);
    pi_str body = pi_on_payload_json(payload);
    CHECK(str_contains(body, "\"messages\""));
    CHECK(str_eq(pi_model_id(pi_on_payload_model(payload)), "mock-model"));
    /* Rewrite the JSON object: append a key before the closing brace. */
    char *replaced = malloc(body.len + 32);
    memcpy(replaced, body.data, body.len - 1);
    strcpy(replaced + body.len - 1, ",\"user\":\"c-on-payload\"}");
    OK(pi_on_payload_set_json(payload, replaced));
    free(replaced);
    EXPECT_ERROR(pi_on_payload_set_json(payload, "{bad"), PI_ERROR_KIND_INVALID_JSON);
}

static void on_response(void *user_data, uint16_t status, pi_str headers_json,
                        const pi_model *model) {
    callback_state *s = user_data;
    atomic_fetch_add(&s->responses, 1);
    atomic_store(&s->last_status, status);
    if (str_contains(headers_json, "\"content-type\":\"text/event-stream")) {
        atomic_store(&s->saw_content_type, 1);
    }
    CHECK(str_eq(pi_model_id(model), "mock-model"));
}

static atomic_int callbacks_freed;
static void count_callback_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&callbacks_freed, 1);
}

typedef struct {
    atomic_int calls;
    char provider[32];
} key_state;

static int32_t get_api_key(void *user_data, pi_get_api_key *context) {
    key_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    pi_str provider = pi_get_api_key_provider(context);
    snprintf(s->provider, sizeof s->provider, "%.*s", (int)provider.len, provider.data);
    OK(pi_get_api_key_set_api_key(context, "hook-key"));
    return 0;
}

/* pi_release_memory hands freed memory back (glibc's malloc_trim): 8 MiB freed under a live
 * block, which the allocator cannot trim from the top of its heap by itself, is returned. The
 * library keeps working after (the agent below streams again). */
static void release_memory_returns_what_was_freed(void) {
    enum { BLOCKS = 1024 };
    static char *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(8192);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], 1, 8192);
    }
    char *guard = malloc(64);
    CHECK(guard != NULL);
    for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
#ifdef __GLIBC__
    CHECK(pi_release_memory());
#else
    (void)pi_release_memory();
#endif
    free(guard);
}

static void test_mock(const char *base_url) {
    char model_json[512];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"mock-model\",\"api\":\"openai-completions\",\"provider\":\"mock\","
             "\"baseUrl\":\"%s\"}",
             base_url);
    pi_model *model = NULL;
    OK(pi_model_from_json(model_json, &model));

    /* 1. A stream with both callbacks. */
    static callback_state state;
    pi_stream_options *options = NULL;
    EXPECT_ERROR(pi_stream_options_from_json("{\"apiKye\":\"x\"}", &options),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_stream_options_from_json("{\"apiKey\":\"test-key\",\"maxRetries\":0}", &options));
    OK(pi_stream_options_set_on_payload(options, on_payload, &state, count_callback_free));
    OK(pi_stream_options_set_on_response(options, on_response, &state, count_callback_free));
    pi_stream *stream = NULL;
    OK(pi_stream_open_with_options(model, HELLO_CONTEXT, options, false, &stream));
    CHECK(drain(stream) == PI_STREAM_EVENT_KIND_DONE);
    char *json = result_json(stream);
    CHECK(strstr(json, "Hello from the mock") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    release_memory_returns_what_was_freed();
    CHECK(atomic_load(&state.payloads) == 1);
    CHECK(atomic_load(&state.responses) == 1);
    CHECK(atomic_load(&state.last_status) == 200);
    CHECK(atomic_load(&state.saw_content_type) == 1);

    /* 2. An agent with the same options (copied) and a get_api_key hook. */
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_agent_set_stream_options(agent, options));
    pi_stream_options_free(options); /* the agent and nobody else keeps the callbacks now */
    static key_state keys;
    OK(pi_agent_set_get_api_key(agent, get_api_key, &keys, NULL));
    OK(pi_agent_prompt(agent, "Hi agent"));
    CHECK(atomic_load(&keys.calls) == 1);
    CHECK(strcmp(keys.provider, "mock") == 0);
    CHECK(atomic_load(&state.payloads) == 2);
    CHECK(atomic_load(&state.responses) == 2);
    json = messages_json(agent);
    CHECK(strstr(json, "Agent reply from the mock") != NULL);
    pi_string_free(json);
    CHECK(atomic_load(&callbacks_freed) == 0);
    pi_agent_free(agent);
    CHECK(wait_equals(&callbacks_freed, 2));

    /* 3. Through a pi proxy server (pi's streamProxy): a stream, then an agent. */
    OK(pi_stream_open_proxy(model, HELLO_CONTEXT, NULL, base_url, "app-token", &stream));
    CHECK(drain(stream) == PI_STREAM_EVENT_KIND_DONE);
    json = result_json(stream);
    CHECK(strstr(json, "\"text\":\"Proxied hello\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    EXPECT_ERROR(pi_stream_open_proxy(model, HELLO_CONTEXT, NULL, NULL, NULL, &stream),
                 PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_agent_set_proxy_stream_fn(agent, base_url, "app-token"));
    OK(pi_agent_prompt(agent, "Via the proxy"));
    json = messages_json(agent);
    CHECK(in_order(json, "Via the proxy", "Proxied hello"));
    pi_string_free(json);
    OK(pi_agent_set_proxy_stream_fn(agent, NULL, NULL)); /* back to streamSimple */
    pi_agent_free(agent);
    pi_model_free(model);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "mock") == 0) {
        test_mock(argv[2]);
        printf("ffi_ai_test mock: ok\n");
        return 0;
    }
    test_stream_and_stream_simple();
    test_partial();
    test_prompt_cache();
    test_helpers();
    test_stepper();
    printf("ffi_ai_test: ok\n");
    return 0;
}
